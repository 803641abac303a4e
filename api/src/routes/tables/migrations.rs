//! Column data migrations: what a column change reports and
//! `GET /{scopeName}/migrations/{migration_id}/status`.
//!
//! A migration over more than `BACKGROUND_THRESHOLD` live records is planned by its
//! starting event and holds the table (other schema changes answer 423); the
//! background worker (`runtime::migrations`) rewrites the column and completes it,
//! and the table is free again. The request does not wait for the rows.

use super::column_schema::MigrationInfoResponse;
use super::gates::Operation;
use super::scope::{Mount, OpenTable, open_table_id};
use crate::error::{ApiError, ApiResult};
use crate::request::Caller;
use crate::runtime::migrations;
use crate::state::AppState;
use axum::Json;
use chrono::{DateTime, Utc};
use domain::tables::table::MigrationInfo;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// The status route (on each scope name, without a scope id).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(migration_status))
}

/// The `migration_info` of a started migration; starts the completion of a
/// background one.
pub async fn report(
    table: &OpenTable,
    info: &MigrationInfo,
    default_applied: bool,
    note: &str,
) -> ApiResult<MigrationInfoResponse> {
    let state = &table.caller.state;
    if info.background {
        state.runtime.spawn(migrations::complete(
            state.runtime.clone(),
            migrations::Migration {
                company_id: table.row.company_id,
                table_id: table.row.id,
                migration_id: info.migration_id,
                request_id: table.caller.ctx.request_id.clone(),
            },
        ));
        return Ok(MigrationInfoResponse {
            background_migration: true,
            migration_id: Some(info.migration_id),
            records_migrated: None,
            estimated_records: info.estimated_records,
            default_value_applied: default_applied,
            message: "the table is large: its records migrate in the background; poll the migration status".into(),
            note: Some(note.to_string()),
        });
    }
    let migrated: Option<Option<i64>> =
        sqlx::query_scalar("SELECT records_migrated FROM custom_table_migrations WHERE id = $1")
            .bind(info.migration_id)
            .fetch_optional(&state.pool)
            .await?;
    Ok(MigrationInfoResponse {
        background_migration: false,
        migration_id: Some(info.migration_id),
        records_migrated: migrated.flatten(),
        estimated_records: info.estimated_records,
        default_value_applied: default_applied,
        message: "records migrated".into(),
        note: Some(note.to_string()),
    })
}

/// The state of a migration.
#[derive(Debug, Serialize, ToSchema)]
pub struct MigrationStatusResponse {
    /// The migration.
    pub migration_id: Uuid,
    /// Its table.
    pub table_id: Uuid,
    /// The column it migrates.
    pub column_id: String,
    /// `default_fill`, `type_change` or `option_rename`.
    pub kind: String,
    /// `running` or `completed`.
    pub state: String,
    /// Whether it ran in the background.
    pub background: bool,
    /// Live records when it started.
    pub estimated_records: i64,
    /// Rows rewritten, once completed.
    pub records_migrated: Option<i64>,
    /// 0 while running, 1 when completed (the rows are rewritten by one statement).
    pub progress: f64,
    /// When it started.
    pub started_at: DateTime<Utc>,
    /// When it completed.
    pub completed_at: Option<DateTime<Utc>>,
}

#[derive(sqlx::FromRow)]
struct Row {
    id: Uuid,
    table_id: Uuid,
    column_key: String,
    kind: String,
    background: bool,
    estimated_records: i64,
    records_migrated: Option<i64>,
    started_at: DateTime<Utc>,
    completed_at: Option<DateTime<Utc>>,
}

/// Progress of a background migration. The table is found from the globally unique
/// migration id and the caller is re-authorized on its owning scope.
#[utoipa::path(get, path = "/migrations/{migration_id}/status", tag = "custom_tables",
    params(("migration_id" = Uuid, Path, description = "From `migration_info.migration_id`")),
    responses((status = 200, body = MigrationStatusResponse)))]
async fn migration_status(
    caller: Caller,
    mount: Mount,
) -> ApiResult<Json<MigrationStatusResponse>> {
    let migration_id = mount.uuid("migration_id")?;
    let row: Row = sqlx::query_as(
        "SELECT id, table_id, column_key, kind, background, estimated_records, records_migrated, started_at, completed_at
           FROM custom_table_migrations WHERE id = $1 AND company_id = $2",
    )
    .bind(migration_id)
    .bind(caller.principal.company_id)
    .fetch_optional(caller.pool())
    .await?
    .ok_or(ApiError::NotFound)?;
    open_table_id(&caller, &mount, row.table_id, Operation::ReadTable).await?;
    let done = row.completed_at.is_some();
    Ok(Json(MigrationStatusResponse {
        migration_id: row.id,
        table_id: row.table_id,
        column_id: row.column_key,
        kind: row.kind,
        state: if done { "completed" } else { "running" }.into(),
        background: row.background,
        estimated_records: row.estimated_records,
        records_migrated: row.records_migrated,
        progress: if done { 1.0 } else { 0.0 },
        started_at: row.started_at,
        completed_at: row.completed_at,
    }))
}
