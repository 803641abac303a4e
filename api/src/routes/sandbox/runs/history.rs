//! Run management queries: `GET /runs` (every room the caller can see, filtered,
//! with a total and a keyset cursor) and the per-task run history for company
//! managers (`GET /tasks/{id}/runs` and `/numOfData`, offset paging).

use super::access::{RUN_COLUMNS, RunRow, detail};
use super::views::SandboxRunListResponse;
use crate::auth::Auth;
use crate::authz::require_company_manager;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiQuery;
use crate::pagination::{PageQuery, finish};
use crate::routes::sandbox::tasks::access::task;
use crate::state::AppState;
use axum::Json;
use axum::extract::{Path, State};
use chrono::{DateTime, Utc};
use domain::principal::Principal;
use domain::validation::ViolationKind;
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

/// The SQL condition (over `runs r`) of the rooms principal `$1`/`$2`/`$3`
/// (company, id, kind) can see: every room for a company manager, else the rooms it
/// is a member or manager of, or whose department it manages.
const VISIBLE: &str = "r.company_id = $1 AND ($4 OR r.chatroom_id IN (
        SELECT c.id FROM chatrooms c WHERE c.company_id = $1 AND (
            EXISTS (SELECT 1 FROM chatroom_members m WHERE m.chatroom_id = c.id
                      AND m.member_kind = $3 AND m.member_id = $2 AND (m.is_member OR m.is_manager))
         OR ($3 = 'user' AND EXISTS (SELECT 1 FROM department_members d
                      WHERE d.department_id = c.department_id AND d.user_id = $2 AND d.is_manager)))))";

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

const FILTERS: &str = "(cardinality($5::uuid[]) = 0 OR r.chatroom_id = ANY($5))
    AND (cardinality($6::uuid[]) = 0 OR r.task_id = ANY($6))
    AND (cardinality($7::text[]) = 0 OR r.status = ANY($7))
    AND (NOT $8 OR (r.principal_type = $3 AND r.principal_id = $2))
    AND ($9::timestamptz IS NULL OR r.queued_at >= $9)
    AND ($10::timestamptz IS NULL OR r.queued_at < $10)";

/// Runs of every room the caller can see, newest first.
#[utoipa::path(get, path = "/runs", tag = "runs", params(AllRunsQuery),
    responses((status = 200, body = SandboxAllRunsResponse)))]
async fn list_all_runs(
    State(state): State<AppState>,
    Auth(principal): Auth,
    ApiQuery(query): ApiQuery<AllRunsQuery>,
) -> ApiResult<Json<SandboxAllRunsResponse>> {
    let page = PageQuery {
        page_size: query.page_size,
        page_token: query.page_token.clone(),
    }
    .page::<(DateTime<Utc>, Uuid)>(20)?;
    let (after_time, after_id) = page
        .after
        .unwrap_or((DateTime::<Utc>::MAX_UTC, Uuid::max()));
    let sql = format!(
        "SELECT {} FROM runs r WHERE {VISIBLE} AND {FILTERS} AND (r.queued_at, r.id) < ($11, $12)
          ORDER BY r.queued_at DESC, r.id DESC LIMIT $13",
        RUN_COLUMNS
            .split(", ")
            .map(|c| format!("r.{c}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let rows: Vec<RunRow> = sqlx::query_as(&sql)
        .bind(principal.company_id)
        .bind(principal.principal_id)
        .bind(principal.principal_type.as_str())
        .bind(principal.is_company_manager())
        .bind(&query.chatroom_id)
        .bind(&query.task_id)
        .bind(&query.status)
        .bind(query.submitted_by_me)
        .bind(query.queued_after)
        .bind(query.queued_before)
        .bind(after_time)
        .bind(after_id)
        .bind(page.size + 1)
        .fetch_all(&state.pool)
        .await?;
    let total: i64 = sqlx::query_scalar(&format!(
        "SELECT count(*) FROM runs r WHERE {VISIBLE} AND {FILTERS}"
    ))
    .bind(principal.company_id)
    .bind(principal.principal_id)
    .bind(principal.principal_type.as_str())
    .bind(principal.is_company_manager())
    .bind(&query.chatroom_id)
    .bind(&query.task_id)
    .bind(&query.status)
    .bind(query.submitted_by_me)
    .bind(query.queued_after)
    .bind(query.queued_before)
    .fetch_one(&state.pool)
    .await?;
    let (rows, next_page_token) = finish(rows, page.size, |r| (r.queued_at, r.id));
    let mut items = Vec::with_capacity(rows.len());
    for row in rows {
        items.push(detail(&state, row).await?);
    }
    Ok(Json(SandboxAllRunsResponse {
        page: SandboxRunListResponse {
            items,
            next_page_token,
        },
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
#[derive(Debug, Serialize, ToSchema, sqlx::FromRow)]
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

/// The derived columns of the history (over `runs r LEFT JOIN chatrooms c`).
const HISTORY_FROM: &str = "(SELECT r.id AS run_id, r.chatroom_id, c.name AS chatroom_name,
        c.department_id, r.status,
        CASE WHEN r.submission_source = 'agent' THEN 'agent' ELSE 'manual' END AS method,
        CASE WHEN r.principal_type = 'user' THEN 'internal_user' ELSE 'external_user' END AS executor_kind,
        CASE WHEN r.principal_type = 'social_media_client' THEN 'external_platform'
             WHEN c.department_id IS NOT NULL THEN 'department' ELSE 'chatroom' END AS source_kind,
        r.principal_id, r.submission_source, r.task_version_id, r.error_code, r.queued_at, r.terminal_at
       FROM runs r LEFT JOIN chatrooms c ON c.id = r.chatroom_id
      WHERE r.task_id = $1) h";

const HISTORY_FILTERS: &str = "($2::text IS NULL OR h.status = $2)
    AND ($3::text IS NULL OR h.method = $3)
    AND ($4::text IS NULL OR h.executor_kind = $4)
    AND ($5::text IS NULL OR h.source_kind = $5)
    AND ($6::uuid IS NULL OR h.department_id = $6)
    AND ($7::uuid IS NULL OR h.chatroom_id = $7)";

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
async fn history_task(
    state: &AppState,
    principal: &Principal,
    id: Uuid,
    query: &TaskRunsQuery,
) -> ApiResult<()> {
    require_company_manager(principal)?;
    task(state, principal, id).await?;
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
    Ok(())
}

/// The task's run history (company managers).
#[utoipa::path(get, path = "/tasks/{task_id}/runs", tag = "tasks",
    params(("task_id" = Uuid, Path), TaskRunsQuery),
    responses((status = 200, body = Vec<SandboxTaskRunHistoryItem>),
              (status = 403, description = "Insufficient permissions."), (status = 404, description = "not found")))]
async fn task_runs(
    State(state): State<AppState>,
    Auth(principal): Auth,
    Path(task_id): Path<Uuid>,
    ApiQuery(query): ApiQuery<TaskRunsQuery>,
) -> ApiResult<Json<Vec<SandboxTaskRunHistoryItem>>> {
    history_task(&state, &principal, task_id, &query).await?;
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
    let order = if query.order.as_deref() == Some("asc") {
        "ASC"
    } else {
        "DESC"
    };
    let rows: Vec<SandboxTaskRunHistoryItem> = sqlx::query_as(&format!(
        "SELECT * FROM {HISTORY_FROM} WHERE {HISTORY_FILTERS}
          ORDER BY h.queued_at {order}, h.run_id {order} OFFSET $8 LIMIT $9"
    ))
    .bind(task_id)
    .bind(&query.status)
    .bind(&query.method)
    .bind(&query.executor_kind)
    .bind(&query.source_kind)
    .bind(query.department_id)
    .bind(query.chatroom_id)
    .bind(offset)
    .bind(limit)
    .fetch_all(&state.pool)
    .await?;
    Ok(Json(rows))
}

/// How many rows the task's run history has with these filters.
#[utoipa::path(get, path = "/tasks/{task_id}/runs/numOfData", tag = "tasks",
    params(("task_id" = Uuid, Path), TaskRunsQuery),
    responses((status = 200, body = NumOfData),
              (status = 403, description = "Insufficient permissions."), (status = 404, description = "not found")))]
async fn task_runs_count(
    State(state): State<AppState>,
    Auth(principal): Auth,
    Path(task_id): Path<Uuid>,
    ApiQuery(query): ApiQuery<TaskRunsQuery>,
) -> ApiResult<Json<NumOfData>> {
    history_task(&state, &principal, task_id, &query).await?;
    let num: i64 = sqlx::query_scalar(&format!(
        "SELECT count(*) FROM {HISTORY_FROM} WHERE {HISTORY_FILTERS}"
    ))
    .bind(task_id)
    .bind(&query.status)
    .bind(&query.method)
    .bind(&query.executor_kind)
    .bind(&query.source_kind)
    .bind(query.department_id)
    .bind(query.chatroom_id)
    .fetch_one(&state.pool)
    .await?;
    Ok(Json(NumOfData { num }))
}
