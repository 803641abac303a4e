//! Run management queries: `GET /runs` (every room the caller can see, filtered,
//! with a total and a keyset cursor) and the per-task run history for company
//! managers (`GET /tasks/{id}/runs` and `/numOfData`, offset paging).

use super::detail::details;
use super::lifecycle::status_filter;
use super::views::SandboxRunListResponse;
use crate::access::{Task, require_company_manager};
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiPath;
use crate::extract::ApiQuery;
use crate::openapi::enums::RunStatusNames;
use crate::pagination::PageQuery;
use crate::request::Caller;
use crate::state::AppState;
use axum::Json;
use chrono::{DateTime, Utc};
use domain::validation::ViolationKind;
use domain::wire::wire;
use projections::read_models::runs::query::{self as runs, HistoryFilters, HistoryRow, RunFilters};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// The history routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_all_runs))
        .routes(routes!(task_runs))
        .routes(routes!(task_runs_count))
}

/// Query of `GET /runs`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AllRunsQuery {
    /// Items per page, 1..100 (default 20).
    pub page_size: Option<i64>,
    /// Opaque cursor (pass back unchanged).
    pub page_token: Option<String>,
    /// Repeatable room filter.
    #[serde(rename = "chatroom_id[]", alias = "chatroom_id", default)]
    pub chatroom_id: Vec<Uuid>,
    /// Repeatable task filter.
    #[serde(rename = "task_id[]", alias = "task_id", default)]
    pub task_id: Vec<Uuid>,
    /// Repeatable status filter.
    #[serde(rename = "status[]", alias = "status", default)]
    #[param(value_type = Vec<RunStatusNames>, inline)]
    pub status: Vec<String>,
    /// Only the caller's own submissions.
    #[serde(default)]
    pub submitted_by_me: bool,
    /// Queued at or after.
    pub queued_after: Option<DateTime<Utc>>,
    /// Queued before.
    pub queued_before: Option<DateTime<Utc>>,
}

/// `GET /runs` response: a page, the total and the cursor.
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxAllRunsResponse {
    /// Newest first.
    #[serde(flatten)]
    pub page: SandboxRunListResponse,
    /// Runs matching the filters.
    pub total: i64,
}

/// Runs of every room the caller can see, newest first.
#[utoipa::path(get, path = "/runs", tag = "runs", params(AllRunsQuery),
    responses((status = 200, body = SandboxAllRunsResponse)))]
async fn list_all_runs(
    caller: Caller,
    ApiQuery(query): ApiQuery<AllRunsQuery>,
) -> ApiResult<Json<SandboxAllRunsResponse>> {
    let page = PageQuery {
        page_size: query.page_size,
        page_token: query.page_token.clone(),
    }
    .page(20)?;
    let filters = RunFilters {
        rooms: query.chatroom_id,
        tasks: query.task_id,
        statuses: status_filter(&query.status)?,
        submitted_by_me: query.submitted_by_me,
        queued_after: query.queued_after,
        queued_before: query.queued_before,
    };
    let visible = async |w| runs::visible_runs(caller.pool(), &caller.principal, &filters, w).await;
    let listed = page.fetch(visible, |r| (r.queued_at, r.id)).await?;
    let total = runs::visible_run_count(caller.pool(), &caller.principal, &filters).await?;
    Ok(Json(SandboxAllRunsResponse {
        page: details(&caller.state, listed).await?,
        total,
    }))
}

/// Filters of the per-task history.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TaskRunsQuery {
    /// Rows to skip.
    pub offset: Option<i64>,
    /// Rows, 1..100 (default 10).
    pub limit: Option<i64>,
    /// `desc` (default, newest first) or `asc`.
    pub order: Option<String>,
    /// Run status.
    #[param(value_type = Option<RunStatusNames>, inline)]
    pub status: Option<String>,
    /// `agent` or `manual` (rest, quick_run and custom_table_trigger).
    pub method: Option<String>,
    /// `internal_user` or `external_user`.
    pub executor_kind: Option<String>,
    /// `chatroom`, `department` or `external_platform`.
    pub source_kind: Option<String>,
    /// The room's department.
    pub department_id: Option<Uuid>,
    /// The room.
    pub chatroom_id: Option<Uuid>,
}

/// One row of a task's run history.
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxTaskRunHistoryItem {
    /// The run.
    pub run_id: Uuid,
    /// Its room.
    pub chatroom_id: Uuid,
    /// The room's name.
    pub chatroom_name: Option<String>,
    /// The room's department.
    pub department_id: Option<Uuid>,
    /// Status.
    pub status: String,
    /// `agent` or `manual`.
    pub method: String,
    /// `internal_user` or `external_user`.
    pub executor_kind: String,
    /// `chatroom`, `department` or `external_platform`.
    pub source_kind: String,
    /// Who submitted it.
    pub principal_id: Uuid,
    /// `rest`, `agent`, `quick_run` or `custom_table_trigger`.
    pub submission_source: String,
    /// The version.
    pub task_version_id: Uuid,
    /// Why it did not complete.
    pub error_code: Option<String>,
    /// Queued.
    pub queued_at: DateTime<Utc>,
    /// Ended.
    pub terminal_at: Option<DateTime<Utc>>,
}

/// `NumOfData`.
#[derive(Debug, Serialize, ToSchema)]
pub struct NumOfData {
    /// Matching rows.
    pub num: i64,
}

impl From<HistoryRow> for SandboxTaskRunHistoryItem {
    fn from(row: HistoryRow) -> Self {
        Self {
            run_id: row.run_id,
            chatroom_id: row.chatroom_id,
            chatroom_name: row.chatroom_name,
            department_id: row.department_id,
            status: wire(&row.status),
            method: row.method,
            executor_kind: row.executor_kind,
            source_kind: row.source_kind,
            principal_id: row.principal_id,
            submission_source: wire(&row.submission_source),
            task_version_id: row.task_version_id,
            error_code: row.error_code,
            queued_at: row.queued_at,
            terminal_at: row.terminal_at,
        }
    }
}

impl TaskRunsQuery {
    fn filters(&self) -> HistoryFilters {
        HistoryFilters {
            status: self.status.clone(),
            method: self.method.clone(),
            executor_kind: self.executor_kind.clone(),
            source_kind: self.source_kind.clone(),
            department_id: self.department_id,
            chatroom_id: self.chatroom_id,
        }
    }
}

fn check_choice(field: &str, value: &Option<String>, allowed: &[&str]) -> ApiResult<()> {
    match value {
        Some(v) if !allowed.contains(&v.as_str()) => Err(ApiError::invalid(
            &["query", field],
            ViolationKind::Enum(allowed.iter().map(|s| s.to_string()).collect()),
            Some(v.clone().into()),
        )),
        _ => Ok(()),
    }
}

/// The task a company manager reads the history of.
async fn history_task(caller: &Caller, id: Uuid, query: &TaskRunsQuery) -> ApiResult<()> {
    require_company_manager(&caller.principal)?;
    Task::read(caller, id).await?;
    check_choice("method", &query.method, &["agent", "manual"])?;
    check_choice(
        "executor_kind",
        &query.executor_kind,
        &["internal_user", "external_user"],
    )?;
    check_choice(
        "source_kind",
        &query.source_kind,
        &["chatroom", "department", "external_platform"],
    )?;
    check_choice("order", &query.order, &["asc", "desc"])?;
    if let Some(status) = &query.status {
        status_filter(std::slice::from_ref(status))?;
    }
    Ok(())
}

/// The task's run history (company managers).
#[utoipa::path(get, path = "/tasks/{task_id}/runs", tag = "tasks",
    params(("task_id" = Uuid, Path), TaskRunsQuery),
    responses((status = 200, body = Vec<SandboxTaskRunHistoryItem>)))]
async fn task_runs(
    caller: Caller,
    ApiPath(task_id): ApiPath<Uuid>,
    ApiQuery(query): ApiQuery<TaskRunsQuery>,
) -> ApiResult<Json<Vec<SandboxTaskRunHistoryItem>>> {
    history_task(&caller, task_id, &query).await?;
    let limit = query.limit.unwrap_or(10);
    let offset = query.offset.unwrap_or(0);
    if !(1..=100).contains(&limit) {
        return Err(ApiError::invalid(
            &["query", "limit"],
            ViolationKind::LessThanEqual(100),
            Some(limit.into()),
        ));
    }
    if offset < 0 {
        return Err(ApiError::invalid(
            &["query", "offset"],
            ViolationKind::GreaterThanEqual(0),
            Some(offset.into()),
        ));
    }
    let ascending = query.order.as_deref() == Some("asc");
    let rows = runs::history(
        caller.pool(),
        task_id,
        &query.filters(),
        ascending,
        offset,
        limit,
    )
    .await?;
    Ok(Json(rows.into_iter().map(Into::into).collect()))
}

/// How many rows the task's run history has with these filters.
#[utoipa::path(get, path = "/tasks/{task_id}/runs/numOfData", tag = "tasks",
    params(("task_id" = Uuid, Path), TaskRunsQuery),
    responses((status = 200, body = NumOfData)))]
async fn task_runs_count(
    caller: Caller,
    ApiPath(task_id): ApiPath<Uuid>,
    ApiQuery(query): ApiQuery<TaskRunsQuery>,
) -> ApiResult<Json<NumOfData>> {
    history_task(&caller, task_id, &query).await?;
    let num = runs::history_count(caller.pool(), task_id, &query.filters()).await?;
    Ok(Json(NumOfData { num }))
}
