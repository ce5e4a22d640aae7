//! The store's tables as plain data, for copying them between backends
//! (`mnemo migrate`). Every backend holds the same tables with the same
//! columns (see `migrations/sqlite` and `migrations/postgres`); only the SQL
//! types differ, so a row travels as a list of [`Value`]s in column order.
//! Rows are read in key order (keyset pagination) and written with
//! "insert unless the key exists", which makes a copy resumable.

/// How a column travels between backends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnType {
    Text,
    Int,
    Real,
    Bytes,
    /// JSON text on SQLite, JSONB on PostgreSQL; travels as text.
    Json,
}

/// One cell.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Text(String),
    Int(i64),
    Real(f64),
    Bytes(Vec<u8>),
}

/// A table to copy: its columns in order and its primary key.
#[derive(Debug)]
pub struct Table {
    pub name: &'static str,
    pub columns: &'static [(&'static str, ColumnType)],
    /// Primary-key columns: the copy's order and resume point.
    pub key: &'static [&'static str],
    /// The key is a generated sequence (its counter must follow the copy).
    pub generated_key: bool,
}

impl Table {
    /// Positions of the key columns among `columns`.
    pub fn key_positions(&self) -> Vec<usize> {
        self.key
            .iter()
            .map(|k| {
                self.columns
                    .iter()
                    .position(|(c, _)| c == k)
                    .expect("key columns are columns")
            })
            .collect()
    }

    pub fn key_types(&self) -> Vec<ColumnType> {
        self.key_positions()
            .into_iter()
            .map(|i| self.columns[i].1)
            .collect()
    }

    /// The key of a row, as `export_rows` takes it to resume after that row.
    pub fn key_of(&self, row: &[Value]) -> Vec<Value> {
        self.key_positions()
            .into_iter()
            .map(|i| row[i].clone())
            .collect()
    }

    pub fn by_name(name: &str) -> Option<&'static Table> {
        TABLES.iter().find(|t| t.name == name)
    }
}

use ColumnType::{Bytes, Int, Json, Real, Text};

/// Every table of the store, in an order that a copy can follow.
pub const TABLES: &[Table] = &[
    Table {
        name: "memories",
        columns: &[
            ("id", Text),
            ("tenant_id", Text),
            ("tier", Text),
            ("user_id", Text),
            ("thread_id", Text),
            ("kind", Text),
            ("text", Text),
            ("text_sha256", Text),
            ("importance", Real),
            ("confidence", Real),
            ("status", Text),
            ("created_at", Int),
            ("updated_at", Int),
            ("last_accessed_at", Int),
            ("access_count", Int),
            ("expires_at", Int),
            ("source", Json),
            ("metadata", Json),
            ("embedding_model", Text),
            ("version", Int),
            ("supersedes", Text),
            ("superseded_by", Text),
            ("base_importance", Real),
            ("cooled_at", Int),
        ],
        key: &["id"],
        generated_key: false,
    },
    Table {
        name: "audit_events",
        columns: &[
            ("seq", Int),
            ("memory_id", Text),
            ("tenant_id", Text),
            ("user_id", Text),
            ("action", Text),
            ("actor", Text),
            ("at", Int),
            ("before_text", Text),
            ("after_text", Text),
            ("details", Json),
        ],
        key: &["seq"],
        generated_key: true,
    },
    Table {
        name: "embedding_cache",
        columns: &[
            ("tenant_id", Text),
            ("user_id", Text),
            ("model_id", Text),
            ("text_sha256", Text),
            ("vector", Bytes),
        ],
        key: &["tenant_id", "user_id", "model_id", "text_sha256"],
        generated_key: false,
    },
    Table {
        name: "api_keys",
        columns: &[
            ("id", Text),
            ("tenant_id", Text),
            ("user_id", Text),
            ("role", Text),
            ("secret_sha256", Text),
            ("created_at", Int),
            ("revoked_at", Int),
        ],
        key: &["id"],
        generated_key: false,
    },
    Table {
        name: "erasure_intents",
        columns: &[
            ("tenant_id", Text),
            ("user_id", Text),
            ("actor", Text),
            ("started_at", Int),
        ],
        key: &["tenant_id", "user_id"],
        generated_key: false,
    },
    Table {
        name: "erasure_receipts",
        columns: &[
            ("seq", Int),
            ("tenant_id", Text),
            ("user_hash", Text),
            ("counts", Json),
            ("actor", Text),
            ("completed_at", Int),
        ],
        key: &["seq"],
        generated_key: true,
    },
    Table {
        name: "job_leases",
        columns: &[
            ("name", Text),
            ("holder", Text),
            ("lease_expires_at", Int),
            ("acquired_at", Int),
            ("last_completed_at", Int),
            ("last_stats", Json),
            ("first_due_at", Int),
        ],
        key: &["name"],
        generated_key: false,
    },
    Table {
        name: "threads",
        columns: &[
            ("id", Text),
            ("tenant_id", Text),
            ("user_id", Text),
            ("goal", Text),
            ("summary", Text),
            ("summary_upto_seq", Int),
            ("created_at", Int),
            ("updated_at", Int),
            ("last_activity_at", Int),
            ("last_compacted_at", Int),
            ("turn_holder", Text),
            ("turn_until", Int),
        ],
        key: &["id"],
        generated_key: false,
    },
    Table {
        name: "messages",
        columns: &[
            ("seq", Int),
            ("thread_id", Text),
            ("tenant_id", Text),
            ("user_id", Text),
            ("role", Text),
            ("content", Text),
            ("tool", Text),
            ("created_at", Int),
            ("extraction_state", Text),
            ("extraction_until", Int),
            ("compacted", Int),
        ],
        key: &["seq"],
        generated_key: true,
    },
    Table {
        name: "message_payloads",
        columns: &[
            ("id", Text),
            ("thread_id", Text),
            ("tenant_id", Text),
            ("user_id", Text),
            ("payload", Text),
            ("created_at", Int),
        ],
        key: &["id"],
        generated_key: false,
    },
];

/// The tables that hold a user's own rows (each has `tenant_id` and
/// `user_id` columns), in an order an import can follow: what an export of
/// the user carries. The embedding cache is left out: it is derived (the
/// import embeds again).
pub const USER_TABLES: &[&str] = &[
    "memories",
    "audit_events",
    "threads",
    "messages",
    "message_payloads",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_is_a_column_and_names_are_unique() {
        let mut names: Vec<_> = TABLES.iter().map(|t| t.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), TABLES.len());
        for t in TABLES {
            assert_eq!(t.key_positions().len(), t.key.len(), "{}", t.name);
        }
        for name in USER_TABLES {
            let t = Table::by_name(name).expect("a user table is a table");
            for col in ["tenant_id", "user_id"] {
                assert!(t.columns.iter().any(|(c, _)| *c == col), "{name}.{col}");
            }
        }
    }
}
