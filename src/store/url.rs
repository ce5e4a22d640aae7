//! Where the store lives: `--database-url` (`postgres://…` or
//! `sqlite://PATH`), else SQLite `mnemo.db` in the data directory.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::store::postgres::PgStore;
use crate::store::sqlite::SqliteStore;
use crate::store::MemoryStore;

/// Where the store lives, parsed from `--database-url`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreUrl {
    Postgres(String),
    Sqlite(PathBuf),
}

impl StoreUrl {
    /// The store a data directory and an optional `--database-url` name.
    pub fn resolve(data_dir: &Path, database_url: Option<&str>) -> Result<Self> {
        match database_url {
            Some(url) => Self::parse(url),
            None => Ok(StoreUrl::Sqlite(data_dir.join(DATABASE_FILE))),
        }
    }

    /// `postgres://…` or `postgresql://…`, or `sqlite://PATH`.
    pub fn parse(url: &str) -> Result<Self> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Ok(StoreUrl::Postgres(url.to_string()))
        } else if let Some(path) = url.strip_prefix("sqlite://") {
            if path.is_empty() {
                return Err(Error::Config {
                    key: "database_url".into(),
                    message: "sqlite:// needs a file path, e.g. sqlite://./data/mnemo.db".into(),
                });
            }
            Ok(StoreUrl::Sqlite(PathBuf::from(path)))
        } else {
            Err(Error::Config {
                key: "database_url".into(),
                message:
                    "expected a postgres://user:password@host:port/database or sqlite://PATH URL"
                        .into(),
            })
        }
    }

    /// The URL's backend, for logs (never the URL: it may hold a password).
    pub fn backend(&self) -> &'static str {
        match self {
            StoreUrl::Postgres(_) => "postgres",
            StoreUrl::Sqlite(_) => "sqlite",
        }
    }

    pub async fn open(&self, pool_size: u32) -> Result<Arc<dyn MemoryStore>> {
        Ok(match self {
            StoreUrl::Postgres(url) => Arc::new(PgStore::open(url, pool_size).await?),
            StoreUrl::Sqlite(path) => Arc::new(SqliteStore::open(path).await?),
        })
    }
}

/// The SQLite file's name inside the data directory.
pub const DATABASE_FILE: &str = "mnemo.db";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_urls_select_the_backend() {
        assert_eq!(
            StoreUrl::parse("postgres://u:p@h:5432/db").unwrap(),
            StoreUrl::Postgres("postgres://u:p@h:5432/db".into())
        );
        assert_eq!(
            StoreUrl::parse("postgresql://h/db").unwrap().backend(),
            "postgres"
        );
        assert_eq!(
            StoreUrl::parse("sqlite://./data/mnemo.db").unwrap(),
            StoreUrl::Sqlite("./data/mnemo.db".into())
        );
        for bad in ["sqlite://", "mysql://h/db", "./data/mnemo.db", ""] {
            assert!(StoreUrl::parse(bad).is_err(), "{bad}");
        }
    }
}
