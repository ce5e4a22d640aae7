//! The store layer's errors: what sqlx (the database, the pool, the
//! migrations) or SQLite's direct reader (rusqlite) said, kept as the
//! [`source`](std::error::Error::source).
//! Refusals the caller caused (unique keys, values the database rejects)
//! are mapped to user errors where they happen (`store/sql/`), not here.

/// A failure of the store. Internal to clients (a generic 500); logged with
/// its whole chain.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database operation failed")]
    Sqlx(#[from] sqlx::Error),
    #[error("database read failed")]
    Direct(#[from] rusqlite::Error),
    #[error("schema migration failed")]
    Migrate(#[from] sqlx::migrate::MigrateError),
}
