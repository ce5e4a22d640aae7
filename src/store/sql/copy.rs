//! Rows of any table, for copying between backends (`mnemo migrate`,
//! [`TableCopy`]): read in key order, written "insert unless the key
//! exists", as [`Value`]s in [`Table::columns`] order (`store/tables.rs`).
//! Compiled once per dialect `D` (see `sql/mod.rs`).

use async_trait::async_trait;
use sqlx::{QueryBuilder, Row as _};

use super::D;
use crate::error::Result;
use crate::store::sql::{Dialect, SqlStore};
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
            QueryBuilder::new(format!("SELECT {columns} FROM {}", table.name));
        if let Some(after) = after {
            qb.push(format!(" WHERE ({key}) > ("));
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

    async fn import_rows(&self, table: &Table, rows: &[Vec<Value>]) -> Result<u64> {
        if rows.is_empty() {
            return Ok(0);
        }
        let mut tx = self.pool.begin().await?;
        let mut inserted = 0;
        // One multi-row INSERT per chunk, within the dialect's parameters.
        for chunk in rows.chunks(D::MAX_IMPORT_PARAMS / table.columns.len()) {
            let mut qb: QueryBuilder<D> = QueryBuilder::new(format!(
                "INSERT INTO {} ({}) VALUES ",
                table.name,
                table.column_names()
            ));
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
