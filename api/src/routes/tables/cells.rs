//! Record cells in and out: type-aware validation of every write (with the
//! directory and link checks values need) and the response form of records.

use super::blobs;
use super::scope::{OpenTable, table_row};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use chrono::{DateTime, Utc};
use domain::tables::TableError;
use domain::tables::column::{ColumnDef, ColumnType};
use domain::tables::record::Cells;
use domain::tables::values::{self, PrincipalKind, Reference};
use projections::read_models::tables::read::{RecordRow, TableHandle};
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap, HashSet};
use utoipa::ToSchema;
use uuid::Uuid;

/// A record as private routes return it.
#[derive(Debug, Serialize, ToSchema)]
pub struct RecordResponse {
    /// Id.
    pub id: Uuid,
    /// Its table.
    pub table_id: Uuid,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// The creator (`user:<id>` or `social_media_client:<id>`).
    pub created_by: String,
    /// Cells by display name; principal cells read as `{ref, kind, id, name}`.
    #[schema(value_type = Object)]
    pub data: Map<String, Value>,
    /// Whether the caller may edit or delete this record now (its effective
    /// permission's edit rows, evaluated in the same query).
    pub can_edit: bool,
}

/// A refused cell value.
pub(super) fn invalid(column: &ColumnDef, message: impl Into<String>) -> ApiError {
    ApiError::from(TableError::InvalidValue {
        column: column.name.clone(),
        message: message.into(),
    })
}

/// Finds the stored column a data key names (internal key or display name).
fn column_of<'a>(columns: &'a [ColumnDef], reference: &str) -> ApiResult<&'a ColumnDef> {
    let column = columns
        .iter()
        .find(|c| c.key == reference)
        .or_else(|| columns.iter().find(|c| c.name == reference))
        .ok_or_else(|| {
            ApiError::from(TableError::InvalidQuery(format!(
                "Column '{reference}' does not exist in table schema"
            )))
        })?;
    if !column.column_type.is_stored() {
        return Err(invalid(
            column,
            format!(
                "{} columns are computed and cannot be written",
                column.column_type.as_str()
            ),
        ));
    }
    Ok(column)
}

/// Validates the cells of a write. A create gets defaults for absent columns and
/// must fill every required column; an update may not empty a required one.
pub async fn validate(
    state: &AppState,
    table: &OpenTable,
    data: &Map<String, Value>,
    creating: bool,
) -> ApiResult<Cells> {
    let mut cells = Cells::new();
    let mut references: Vec<(&ColumnDef, Reference)> = Vec::new();
    for (reference, value) in data {
        let column = column_of(&table.columns, reference)?;
        if cells.contains_key(&column.key) {
            return Err(invalid(column, "named twice (by key and by name)"));
        }
        let completed;
        let value = if column.column_type == ColumnType::Attachment {
            completed = blobs::attach::complete(table, column, value).await?;
            &completed
        } else {
            value
        };
        let mut refs = Vec::new();
        let value = values::normalize(column, value, &mut refs).map_err(|m| invalid(column, m))?;
        references.extend(refs.into_iter().map(|r| (column, r)));
        cells.insert(column.key.clone(), value);
    }
    for column in table
        .all_columns
        .iter()
        .filter(|c| c.column_type.is_stored())
    {
        if creating
            && !cells.contains_key(&column.key)
            && let Some(default) = &column.default_value
        {
            cells.insert(column.key.clone(), default.clone());
        }
        let empty = cells.get(&column.key).is_none_or(Value::is_null);
        let touched = creating || cells.contains_key(&column.key);
        if column.required && empty && touched {
            if table.access.hidden.contains(&column.key) {
                // Name no column the caller may not see.
                return Err(ApiError::from(TableError::InvalidQuery(
                    "a required column hidden from you has no default; a table manager must give it one".into(),
                )));
            }
            return Err(invalid(column, "a value is required"));
        }
    }
    check_references(state, table.row.company_id, &references).await?;
    Ok(cells)
}

/// Checks that every referenced user, social client, room and record exists (and is
/// live) in the company.
async fn check_references(
    state: &AppState,
    company_id: Uuid,
    references: &[(&ColumnDef, Reference)],
) -> ApiResult<()> {
    let ids = |pick: fn(&Reference) -> Option<Uuid>| -> Vec<Uuid> {
        references.iter().filter_map(|(_, r)| pick(r)).collect()
    };
    let users = ids(|r| {
        if let Reference::User(id) = r {
            Some(*id)
        } else {
            None
        }
    });
    let clients = ids(|r| {
        if let Reference::SocialClient(id) = r {
            Some(*id)
        } else {
            None
        }
    });
    let rooms = ids(|r| {
        if let Reference::Room(id) = r {
            Some(*id)
        } else {
            None
        }
    });
    let mut found: HashSet<Uuid> = HashSet::new();
    for (sql, list) in [
        (
            "SELECT id FROM users WHERE company_id = $1 AND id = ANY($2)",
            &users,
        ),
        (
            "SELECT id FROM social_clients WHERE company_id = $1 AND id = ANY($2)",
            &clients,
        ),
        (
            "SELECT id FROM chatrooms WHERE company_id = $1 AND NOT archived AND id = ANY($2)",
            &rooms,
        ),
    ] {
        if !list.is_empty() {
            let rows: Vec<Uuid> = sqlx::query_scalar(sql)
                .bind(company_id)
                .bind(list)
                .fetch_all(&state.pool)
                .await?;
            found.extend(rows);
        }
    }
    let mut per_table: BTreeMap<Uuid, Vec<Uuid>> = BTreeMap::new();
    for (_, r) in references {
        if let Reference::Record {
            table_id,
            record_id,
        } = r
        {
            per_table.entry(*table_id).or_default().push(*record_id);
        }
    }
    for (table_id, records) in per_table {
        if table_row(state, company_id, table_id).await?.is_some() {
            let handle = TableHandle {
                company_id,
                table_id,
                columns: Vec::new(),
                gates: Vec::new(),
            };
            found.extend(
                handle
                    .existing(&state.pool, &records)
                    .await
                    .map_err(ApiError::Internal)?,
            );
        }
    }
    for (column, reference) in references {
        let (id, what) = match reference {
            Reference::User(id) => (id, "user"),
            Reference::SocialClient(id) => (id, "social client"),
            Reference::Room(id) => (id, "live chatroom"),
            Reference::Record { record_id, .. } => (record_id, "live record of the target table"),
        };
        if !found.contains(id) {
            return Err(invalid(
                column,
                format!("{id} is not a {what} of this company"),
            ));
        }
    }
    Ok(())
}

/// Names of the principals principal cells name, by tagged string.
async fn principal_names(
    state: &AppState,
    company_id: Uuid,
    rows: &[RecordRow],
) -> ApiResult<HashMap<String, String>> {
    let mut by_kind: HashMap<&'static str, Vec<Uuid>> = HashMap::new();
    for row in rows {
        for (column, value) in &row.cells {
            if column.column_type == ColumnType::Principal
                && let Some((kind, id)) = value.as_str().and_then(values::parse_principal)
            {
                by_kind.entry(kind.tag()).or_default().push(id);
            }
        }
    }
    let mut names = HashMap::new();
    for (tag, ids) in by_kind {
        let sql = match tag {
            "user" => "SELECT id, username FROM users WHERE company_id = $1 AND id = ANY($2)",
            "smc" => {
                "SELECT id, display_name FROM social_clients WHERE company_id = $1 AND id = ANY($2)"
            }
            _ => "SELECT id, name FROM chatrooms WHERE company_id = $1 AND id = ANY($2)",
        };
        let rows: Vec<(Uuid, String)> = sqlx::query_as(sql)
            .bind(company_id)
            .bind(&ids)
            .fetch_all(&state.pool)
            .await?;
        names.extend(
            rows.into_iter()
                .map(|(id, name)| (format!("{tag}:{id}"), name)),
        );
    }
    Ok(names)
}

/// The read form of a principal cell.
fn principal_cell(value: &Value, names: &HashMap<String, String>) -> Value {
    let Some(reference) = value.as_str() else {
        return Value::Null;
    };
    match values::parse_principal(reference) {
        Some((kind, id)) => json!({
            "ref": reference,
            "kind": match kind {
                PrincipalKind::User => "user",
                PrincipalKind::SocialClient => "smc",
                PrincipalKind::Room => "room",
            },
            "id": id,
            "name": names.get(reference),
        }),
        None => Value::Null,
    }
}

/// Records in their response form.
pub async fn render(
    state: &AppState,
    table: &OpenTable,
    rows: Vec<RecordRow>,
) -> ApiResult<Vec<RecordResponse>> {
    let names = principal_names(state, table.row.company_id, &rows).await?;
    Ok(rows
        .into_iter()
        .map(|row| {
            let data = row
                .cells
                .iter()
                .map(|(column, value)| {
                    let value = if column.column_type == ColumnType::Principal {
                        principal_cell(value, &names)
                    } else {
                        value.clone()
                    };
                    (column.name.clone(), value)
                })
                .collect();
            RecordResponse {
                id: row.id,
                table_id: table.row.id,
                created_at: row.created_at,
                updated_at: row.updated_at,
                can_edit: row.flag.unwrap_or(false),
                created_by: row.created_by,
                data,
            }
        })
        .collect())
}
