//! `GET {scope_mount}/tables/{table_id}/trigger-runs`: a table's trigger runs,
//! newest first (table moderators).

use super::super::gates::Operation;
use super::super::records::window;
use super::super::scope::{Mount, open_table};
use crate::error::ApiResult;
use crate::extract::ApiQuery;
use crate::request::Caller;
use crate::state::AppState;
use axum::Json;
use chrono::{DateTime, Utc};
use projections::read_models::trigger_runs::query as runs;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// The trigger-runs route.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_runs))
}

/// A window of the list.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RunsQuery {
    /// Runs to skip (default 0).
    pub skip: Option<i64>,
    /// Runs to return (1..100, default 50).
    pub limit: Option<i64>,
}

/// One firing of a trigger.
#[derive(Debug, Serialize, ToSchema)]
pub struct TriggerRunResponse {
    /// The run.
    pub id: Uuid,
    /// The trigger.
    pub trigger_id: String,
    /// `pending`, `succeeded` or `failed`.
    pub status: String,
    /// The record it fired for.
    pub record_id: Option<Uuid>,
    /// The schedule window it serves.
    pub window_start: Option<DateTime<Utc>>,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// Why it failed.
    pub error: Option<String>,
}

/// A page of runs.
#[derive(Debug, Serialize, ToSchema)]
pub struct TriggerRunListResponse {
    /// Newest first.
    pub runs: Vec<TriggerRunResponse>,
    /// Runs of the table.
    pub total: i64,
}

/// The table's trigger runs, newest first.
#[utoipa::path(get, path = "/tables/{table_id}/trigger-runs", tag = "custom_tables",
    params(("table_id" = Uuid, Path, description = "The table"), RunsQuery),
    responses((status = 200, body = TriggerRunListResponse)))]
async fn list_runs(
    caller: Caller,
    mount: Mount,
    ApiQuery(query): ApiQuery<RunsQuery>,
) -> ApiResult<Json<TriggerRunListResponse>> {
    let table = open_table(&caller, &mount, Operation::ManageTable).await?;
    let (skip, limit) = window(query.skip, query.limit, "query")?;
    let (rows, total) = runs::of_table(caller.pool(), table.row.id, skip, limit).await?;
    Ok(Json(TriggerRunListResponse {
        runs: rows
            .into_iter()
            .map(|r| TriggerRunResponse {
                id: r.id,
                trigger_id: r.trigger_id,
                status: r.status,
                record_id: r.record_id,
                window_start: r.window_start,
                created_at: r.created_at,
                error: r.error,
            })
            .collect(),
        total,
    }))
}
