//! The `custom_tables` projection: the table registry and one physical table per
//! custom table holding its records as typed columns
//! (docs/decisions/0004-custom-table-storage.md).
//!
//! Events are applied in log order. Record events are collected per table and
//! written in bulk; a table event first flushes the pending records of its table, so
//! a schema change sees exactly the rows that precede it in the log.

mod automation;
mod cells;
mod filter_indexes;
mod holders;
pub(crate) mod physical;
pub mod query;
pub mod read;
pub mod records;
mod registry;
pub mod rewrite;

pub use physical::{PREFIX_CHARS, table_name};

use crate::log::StoredEvent;
use crate::projection::Projection;
use anyhow::Context;
use async_trait::async_trait;
use domain::tables::column::{ColumnDef, ColumnType};
use domain::tables::record::Record;
use domain::tables::table::{CustomTable, TableEvent};
use records::Pending;
use rewrite::Rewrite;
use sqlx::PgConnection;
use sqlx::types::Json;
use std::collections::HashMap;
use uuid::Uuid;

/// Projects [`CustomTable`] and [`Record`].
pub struct CustomTablesProjection;

/// What a record write needs to know of a live table.
struct Layout {
    /// Its stored columns (key and type), in position order.
    columns: Vec<(String, ColumnType)>,
    /// The rewrite of the background migration holding it, if any.
    rewrite: Option<Rewrite>,
}

/// One column of a layout, with the table's rewrite repeated.
#[derive(sqlx::FromRow)]
struct LayoutRow {
    definition: Option<Json<ColumnDef>>,
    rewrite: Option<Json<Rewrite>>,
}

/// The layout of a live table, `None` when the table does not exist.
async fn layout(conn: &mut PgConnection, table_id: Uuid) -> anyhow::Result<Option<Layout>> {
    let rows: Vec<LayoutRow> = sqlx::query_as(
        "SELECT c.definition, m.rewrite FROM custom_tables t
           LEFT JOIN custom_table_columns c ON c.table_id = t.id
           LEFT JOIN custom_table_migrations m ON m.id = t.migration_id
          WHERE t.id = $1 ORDER BY c.position",
    )
    .bind(table_id)
    .fetch_all(conn)
    .await?;
    let rewrite = rows.first().and_then(|r| r.rewrite.clone()).map(|r| r.0);
    if rows.is_empty() {
        return Ok(None);
    }
    let columns = rows
        .into_iter()
        .filter_map(|r| r.definition)
        .filter(|c| c.column_type.is_stored())
        .map(|c| (c.0.key, c.0.column_type))
        .collect();
    Ok(Some(Layout { columns, rewrite }))
}

async fn flush(conn: &mut PgConnection, table_id: Uuid, pending: Pending) -> anyhow::Result<()> {
    if pending.is_empty() {
        return Ok(());
    }
    let Some(layout) = layout(conn, table_id).await? else {
        return Ok(());
    };
    let touched = pending.records().to_vec();
    let written = records::flush(conn, table_id, pending, &layout.columns).await?;
    let attachments = holders::attachment_keys(&layout.columns);
    if !attachments.is_empty() {
        holders::sync(conn, table_id, &touched, &attachments).await?;
    }
    // A background migration's shadow column follows every row written meanwhile.
    if let Some(rewrite) = &layout.rewrite {
        rewrite::sync(conn, table_id, rewrite, &written).await?;
    }
    Ok(())
}

/// Recomputes which records hold attachment files after the table's columns
/// changed shape (or the table went away).
async fn refresh_holders(conn: &mut PgConnection, table_id: Uuid) -> anyhow::Result<()> {
    match layout(conn, table_id).await? {
        Some(layout) => {
            let keys = holders::attachment_keys(&layout.columns);
            holders::refresh(conn, table_id, &keys).await
        }
        None => holders::forget(conn, table_id).await,
    }
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
            "custom_table_blob_holders",
            "custom_table_triggers",
            "custom_table_rules",
            "custom_table_client_unlocks",
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
        // The last log position that changed each table (schema or records).
        let mut versions: HashMap<Uuid, i64> = HashMap::new();
        for event in events {
            if let Some(change) = event.decode::<CustomTable>()? {
                let table_id = change.table_id();
                versions.insert(table_id, event.position);
                if let Some(records) = pending.remove(&table_id) {
                    flush(conn, table_id, records).await?;
                }
                let reshapes = matches!(
                    change,
                    TableEvent::TableDeleted { .. }
                        | TableEvent::ColumnDeleted { .. }
                        | TableEvent::ColumnTypeChanged { .. }
                        | TableEvent::MigrationCompleted { .. }
                );
                registry::apply(conn, change, event.time())
                    .await
                    .with_context(|| format!("table event at position {}", event.position))?;
                if reshapes {
                    refresh_holders(conn, table_id).await?;
                }
            } else if let Some(change) = event.decode::<Record>()? {
                let record_id =
                    Uuid::parse_str(&event.aggregate_id).context("record id is a UUID")?;
                let table_id = change.table_id();
                versions.insert(table_id, event.position);
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
        for (table_id, position) in versions {
            sqlx::query("UPDATE custom_tables SET data_version = $2 WHERE id = $1")
                .bind(table_id)
                .bind(position)
                .execute(&mut *conn)
                .await?;
        }
        Ok(())
    }
}
