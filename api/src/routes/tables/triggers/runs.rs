//! `GET {scope_mount}/tables/{table_id}/trigger-runs`: a table's trigger runs,
//! newest first, and `POST {scope_mount}/trigger-runs/{run_id}/retry`: the frozen
//! definition of a finished run, run again (table moderators).

use super::super::gates::Operation;
use super::super::records::window;
use super::super::scope::{Mount, open_table, open_table_id};
use crate::admission;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiQuery;
use crate::request::Caller;
use crate::state::AppState;
use axum::Json;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use domain::error::Code;
use domain::tables::trigger::run::{RunCreated, TriggerRun, TriggerRunCommand};
use projections::read_models::trigger_runs::query::{self as runs, TriggerRunRow};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// The trigger-runs route.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_runs))
        .routes(routes!(retry_run))
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
    /// `pending`, `running` (waiting for the sandbox runs it submitted),
    /// `succeeded` or `failed`.
    pub status: String,
    /// The record it fired for.
    pub record_id: Option<Uuid>,
    /// The schedule window it serves.
    pub window_start: Option<DateTime<Utc>>,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// Why it failed.
    pub error: Option<String>,
    /// The sandbox runs its `run_sandbox_task` actions submitted.
    pub sandbox_run_ids: Vec<Uuid>,
}

impl From<TriggerRunRow> for TriggerRunResponse {
    fn from(r: TriggerRunRow) -> Self {
        Self {
            id: r.id,
            trigger_id: r.trigger_id,
            status: r.status,
            record_id: r.record_id,
            window_start: r.window_start,
            created_at: r.created_at,
            error: r.error,
            sandbox_run_ids: r.sandbox_run_ids,
        }
    }
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
        runs: rows.into_iter().map(TriggerRunResponse::from).collect(),
        total,
    }))
}

/// Runs the definition frozen in a finished run again, as a new run (it runs at
/// the next pass); 409 `trigger_run_active` while a run of the trigger is pending
/// or running.
#[utoipa::path(post, path = "/trigger-runs/{run_id}/retry", tag = "custom_tables",
    params(("run_id" = Uuid, Path, description = "A finished run")),
    responses((status = 201, body = TriggerRunResponse)))]
async fn retry_run(
    caller: Caller,
    mount: Mount,
) -> ApiResult<(StatusCode, Json<TriggerRunResponse>)> {
    let run_id = mount.uuid("run_id")?;
    let run = runs::run(caller.pool(), caller.principal.company_id, run_id)
        .await?
        .ok_or(ApiError::NotFound)?;
    let table = open_table_id(&caller, &mount, run.table_id, Operation::ManageTable).await?;
    // Retries of one trigger take turns: the next one finds this one's run active.
    let turn = format!("trigger-retry/{}/{}", table.row.id, run.trigger_id);
    let _turn = admission::lock(caller.pool(), caller.principal.company_id, &turn).await?;
    if runs::active(caller.pool(), table.row.id, &run.trigger_id).await? {
        return Err(ApiError::code(
            Code::TriggerRunActive,
            format!(
                "a run of trigger '{}' is still pending or running",
                run.trigger_id
            ),
        ));
    }
    let retry_id = Uuid::new_v4();
    let created = RunCreated {
        run_id: retry_id,
        company_id: run.company_id,
        table_id: run.table_id,
        trigger: run.definition.0,
        record_id: run.record_id,
        window_start: run.window_start,
        author: run.author,
    };
    caller
        .command::<TriggerRun>(retry_id, TriggerRunCommand::Create(Box::new(created)))
        .await?;
    let retried = runs::run(caller.pool(), caller.principal.company_id, retry_id)
        .await?
        .ok_or(ApiError::NotFound)?;
    Ok((StatusCode::CREATED, Json(TriggerRunResponse::from(retried))))
}
