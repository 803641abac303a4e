//! Record events, applied in batches: the changes of one batch are folded per
//! record in memory, then written to the table's physical table with one DELETE, one
//! INSERT and one UPDATE, each taking every row as one JSON array. Cells pass through
//! the lenient converters, so a value written against an older schema lands as the
//! column's current type or as an empty cell, never as a failed projection.

use super::physical::{converter, ident, table_name};
use chrono::{DateTime, Utc};
use domain::tables::column::ColumnType;
use domain::tables::record::{Cells, RecordEvent};
use serde_json::{Map, Value, json};
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

/// Writes a table's pending changes and returns the ids of the rows it created or
/// updated. `columns` are the table's stored columns now.
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
                let mut row = cells_object(cells, columns);
                row.insert("id".into(), json!(id));
                row.insert("created_at".into(), json!(created_at));
                row.insert("updated_at".into(), json!(updated_at));
                row.insert("created_by".into(), json!(created_by));
                creates.push(Value::Object(row));
            }
            Some(Change::Update { updated_at, cells }) => {
                written.push(id);
                let mut row = cells_object(cells, columns);
                row.insert("id".into(), json!(id));
                row.insert("updated_at".into(), json!(updated_at));
                updates.push(Value::Object(row));
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
        let mut names = vec!["id", "created_at", "updated_at", "created_by"];
        let mut values = vec![
            "(e->>'id')::uuid".to_string(),
            "(e->>'created_at')::timestamptz".into(),
            "(e->>'updated_at')::timestamptz".into(),
            "e->>'created_by'".into(),
        ];
        for (key, t) in columns {
            let key = ident(key)?;
            names.push(key);
            values.push(format!("{}(e->'{key}')", converter(*t)));
        }
        let sql = format!(
            "INSERT INTO {table} ({}) SELECT {} FROM jsonb_array_elements($1::jsonb) AS e ON CONFLICT (id) DO NOTHING",
            names.join(", "),
            values.join(", ")
        );
        let rows = Value::Array(creates).to_string();
        delta += sqlx::query(&sql)
            .bind(rows)
            .execute(&mut *conn)
            .await?
            .rows_affected() as i64;
    }
    if !updates.is_empty() {
        let mut sets = vec!["updated_at = (e->>'updated_at')::timestamptz".to_string()];
        for (key, t) in columns {
            let key = ident(key)?;
            sets.push(format!(
                "{key} = CASE WHEN e ? '{key}' THEN {}(e->'{key}') ELSE t.{key} END",
                converter(*t)
            ));
        }
        let sql = format!(
            "UPDATE {table} AS t SET {} FROM jsonb_array_elements($1::jsonb) AS e WHERE t.id = (e->>'id')::uuid",
            sets.join(", ")
        );
        sqlx::query(&sql)
            .bind(Value::Array(updates).to_string())
            .execute(&mut *conn)
            .await?;
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

/// The cells of columns that exist now (cells of deleted columns are dropped).
fn cells_object(cells: Cells, columns: &[(String, ColumnType)]) -> Map<String, Value> {
    cells
        .into_iter()
        .filter(|(key, _)| columns.iter().any(|(k, _)| k == key))
        .collect()
}
