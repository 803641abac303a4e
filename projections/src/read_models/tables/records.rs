//! Record events, applied in batches: the changes of one batch are folded per
//! record in memory, then written to the table's physical table with one DELETE, one
//! INSERT and one UPDATE, each taking every column as typed arrays (`cells.rs`).
//! Cells convert as the lenient converters do, so a value written against an older
//! schema lands as the column's current type or as an empty cell, never as a failed
//! projection.

use super::cells::ColumnCells;
use super::physical::{ident, table_name};
use anyhow::Context;
use chrono::{DateTime, Utc};
use domain::tables::column::ColumnType;
use domain::tables::record::{Cells, RecordEvent};
use sqlx::PgConnection;
use std::collections::HashMap;
use uuid::Uuid;

/// What a batch does to one record.
enum Change {
    Create {
        created_at: DateTime<Utc>,
        updated_at: DateTime<Utc>,
        created_by: String,
        cells: Cells,
    },
    Update {
        updated_at: DateTime<Utc>,
        cells: Cells,
    },
    Delete,
}

/// Pending record changes of one table, in first-touched order.
#[derive(Default)]
pub struct Pending {
    order: Vec<Uuid>,
    changes: HashMap<Uuid, Change>,
}

impl Pending {
    /// The records with pending changes, in first-change order.
    pub fn records(&self) -> &[Uuid] {
        &self.order
    }

    /// Whether nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// Folds one event of a record.
    pub fn fold(&mut self, record_id: Uuid, event: RecordEvent, at: DateTime<Utc>) {
        let slot = self.changes.get_mut(&record_id);
        let next = match (slot, event) {
            (
                _,
                RecordEvent::RecordCreated {
                    created_by, data, ..
                },
            ) => Some(Change::Create {
                created_at: at,
                updated_at: at,
                created_by,
                cells: data,
            }),
            (
                Some(
                    Change::Create {
                        updated_at, cells, ..
                    }
                    | Change::Update { updated_at, cells },
                ),
                RecordEvent::RecordUpdated { changes, .. },
            ) => {
                *updated_at = at;
                cells.extend(changes);
                None
            }
            (Some(Change::Delete), RecordEvent::RecordUpdated { .. }) => None,
            (None, RecordEvent::RecordUpdated { changes, .. }) => Some(Change::Update {
                updated_at: at,
                cells: changes,
            }),
            (_, RecordEvent::RecordDeleted { .. }) => Some(Change::Delete),
        };
        if let Some(change) = next
            && self.changes.insert(record_id, change).is_none()
        {
            self.order.push(record_id);
        }
    }
}

/// A record to create.
struct Create {
    id: Uuid,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    created_by: String,
    cells: Cells,
}

/// Writes a table's pending changes and returns the ids of the rows it created or
/// updated. `columns` are the table's stored columns now (cells of other keys, left
/// by deleted columns, are dropped).
pub async fn flush(
    conn: &mut PgConnection,
    table_id: Uuid,
    pending: Pending,
    columns: &[(String, ColumnType)],
) -> anyhow::Result<Vec<Uuid>> {
    let mut written = Vec::new();
    let table = table_name(table_id);
    let (mut creates, mut updates, mut deletes) = (Vec::new(), Vec::new(), Vec::new());
    let mut pending = pending;
    for id in pending.order {
        match pending.changes.remove(&id) {
            Some(Change::Create {
                created_at,
                updated_at,
                created_by,
                cells,
            }) => {
                written.push(id);
                creates.push(Create {
                    id,
                    created_at,
                    updated_at,
                    created_by,
                    cells,
                });
            }
            Some(Change::Update { updated_at, cells }) => {
                written.push(id);
                updates.push((id, updated_at, cells));
            }
            Some(Change::Delete) => deletes.push(id),
            None => {}
        }
    }
    let mut delta: i64 = 0;
    if !deletes.is_empty() {
        let sql = format!("DELETE FROM {table} WHERE id = ANY($1)");
        delta -= sqlx::query(&sql)
            .bind(&deletes)
            .execute(&mut *conn)
            .await?
            .rows_affected() as i64;
    }
    if !creates.is_empty() {
        delta += insert(conn, &table, creates, columns).await? as i64;
    }
    if !updates.is_empty() {
        update(conn, &table, updates, columns).await?;
    }
    if delta != 0 {
        sqlx::query("UPDATE custom_tables SET record_count = record_count + $2 WHERE id = $1")
            .bind(table_id)
            .bind(delta)
            .execute(&mut *conn)
            .await?;
    }
    Ok(written)
}

/// Inserts new rows with one statement; returns how many it inserted.
async fn insert(
    conn: &mut PgConnection,
    table: &str,
    creates: Vec<Create>,
    columns: &[(String, ColumnType)],
) -> anyhow::Result<u64> {
    let mut cells: Vec<ColumnCells> = columns
        .iter()
        .map(|(_, t)| ColumnCells::created(*t))
        .collect();
    let (mut ids, mut created, mut updated, mut by) = (vec![], vec![], vec![], vec![]);
    for create in creates {
        ids.push(create.id);
        created.push(create.created_at);
        updated.push(create.updated_at);
        by.push(create.created_by);
        for ((key, _), column) in columns.iter().zip(&mut cells) {
            column.push(create.cells.get(key));
        }
    }
    let fixed = [
        ("id", "uuid[]"),
        ("created_at", "timestamptz[]"),
        ("updated_at", "timestamptz[]"),
        ("created_by", "text[]"),
    ];
    let (from, params) = unnest_sql(&fixed, &cells);
    let mut names: Vec<&str> = fixed.iter().map(|(name, _)| *name).collect();
    let mut selected: Vec<String> = names.iter().map(|name| format!("u.{name}")).collect();
    for (((key, _), column), params) in columns.iter().zip(&cells).zip(params) {
        names.push(ident(key)?);
        selected.push(column.value_sql(&params));
    }
    let sql = format!(
        "INSERT INTO {table} ({}) SELECT {} FROM {from} ON CONFLICT (id) DO NOTHING",
        names.join(", "),
        selected.join(", ")
    );
    let mut query = sqlx::query(&sql)
        .bind(ids)
        .bind(created)
        .bind(updated)
        .bind(by);
    for column in cells {
        query = column.bind(query);
    }
    Ok(query.execute(&mut *conn).await?.rows_affected())
}

/// Updates rows with one statement, each column only where the record's change
/// has its cell.
async fn update(
    conn: &mut PgConnection,
    table: &str,
    updates: Vec<(Uuid, DateTime<Utc>, Cells)>,
    columns: &[(String, ColumnType)],
) -> anyhow::Result<()> {
    let mut cells: Vec<ColumnCells> = columns
        .iter()
        .map(|(_, t)| ColumnCells::changed(*t))
        .collect();
    let (mut ids, mut updated) = (vec![], vec![]);
    for (id, updated_at, changes) in updates {
        ids.push(id);
        updated.push(updated_at);
        for ((key, _), column) in columns.iter().zip(&mut cells) {
            column.push(changes.get(key));
        }
    }
    let fixed = [("id", "uuid[]"), ("updated_at", "timestamptz[]")];
    let (from, params) = unnest_sql(&fixed, &cells);
    let mut sets = vec!["updated_at = u.updated_at".to_string()];
    for (((key, _), column), params) in columns.iter().zip(&cells).zip(params) {
        let key = ident(key)?;
        let present = column
            .present_sql(&params)
            .context("the cells of changes carry their presence")?;
        let value = column.value_sql(&params);
        sets.push(format!(
            "{key} = CASE WHEN {present} THEN {value} ELSE t.{key} END"
        ));
    }
    let sql = format!(
        "UPDATE {table} AS t SET {} FROM {from} WHERE t.id = u.id",
        sets.join(", ")
    );
    let mut query = sqlx::query(&sql).bind(ids).bind(updated);
    for column in cells {
        query = column.bind(query);
    }
    query.execute(&mut *conn).await?;
    Ok(())
}

/// `unnest(<fixed arrays>, <each column's arrays>) AS u(...)`, parameters numbered
/// in that order from `$1`, and the qualified names of each column's parameters.
fn unnest_sql(fixed: &[(&str, &str)], cells: &[ColumnCells]) -> (String, Vec<Vec<String>>) {
    let mut arrays = Vec::new();
    let mut names = Vec::new();
    for (name, array_type) in fixed {
        arrays.push(format!("${}::{array_type}", arrays.len() + 1));
        names.push(name.to_string());
    }
    let mut params = Vec::new();
    for (i, column) in cells.iter().enumerate() {
        let mut own = Vec::new();
        for (j, array_type) in column.parameter_types().into_iter().enumerate() {
            arrays.push(format!("${}::{array_type}", arrays.len() + 1));
            names.push(format!("c{i}_{j}"));
            own.push(format!("u.c{i}_{j}"));
        }
        params.push(own);
    }
    let from = format!("unnest({}) AS u({})", arrays.join(", "), names.join(", "));
    (from, params)
}
