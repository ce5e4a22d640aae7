//! Handlers, one file per area. Every handler authenticates with
//! [`crate::api::auth::Auth`] and calls the [`crate::Engine`] (or
//! `Engine::build_context`, which is built on it); nothing here touches a
//! backend directly.

pub mod chat;
pub mod context;
pub mod evals;
pub mod export;
pub mod inspect;
pub mod memories;
pub mod ops;
pub mod reference;
pub mod review;
pub mod search;
pub mod threads;
pub mod users;
