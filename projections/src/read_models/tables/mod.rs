//! The `custom_tables` projection: the table registry and one physical table per
//! custom table holding its records as typed columns
//! (docs/decisions/0004-custom-table-storage.md).
//!
//! Events are applied in log order. Record events are collected per table and
//! written in bulk; a table event first flushes the pending records of its table, so
//! a schema change sees exactly the rows that precede it in the log.

mod grant_indexes;
mod physical;
pub mod read;
mod records;
mod registry;

pub use physical::{PREFIX_CHARS, table_name};

use crate::log::StoredEvent;
use crate::projection::Projection;
use anyhow::Context;
use async_trait::async_trait;
use domain::tables::column::{ColumnDef, ColumnType};
use domain::tables::record::Record;
use domain::tables::table::CustomTable;
use records::Pending;
use sqlx::PgConnection;
use sqlx::types::Json;
use std::collections::HashMap;
use uuid::Uuid;

/// Projects [`CustomTable`] and [`Record`].
pub struct CustomTablesProjection;

/// The stored columns of a live table, `None` when the table does not exist.
async fn stored_columns(
    conn: &mut PgConnection,
    table_id: Uuid,
) -> anyhow::Result<Option<Vec<(String, ColumnType)>>> {
    let rows: Vec<(Option<Json<ColumnDef>>,)> = sqlx::query_as(
        "SELECT c.definition FROM custom_tables t
           LEFT JOIN custom_table_columns c ON c.table_id = t.id
          WHERE t.id = $1 ORDER BY c.position",
    )
    .bind(table_id)
    .fetch_all(conn)
    .await?;
    if rows.is_empty() {
        return Ok(None);
    }
    Ok(Some(
        rows.into_iter()
            .filter_map(|(c,)| c)
            .filter(|c| c.column_type.is_stored())
            .map(|c| (c.0.key, c.0.column_type))
            .collect(),
    ))
}

async fn flush(conn: &mut PgConnection, table_id: Uuid, pending: Pending) -> anyhow::Result<()> {
    if pending.is_empty() {
        return Ok(());
    }
    let columns = stored_columns(conn, table_id).await?;
    records::flush(conn, table_id, pending, columns.as_deref()).await
}

#[async_trait]
impl Projection for CustomTablesProjection {
    fn name(&self) -> &'static str {
        "custom_tables"
    }

    /// The registry; each registered table also owns its physical `ct_<id>` table.
    fn tables(&self) -> &'static [&'static str] {
        &[
            "custom_tables",
            "custom_table_columns",
            "custom_table_views",
            "custom_table_migrations",
            "custom_table_grants",
        ]
    }

    async fn owned_tables(
        &self,
        conn: &mut PgConnection,
        schema: &str,
    ) -> anyhow::Result<Vec<String>> {
        let physical: Vec<String> = sqlx::query_scalar(
            "SELECT tablename::text FROM pg_tables
              WHERE schemaname = $1 AND tablename ~ '^ct_[0-9a-f]{32}$' ORDER BY tablename",
        )
        .bind(schema)
        .fetch_all(conn)
        .await?;
        Ok(self
            .tables()
            .iter()
            .map(|t| t.to_string())
            .chain(physical)
            .collect())
    }

    fn calls_live_functions(&self) -> bool {
        true
    }

    fn aggregate_types(&self) -> &'static [&'static str] {
        &["custom_table", "custom_table_record"]
    }

    async fn apply(&self, conn: &mut PgConnection, events: &[StoredEvent]) -> anyhow::Result<()> {
        // Conversions of datetimes and durations to text must not depend on the
        // session's settings.
        sqlx::query("SELECT set_config('TimeZone', 'UTC', true), set_config('IntervalStyle', 'iso_8601', true)")
            .execute(&mut *conn)
            .await?;
        let mut pending: HashMap<Uuid, Pending> = HashMap::new();
        let mut order: Vec<Uuid> = Vec::new();
        for event in events {
            if let Some(change) = event.decode::<CustomTable>()? {
                let table_id = change.table_id();
                if let Some(records) = pending.remove(&table_id) {
                    flush(conn, table_id, records).await?;
                }
                registry::apply(conn, change, event.time())
                    .await
                    .with_context(|| format!("table event at position {}", event.position))?;
            } else if let Some(change) = event.decode::<Record>()? {
                let record_id =
                    Uuid::parse_str(&event.aggregate_id).context("record id is a UUID")?;
                let table_id = change.table_id();
                let slot = pending.entry(table_id).or_insert_with(|| {
                    order.push(table_id);
                    Pending::default()
                });
                slot.fold(record_id, change, event.time());
            }
        }
        for table_id in order {
            if let Some(records) = pending.remove(&table_id) {
                flush(conn, table_id, records).await?;
            }
        }
        Ok(())
    }
}
