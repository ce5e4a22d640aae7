//! The store's methods, one file per concern, compiled once per dialect:
//! `sqlite.rs` and `postgres.rs` each include this module (`#[path]`) after
//! naming their sqlx database `D`. Inside, `D` is a concrete database, so the
//! code is plain sqlx, and `D::…` reaches the [`Dialect`](super::Dialect).

use super::D;

mod cache;
mod copy;
mod erasure;
mod feed;
mod jobs;
mod keys;
mod memories;
mod rows;
mod threads;
