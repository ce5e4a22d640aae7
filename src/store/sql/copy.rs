//! Rows of any table, for copying between backends (`mnemo migrate`,
//! [`TableCopy`]): read in key order, written "insert unless the key
//! exists", as [`Value`]s in [`Table::columns`] order (`store/tables.rs`).
//! One user's rows, for `mnemo export` / `mnemo import`, go through the
//! same row reading and writing. Compiled once per dialect `D` (see
//! `sql/mod.rs`).

use async_trait::async_trait;
use sqlx::{QueryBuilder, Row as _, Transaction};

use super::rows::guard_users;
use super::D;
use crate::error::{Error, Result};
use crate::store::sql::{conflict_if_duplicate, Dialect, GuardAt, SqlStore};
use crate::store::tables::{ColumnType, Table, Value};
use crate::store::TableCopy;

#[async_trait]
impl TableCopy for SqlStore<D> {
    async fn export_rows(
        &self,
        table: &Table,
        after: Option<&[Value]>,
        limit: usize,
    ) -> Result<Vec<Vec<Value>>> {
        self.select_rows(table, None, after, limit).await
    }

    async fn import_rows(&self, table: &Table, rows: &[Vec<Value>]) -> Result<u64> {
        if rows.is_empty() {
            return Ok(0);
        }
        let mut tx = self.pool.begin().await?;
        let mut inserted = 0;
        // One multi-row INSERT per chunk, within the dialect's parameters.
        for chunk in rows.chunks(D::MAX_IMPORT_PARAMS / table.columns.len()) {
            let mut qb = insert_into(table, table.columns.iter().collect());
            for (r, row) in chunk.iter().enumerate() {
                qb.push(if r == 0 { "(" } else { ", (" });
                push_values(
                    &mut qb,
                    row.iter().zip(table.columns.iter().map(|(_, t)| *t)),
                );
                qb.push(")");
            }
            qb.push(" ON CONFLICT DO NOTHING");
            inserted += qb.build().execute(&mut *tx).await?.rows_affected();
        }
        D::after_import(&mut tx, table).await?;
        tx.commit().await?;
        Ok(inserted)
    }

    async fn count_rows(&self, table: &Table) -> Result<u64> {
        let n: i64 = sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {}", table.name))
            .fetch_one(&self.pool)
            .await?;
        Ok(n as u64)
    }

    async fn export_user_rows(
        &self,
        table: &Table,
        tenant_id: &str,
        user_id: &str,
        after: Option<&[Value]>,
        limit: usize,
    ) -> Result<Vec<Vec<Value>>> {
        self.select_rows(table, Some((tenant_id, user_id)), after, limit)
            .await
    }

    async fn import_user_rows(
        &self,
        tenant_id: &str,
        user_id: &str,
        tables: &[(&Table, Vec<Vec<Value>>)],
    ) -> Result<u64> {
        for (table, rows) in tables {
            check_owner(table, rows, tenant_id, user_id)?;
        }
        let users = [(tenant_id, user_id)];
        let mut tx = self.pool.begin().await?;
        guard_users(&mut tx, &users, GuardAt::BeforeWrites).await?;
        refuse_taken_ids(&mut tx, tables, (tenant_id, user_id), false).await?;
        let mut written = 0;
        // Old message seq → new, in order, for the threads' summaries.
        let mut message_seqs: Vec<(i64, i64)> = Vec::new();
        for (table, rows) in tables {
            if table.generated_key {
                let renumbered = insert_renumbered(&mut tx, table, rows).await?;
                written += renumbered.len() as u64;
                if table.name == "messages" {
                    message_seqs = renumbered;
                }
            } else {
                for chunk in rows.chunks(D::MAX_IMPORT_PARAMS / table.columns.len()) {
                    let mut qb = insert_into(table, table.columns.iter().collect());
                    for (r, row) in chunk.iter().enumerate() {
                        qb.push(if r == 0 { "(" } else { ", (" });
                        push_values(
                            &mut qb,
                            row.iter().zip(table.columns.iter().map(|(_, t)| *t)),
                        );
                        qb.push(")");
                    }
                    written += qb
                        .build()
                        .execute(&mut *tx)
                        .await
                        .map_err(|e| conflict_if_duplicate(e, || format!("a {} row", table.name)))?
                        .rows_affected();
                }
            }
        }
        if let Some((threads, rows)) = tables.iter().find(|(t, _)| t.name == "threads") {
            follow_message_seqs(&mut tx, threads, rows, &message_seqs).await?;
        }
        guard_users(&mut tx, &users, GuardAt::AfterWrites).await?;
        tx.commit().await?;
        Ok(written)
    }

    async fn refuse_foreign_ids(
        &self,
        tenant_id: &str,
        user_id: &str,
        tables: &[(&Table, Vec<Vec<Value>>)],
    ) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        refuse_taken_ids(&mut tx, tables, (tenant_id, user_id), true).await?;
        tx.rollback().await?;
        Ok(())
    }
}

impl SqlStore<D> {
    /// A page of `table` in key order after `after`, of one owner when
    /// `owner` is given; Json columns as text.
    async fn select_rows(
        &self,
        table: &Table,
        owner: Option<(&str, &str)>,
        after: Option<&[Value]>,
        limit: usize,
    ) -> Result<Vec<Vec<Value>>> {
        let columns = table
            .columns
            .iter()
            .map(|(c, t)| match t {
                ColumnType::Json => format!("{c}{} AS {c}", D::JSON_AS_TEXT),
                _ => c.to_string(),
            })
            .collect::<Vec<_>>()
            .join(", ");
        let key = table.key.join(", ");
        let mut qb: QueryBuilder<D> =
            QueryBuilder::new(format!("SELECT {columns} FROM {} WHERE 1 = 1", table.name));
        if let Some((tenant_id, user_id)) = owner {
            qb.push(" AND tenant_id = ")
                .push_bind(tenant_id.to_string())
                .push(" AND user_id = ")
                .push_bind(user_id.to_string());
        }
        if let Some(after) = after {
            qb.push(format!(" AND ({key}) > ("));
            push_values(&mut qb, after.iter().zip(table.key_types()));
            qb.push(")");
        }
        qb.push(format!(" ORDER BY {key} LIMIT {limit}"));
        let rows = qb.build().fetch_all(&self.pool).await?;
        rows.iter()
            .map(|row| {
                table
                    .columns
                    .iter()
                    .enumerate()
                    .map(|(i, (_, t))| {
                        Ok(match t {
                            ColumnType::Text | ColumnType::Json => {
                                row.try_get::<Option<String>, _>(i)?.map(Value::Text)
                            }
                            ColumnType::Int => row.try_get::<Option<i64>, _>(i)?.map(Value::Int),
                            ColumnType::Real => row.try_get::<Option<f64>, _>(i)?.map(Value::Real),
                            ColumnType::Bytes => {
                                row.try_get::<Option<Vec<u8>>, _>(i)?.map(Value::Bytes)
                            }
                        }
                        .unwrap_or(Value::Null))
                    })
                    .collect()
            })
            .collect()
    }
}

/// `INSERT INTO table (columns) VALUES ` (the rows follow).
fn insert_into<'q>(table: &Table, columns: Vec<&(&str, ColumnType)>) -> QueryBuilder<'q, D> {
    let names = columns
        .iter()
        .map(|(c, _)| *c)
        .collect::<Vec<_>>()
        .join(", ");
    QueryBuilder::new(format!("INSERT INTO {} ({names}) VALUES ", table.name))
}

/// `InvalidInput` unless every row is of this tenant and user.
fn check_owner(table: &Table, rows: &[Vec<Value>], tenant_id: &str, user_id: &str) -> Result<()> {
    let col = |name: &str| table.columns.iter().position(|(c, _)| *c == name);
    let (Some(t), Some(u)) = (col("tenant_id"), col("user_id")) else {
        return Err(Error::invalid(
            "table",
            format!("{} holds no user rows", table.name),
        ));
    };
    let mine = |row: &Vec<Value>| {
        row.len() == table.columns.len()
            && row[t] == Value::Text(tenant_id.to_string())
            && row[u] == Value::Text(user_id.to_string())
    };
    match rows.iter().all(mine) {
        true => Ok(()),
        false => Err(Error::invalid(
            "rows",
            format!("a {} row is not of the imported user", table.name),
        )),
    }
}

/// The ids an import names, by the table that holds them: its memories,
/// threads and payloads, and every reference to one (`supersedes`,
/// `superseded_by`, an audit event's memory, a message's or payload's
/// thread).
const IMPORT_REFERENCES: &[(&str, &str, &str)] = &[
    ("memories", "id", "memories"),
    ("memories", "supersedes", "memories"),
    ("memories", "superseded_by", "memories"),
    ("audit_events", "memory_id", "memories"),
    ("threads", "id", "threads"),
    ("messages", "thread_id", "threads"),
    ("message_payloads", "id", "message_payloads"),
    ("message_payloads", "thread_id", "threads"),
];

/// Refuses an import that names an id the store already holds: under
/// another user or tenant, the file would attach rows to (or collide with)
/// someone else's memory or thread; under the imported user (unless
/// `own_ok`), it would collide with their data.
async fn refuse_taken_ids(
    tx: &mut Transaction<'_, D>,
    tables: &[(&Table, Vec<Vec<Value>>)],
    (tenant_id, user_id): (&str, &str),
    own_ok: bool,
) -> Result<()> {
    for target in ["memories", "threads", "message_payloads"] {
        let mut ids: Vec<&str> = Vec::new();
        for (table, rows) in tables {
            for (_, column, _) in IMPORT_REFERENCES
                .iter()
                .filter(|(t, _, to)| *t == table.name && *to == target)
            {
                let Some(i) = table.columns.iter().position(|(c, _)| c == column) else {
                    continue;
                };
                ids.extend(rows.iter().filter_map(|row| match row.get(i) {
                    Some(Value::Text(id)) => Some(id.as_str()),
                    _ => None,
                }));
            }
        }
        ids.sort_unstable();
        ids.dedup();
        for chunk in ids.chunks(D::MAX_IMPORT_PARAMS.min(1000)) {
            let mut qb: QueryBuilder<D> = QueryBuilder::new(format!(
                "SELECT tenant_id, user_id FROM {target} WHERE id IN ("
            ));
            let mut list = qb.separated(", ");
            for id in chunk {
                list.push_bind(id.to_string());
            }
            qb.push(")");
            if !own_ok {
                qb.push(" LIMIT 1");
            } else {
                // Anyone's but this user's (reference memory has no user).
                qb.push(" AND NOT (tenant_id = ")
                    .push_bind(tenant_id.to_string())
                    .push(" AND user_id IS NOT NULL AND user_id = ")
                    .push_bind(user_id.to_string())
                    .push(") LIMIT 1");
            }
            if let Some(row) = qb.build().fetch_optional(&mut **tx).await? {
                let owner: (String, Option<String>) = (row.try_get(0)?, row.try_get(1)?);
                let what = match target {
                    "memories" => "memory",
                    "threads" => "thread",
                    _ => "tool payload",
                };
                return Err(Error::Conflict(
                    if owner == (tenant_id.to_string(), Some(user_id.to_string())) {
                        format!("the file names a {what} id this user already has")
                    } else {
                        format!(
                            "the file names a {what} id that belongs to another user or tenant: \
                             refused, nothing written"
                        )
                    },
                ));
            }
        }
    }
    Ok(())
}

/// Inserts rows of a table with a generated key one by one, in order,
/// letting the database number them; returns (old key, new key) pairs.
async fn insert_renumbered(
    tx: &mut Transaction<'_, D>,
    table: &Table,
    rows: &[Vec<Value>],
) -> Result<Vec<(i64, i64)>> {
    let key = table.key[0];
    let k = table.key_positions()[0];
    let columns: Vec<_> = table.columns.iter().filter(|(c, _)| *c != key).collect();
    let mut pairs = Vec::with_capacity(rows.len());
    for row in rows {
        let Value::Int(old) = row[k] else {
            return Err(Error::invalid(
                key,
                format!("a {} row has no {key}", table.name),
            ));
        };
        let mut qb = insert_into(table, columns.clone());
        qb.push("(");
        push_values(
            &mut qb,
            row.iter()
                .zip(table.columns.iter())
                .filter(|(_, (c, _))| *c != key)
                .map(|(v, (_, t))| (v, *t)),
        );
        qb.push(format!(") RETURNING {key}"));
        let new: i64 = qb.build().fetch_one(&mut **tx).await?.try_get(0)?;
        pairs.push((old, new));
    }
    Ok(pairs)
}

/// Moves each imported thread's `summary_upto_seq` onto its messages' new
/// numbers: the last renumbered message at or below the old value (0 when
/// none).
async fn follow_message_seqs(
    tx: &mut Transaction<'_, D>,
    threads: &Table,
    rows: &[Vec<Value>],
    message_seqs: &[(i64, i64)],
) -> Result<()> {
    let col = |name: &str| threads.columns.iter().position(|(c, _)| *c == name);
    let (Some(id), Some(upto)) = (col("id"), col("summary_upto_seq")) else {
        return Err(Error::internal(
            "threads table without id or summary_upto_seq",
        ));
    };
    let mut sorted = message_seqs.to_vec();
    sorted.sort_unstable();
    for row in rows {
        let (Value::Text(thread_id), Value::Int(old)) = (&row[id], &row[upto]) else {
            continue;
        };
        let below = sorted.partition_point(|(o, _)| o <= old);
        // Message seqs of one thread are increasing in both numberings, so
        // the last renumbered one at or below `old` is its new bound.
        let new = sorted[..below].iter().map(|(_, n)| *n).max().unwrap_or(0);
        if new != *old {
            sqlx::query("UPDATE threads SET summary_upto_seq = $1 WHERE id = $2")
                .bind(new)
                .bind(thread_id)
                .execute(&mut **tx)
                .await?;
        }
    }
    Ok(())
}

/// Pushes copied cells as bound parameters, comma-separated; a NULL is bound
/// with its column's type.
fn push_values<'v>(
    qb: &mut QueryBuilder<'_, D>,
    cells: impl Iterator<Item = (&'v Value, ColumnType)>,
) {
    for (i, (v, t)) in cells.enumerate() {
        if i > 0 {
            qb.push(", ");
        }
        match (v, t) {
            (Value::Text(s), ColumnType::Json) => D::push_json_text(qb, s.clone()),
            (Value::Text(s), _) => {
                qb.push_bind(s.clone());
            }
            (Value::Int(n), _) => {
                qb.push_bind(*n);
            }
            (Value::Real(x), _) => {
                qb.push_bind(*x);
            }
            (Value::Bytes(b), _) => {
                qb.push_bind(b.clone());
            }
            (Value::Null, ColumnType::Int) => {
                qb.push_bind(None::<i64>);
            }
            (Value::Null, ColumnType::Real) => {
                qb.push_bind(None::<f64>);
            }
            (Value::Null, ColumnType::Bytes) => {
                qb.push_bind(None::<Vec<u8>>);
            }
            (Value::Null, ColumnType::Json) => {
                qb.push_bind(None::<sqlx::types::Json<serde_json::Value>>);
            }
            (Value::Null, ColumnType::Text) => {
                qb.push_bind(None::<String>);
            }
        }
    }
}
