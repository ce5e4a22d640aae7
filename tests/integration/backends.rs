//! The store backends the tests run on: SQLite in a temporary directory, and
//! PostgreSQL in a schema of its own per test (so tests run in parallel on
//! one database and leave nothing behind).
//!
//! The PostgreSQL database comes from `MNEMO_TEST_DATABASE_URL`. Without it
//! the PostgreSQL tests fail (they never skip): `make test` starts a local
//! PostgreSQL with `scripts/test-postgres.sh` and sets the variable.

use std::str::FromStr;
use std::sync::Arc;

use mnemo::store::postgres::PgStore;
use mnemo::store::sqlite::SqliteStore;
use mnemo::store::MemoryStore;
use sqlx::postgres::PgConnectOptions;
use sqlx::Connection;

pub const PG_URL_VAR: &str = "MNEMO_TEST_DATABASE_URL";

/// The test database's URL, or a failure that says how to get one.
pub fn pg_url() -> String {
    std::env::var(PG_URL_VAR).unwrap_or_else(|_| {
        panic!(
            "{PG_URL_VAR} is not set, and the PostgreSQL store tests need it. \
             Run `make test` (it starts PostgreSQL and sets it), or \
             `export {PG_URL_VAR}=$(scripts/test-postgres.sh)` and run cargo again; \
             any database where the user may create schemas works, e.g. \
             {PG_URL_VAR}=postgres://mnemo:mnemo@127.0.0.1:5432/mnemo_test"
        )
    })
}

/// A store under test and what it lives in (removed on drop, even when the
/// test fails).
pub struct Backend {
    pub store: Arc<dyn MemoryStore>,
    place: Place,
}

enum Place {
    Sqlite(tempfile::TempDir),
    Postgres(PgSchema),
}

impl Backend {
    pub async fn sqlite() -> Backend {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("mnemo.db"))
            .await
            .expect("SQLite store opens");
        Backend {
            store: Arc::new(store),
            place: Place::Sqlite(dir),
        }
    }

    pub async fn postgres() -> Backend {
        let schema = PgSchema::create().await;
        let store = schema.connect().await;
        Backend {
            store: Arc::new(store),
            place: Place::Postgres(schema),
        }
    }

    /// Whether this is the SQLite store (which reads on the calling thread
    /// too, `Memories::get_many_here`).
    pub fn is_sqlite(&self) -> bool {
        matches!(self.place, Place::Sqlite(_))
    }

    /// Another store on the same data with its own connections: a second
    /// node of a cluster (for SQLite, a second process on the same file).
    pub async fn second_node(&self) -> Arc<dyn MemoryStore> {
        match &self.place {
            Place::Sqlite(dir) => Arc::new(
                SqliteStore::open(&dir.path().join("mnemo.db"))
                    .await
                    .unwrap(),
            ),
            Place::Postgres(schema) => Arc::new(schema.connect().await),
        }
    }
}

/// A uniquely named schema in the test database, dropped with its tables
/// when this goes out of scope.
pub struct PgSchema {
    url: String,
    pub name: String,
}

impl PgSchema {
    pub async fn create() -> PgSchema {
        let url = pg_url();
        let name = format!("t_{}", uuid::Uuid::new_v4().simple());
        let mut conn = sqlx::PgConnection::connect(&url)
            .await
            .unwrap_or_else(|e| {
                panic!("cannot connect to {PG_URL_VAR} (is PostgreSQL running? `scripts/test-postgres.sh` starts it): {e}")
            });
        sqlx::query(&format!("CREATE SCHEMA {name}"))
            .execute(&mut conn)
            .await
            .unwrap();
        conn.close().await.ok();
        PgSchema { url, name }
    }

    /// Connection options whose `search_path` is this schema only.
    pub fn options(&self) -> PgConnectOptions {
        PgConnectOptions::from_str(&self.url)
            .unwrap()
            .options([("search_path", self.name.as_str())])
    }

    /// A `postgres://` URL for this schema (for code that takes a URL).
    pub fn url(&self) -> String {
        let sep = if self.url.contains('?') { '&' } else { '?' };
        format!("{}{sep}options=-c%20search_path%3D{}", self.url, self.name)
    }

    pub async fn connect(&self) -> PgStore {
        PgStore::connect_with(self.options(), 4)
            .await
            .expect("PostgreSQL store opens")
    }
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        let url = self.url.clone();
        let name = self.name.clone();
        // Drop runs outside async; a short-lived runtime on its own thread
        // works whatever runtime (if any) is current.
        let dropped = std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(async {
                    let mut conn = sqlx::PgConnection::connect(&url).await?;
                    sqlx::query(&format!("DROP SCHEMA IF EXISTS {name} CASCADE"))
                        .execute(&mut conn)
                        .await?;
                    conn.close().await
                })
        })
        .join();
        if !matches!(dropped, Ok(Ok(()))) {
            eprintln!("could not drop test schema {}", self.name);
        }
    }
}
