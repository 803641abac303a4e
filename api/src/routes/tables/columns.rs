//! Column routes (spec section 4, "Columns"): list, create, preview, update (PATCH
//! and the deprecated company-scope PUT) and delete.

use super::column_schema::*;
use super::column_sources;
use super::gates::Operation;
use super::migrations;
use super::scope::{Mount, OpenTable, link_gates, open_table, scope_facts, table_row};
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;
use crate::request::Caller;
use crate::state::AppState;
use axum::Json;
use chrono::{DateTime, Utc};
use domain::SpecError;
use domain::tables::TableError;
use domain::tables::column::{ColumnDef, Surroundings, build_column};
use domain::tables::scope::{Placement, ScopeRef};
use domain::tables::table::{TableCommand, TableEvent};
use projections::read_models::tables::read::{Gate, Selection};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// Column routes of every mount.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_columns, create_column))
        .routes(routes!(preview_column))
        .routes(routes!(update_column, delete_column))
}

/// The deprecated PUT, on the company mount only.
pub fn company_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(put_column))
}

/// `SuccessResponse`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SuccessResponse {
    /// What happened.
    pub message: String,
}

/// Records a column preview samples (spec section 8).
const PREVIEW_SAMPLE: i64 = 5;

type Times = HashMap<String, (DateTime<Utc>, DateTime<Utc>)>;

async fn times(state: &AppState, table_id: Uuid) -> ApiResult<Times> {
    let rows: Vec<(String, DateTime<Utc>, DateTime<Utc>)> = sqlx::query_as(
        "SELECT key, created_at, updated_at FROM custom_table_columns WHERE table_id = $1",
    )
    .bind(table_id)
    .fetch_all(&state.pool)
    .await?;
    Ok(rows.into_iter().map(|(k, c, u)| (k, (c, u))).collect())
}

fn respond(
    table: &OpenTable,
    column: &ColumnDef,
    times: &Times,
    now: DateTime<Utc>,
) -> ColumnResponse {
    let (created, updated) = times.get(&column.key).copied().unwrap_or((now, now));
    ColumnResponse {
        restricted: table.restricted(column),
        ..ColumnResponse::of(column, &table.all_columns, created, updated)
    }
}

/// A fresh internal key.
fn new_key() -> String {
    format!("col_{:016x}", rand::random::<u64>())
}

/// The table's columns (spec: `ColumnResponse[]`).
#[utoipa::path(get, path = "/tables/{table_id}/columns", tag = "custom_tables",
    params(("table_id" = Uuid, Path, description = "The table")),
    responses((status = 200, body = Vec<ColumnResponse>)))]
async fn list_columns(caller: Caller, mount: Mount) -> ApiResult<Json<Vec<ColumnResponse>>> {
    let table = open_table(&caller, &mount, Operation::ListColumns).await?;
    let times = times(&caller.state, table.row.id).await?;
    let now = Utc::now();
    Ok(Json(
        table
            .columns
            .iter()
            .map(|c| respond(&table, c, &times, now))
            .collect(),
    ))
}

/// Adds a column; a `default_value` is written into existing rows.
#[utoipa::path(post, path = "/tables/{table_id}/columns", tag = "custom_tables", request_body = ColumnCreate,
    params(("table_id" = Uuid, Path, description = "The table")),
    responses((status = 200, body = ColumnCreateResponse)))]
async fn create_column(
    caller: Caller,
    mount: Mount,
    ApiJson(body): ApiJson<ColumnCreate>,
) -> ApiResult<Json<ColumnCreateResponse>> {
    let table = open_table(&caller, &mount, Operation::CreateColumn).await?;
    let sources = column_sources::of(&table, &body).await?;
    let key = new_key();
    let command = TableCommand::AddColumn {
        key: key.clone(),
        spec: body.spec(),
        room_department: table.room_department,
        link: sources.link,
        link_targets: sources.link_targets,
        others: sources.others,
        live_records: table.row.record_count,
        migration_id: Uuid::new_v4(),
    };
    let committed = table.execute(command).await?;
    let Some(TableEvent::ColumnAdded {
        column,
        fill,
        migration,
        ..
    }) = committed.events.into_iter().next()
    else {
        return Err(ApiError::internal(anyhow::anyhow!(
            "column add appended nothing"
        )));
    };
    let migration_info = match migration {
        Some(m) => {
            migrations::report(
                &table,
                &m,
                fill.is_some(),
                "the default value is written into existing records",
            )
            .await?
        }
        None => MigrationInfoResponse {
            background_migration: false,
            migration_id: None,
            records_migrated: Some(0),
            estimated_records: table.row.record_count,
            default_value_applied: false,
            message: "column added; no existing record needed a value".into(),
            note: None,
        },
    };
    let times = times(&caller.state, table.row.id).await?;
    Ok(Json(ColumnCreateResponse {
        column: respond(&table, &column, &times, caller.ctx.time),
        migration_info,
    }))
}

/// Validates a ColumnCreate and shows what it would do, writing nothing.
#[utoipa::path(post, path = "/tables/{table_id}/columns/preview", tag = "custom_tables", request_body = ColumnCreate,
    params(("table_id" = Uuid, Path, description = "The table")),
    responses((status = 200, body = ColumnPreviewResponse)))]
async fn preview_column(
    caller: Caller,
    mount: Mount,
    ApiJson(body): ApiJson<ColumnCreate>,
) -> ApiResult<Json<ColumnPreviewResponse>> {
    let table = open_table(&caller, &mount, Operation::ManageColumns).await?;
    let sources = column_sources::of(&table, &body).await?;
    let placement = Placement {
        company_id: table.row.company_id,
        scope: table.scope,
        room_department: table.room_department,
    };
    let around = Surroundings {
        existing: &table.columns,
        table_id: table.row.id,
        placement: &placement,
        link: sources.link,
        link_targets: &sources.link_targets,
        others: &sources.others,
    };
    let built = build_column(new_key(), body.spec(), &around).and_then(|c| {
        if c.required && c.default_value.is_none() && table.row.record_count > 0 {
            Err(TableError::DefaultNeeded(table.row.record_count))
        } else {
            Ok(c)
        }
    });
    let column = match built {
        Ok(column) => column,
        Err(error) => {
            let hint = match &error {
                TableError::DefaultNeeded(_) => {
                    Some("give a default_value, or add the column as not required".to_string())
                }
                TableError::DuplicateName(_) | TableError::ReservedName(_) => {
                    Some("choose another name".to_string())
                }
                _ => None,
            };
            return Ok(Json(ColumnPreviewResponse {
                valid: false,
                errors: vec![ColumnPreviewError {
                    code: error.code().as_str().into(),
                    message: error.to_string(),
                }],
                hint,
                normalized: None,
                sample: Vec::new(),
            }));
        }
    };
    let mut normalized = serde_json::to_value(ColumnResponse::of(
        &column,
        &table.all_columns,
        caller.ctx.time,
        caller.ctx.time,
    ))
    .map_err(ApiError::internal)?;
    normalized["id"] = Value::Null;
    // What the caller may read of the tables a computed column would read.
    let gates = link_gates(&caller, std::slice::from_ref(&column)).await?;
    let read = column.reads_tables();
    if !read.is_empty() {
        let restricted = read.iter().any(|t| gates.iter().all(|g| g.table_id != *t));
        normalized["restricted"] = restricted.into();
    }
    if let Some(target) = column.target_table_id {
        normalized["target_table"] = target_summary(&table, target).await?;
    }
    let sample = sample(&table, &column, gates).await?;
    Ok(Json(ColumnPreviewResponse {
        valid: true,
        errors: Vec::new(),
        hint: column
            .default_value
            .as_ref()
            .filter(|_| table.row.record_count > 0)
            .map(|_| {
                format!(
                    "the default value will be written into {} existing record(s)",
                    table.row.record_count
                )
            }),
        normalized: Some(normalized),
        sample,
    }))
}

/// The value the column would show in the first records the caller sees: a
/// computed column computed by the same query that reads records (under the
/// caller's permissions on what it reads, `gates`), a stored column its default.
async fn sample(
    table: &OpenTable,
    column: &ColumnDef,
    gates: Vec<Gate>,
) -> ApiResult<Vec<ColumnPreviewSample>> {
    let mut handle = table.handle();
    // A stored column has no physical column yet: the page reads ids only.
    let mut projection = Vec::new();
    let computed = !column.column_type.is_stored();
    if computed {
        handle.columns.push(column.clone());
        handle.gates.extend(gates);
        projection.push(column.key.clone());
    }
    let selection = Selection {
        projection: Some(projection),
        limit: Some(PREVIEW_SAMPLE),
        ..table.selection()
    };
    let rows = handle
        .page(table.caller.pool(), &selection)
        .await
        .map_err(ApiError::Internal)?;
    let fill = column.default_value.clone().unwrap_or(Value::Null);
    Ok(rows
        .into_iter()
        .map(|row| ColumnPreviewSample {
            record_id: row.id,
            value: if computed {
                row.cells
                    .into_iter()
                    .next()
                    .map(|(_, v)| v)
                    .unwrap_or_default()
            } else {
                fill.clone()
            },
        })
        .collect())
}

/// The link target as the caller may see it: `restricted` when its scope is not
/// visible to them.
async fn target_summary(table: &OpenTable, target: Uuid) -> ApiResult<Value> {
    let row = table_row(&table.caller.state, table.row.company_id, target)
        .await?
        .ok_or(ApiError::NotFound)?;
    let kind = row.scope_kind;
    let facts = scope_facts(
        &table.caller,
        ScopeRef {
            kind,
            id: row.scope_id,
        },
    )
    .await?;
    let visible = facts.is_some_and(|f| super::gates::entry(kind, &f.standing));
    Ok(if visible {
        json!({"id": row.id, "name": row.name, "scope": kind.as_str(), "restricted": false})
    } else {
        json!({"id": row.id, "restricted": true})
    })
}

async fn change_column(
    caller: Caller,
    mount: Mount,
    body: ColumnUpdate,
) -> ApiResult<Json<ColumnUpdateResponse>> {
    let table = open_table(&caller, &mount, Operation::ManageColumns).await?;
    let state = &caller.state;
    let key = mount.param("column_id")?.to_string();
    let current = table
        .columns
        .iter()
        .find(|c| c.key == key)
        .ok_or(ApiError::NotFound)?;
    let changes = body.changes();
    let option_usage =
        match domain::tables::column::apply_changes(current, changes.clone(), &table.columns) {
            Ok(updated) if !updated.removed_options.is_empty() => table
                .handle()
                .option_usage(&state.pool, current, &updated.removed_options)
                .await
                .map_err(ApiError::Internal)?,
            Ok(_) => 0,
            Err(error) => return Err(ApiError::from(error)),
        };
    let empty_cells =
        if changes.required == Some(true) && !current.required && current.column_type.is_stored() {
            table
                .handle()
                .empty_count(&state.pool, current)
                .await
                .map_err(ApiError::Internal)?
        } else {
            0
        };
    let command = TableCommand::UpdateColumn {
        key: key.clone(),
        changes,
        live_records: table.row.record_count,
        option_usage,
        empty_cells,
        migration_id: Uuid::new_v4(),
    };
    let committed = table.execute(command).await?;
    let mut migration_info = None;
    for event in &committed.events {
        let (info, note) = match event {
            TableEvent::ColumnTypeChanged {
                from,
                column,
                migration,
                ..
            } => (
                migration,
                format!(
                    "values convert from {} to {}; values that do not convert become empty",
                    from.column_type.as_str(),
                    column.column_type.as_str()
                ),
            ),
            TableEvent::ColumnOptionsRenamed { migration, .. } => (
                migration,
                "renamed options are rewritten in every live record".to_string(),
            ),
            _ => continue,
        };
        migration_info = Some(migrations::report(&table, info, false, &note).await?);
    }
    let column = committed
        .state
        .column(&key)
        .cloned()
        .ok_or(ApiError::NotFound)?;
    let times = times(state, table.row.id).await?;
    Ok(Json(ColumnUpdateResponse {
        column: ColumnResponse {
            restricted: table.restricted(&column),
            ..ColumnResponse::of(
                &column,
                &committed.state.columns,
                times.get(&key).map_or(caller.ctx.time, |t| t.0),
                times.get(&key).map_or(caller.ctx.time, |t| t.1),
            )
        },
        migration_info,
    }))
}

/// Renames, re-describes, re-types (migrating every row) or re-options a column.
#[utoipa::path(patch, path = "/tables/{table_id}/columns/{column_id}", tag = "custom_tables", request_body = ColumnUpdate,
    params(("table_id" = Uuid, Path, description = "The table"), ("column_id" = String, Path, description = "`col_<hex>`")),
    responses((status = 200, body = ColumnUpdateResponse)))]
async fn update_column(
    caller: Caller,
    mount: Mount,
    ApiJson(body): ApiJson<ColumnUpdate>,
) -> ApiResult<Json<ColumnUpdateResponse>> {
    change_column(caller, mount, body).await
}

/// Deprecated: the same as PATCH, on the company mount only.
#[utoipa::path(put, path = "/tables/{table_id}/columns/{column_id}", tag = "custom_tables", request_body = ColumnUpdate,
    params(("table_id" = Uuid, Path, description = "The table"), ("column_id" = String, Path, description = "`col_<hex>`")),
    responses((status = 200, body = ColumnUpdateResponse)))]
async fn put_column(
    caller: Caller,
    mount: Mount,
    ApiJson(body): ApiJson<ColumnUpdate>,
) -> ApiResult<Json<ColumnUpdateResponse>> {
    change_column(caller, mount, body).await
}

/// Removes the column and permanently deletes its values in all rows.
#[utoipa::path(delete, path = "/tables/{table_id}/columns/{column_id}", tag = "custom_tables",
    params(("table_id" = Uuid, Path, description = "The table"), ("column_id" = String, Path, description = "`col_<hex>`")),
    responses((status = 200, body = SuccessResponse)))]
async fn delete_column(caller: Caller, mount: Mount) -> ApiResult<Json<SuccessResponse>> {
    let table = open_table(&caller, &mount, Operation::ManageColumns).await?;
    let key = mount.param("column_id")?.to_string();
    if !table.columns.iter().any(|c| c.key == key) {
        return Err(ApiError::NotFound);
    }
    table.execute(TableCommand::DeleteColumn { key }).await?;
    Ok(Json(SuccessResponse {
        message: "Column deleted".into(),
    }))
}
