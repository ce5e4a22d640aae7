//! Handlers, one file per area. Every handler authenticates with
//! [`crate::api::auth::Auth`] and calls the [`crate::Engine`]; nothing here
//! touches a backend directly.

pub mod memories;
pub mod ops;
pub mod pending;
pub mod search;
