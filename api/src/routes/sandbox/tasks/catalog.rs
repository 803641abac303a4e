//! The task resources: `GET/POST /tasks`, `GET/PATCH /tasks/{id}`,
//! `POST /tasks/{id}/archive`.

use super::access::{self, TASK_COLUMNS, TaskRow};
use super::views::*;
use crate::auth::Auth;
use crate::error::ApiResult;
use crate::extract::{ApiJson, ApiQuery};
use crate::pagination::{LifecycleQuery, finish};
use crate::request::Context;
use crate::routes::sandbox::environments::lifecycle_name;
use crate::routes::sandbox::owners::{check_text, no_fields, resolve_owner};
use crate::state::AppState;
use axum::Json;
use axum::extract::{Path, State};
use chrono::{DateTime, Utc};
use domain::runs::run::{Run, RunCommand};
use domain::tasks::task::{Task, TaskCommand, TaskCreated};
use domain::tasks::version::{TaskVersion, TaskVersionCommand};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// The task routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_tasks, create_task))
        .routes(routes!(get_task, update_task))
        .routes(routes!(archive_task))
}

/// Tasks of the caller's company, newest first (Quick Run parents never appear).
#[utoipa::path(get, path = "/tasks", tag = "tasks", params(LifecycleQuery),
    responses((status = 200, body = SandboxTaskListResponse)))]
async fn list_tasks(
    State(state): State<AppState>,
    Auth(principal): Auth,
    ApiQuery(query): ApiQuery<LifecycleQuery>,
) -> ApiResult<Json<SandboxTaskListResponse>> {
    let page = query.page::<(DateTime<Utc>, Uuid)>(50)?;
    let lifecycle = query.lifecycle.unwrap_or_default();
    let (after_time, after_id) = page
        .after
        .unwrap_or((DateTime::<Utc>::MAX_UTC, Uuid::max()));
    let rows: Vec<TaskRow> = sqlx::query_as(&format!(
        "SELECT {TASK_COLUMNS} FROM tasks t
          WHERE t.company_id = $1 AND NOT t.hidden
            AND ($2 = 'all' OR ($2 = 'active') = (t.lifecycle = 'active'))
            AND (t.created_at, t.id) < ($3, $4)
          ORDER BY t.created_at DESC, t.id DESC
          LIMIT $5"
    ))
    .bind(principal.company_id)
    .bind(lifecycle_name(lifecycle))
    .bind(after_time)
    .bind(after_id)
    .bind(page.size + 1)
    .fetch_all(&state.pool)
    .await?;
    let (rows, next_page_token) = finish(rows, page.size, |r| (r.created_at, r.id));
    Ok(Json(SandboxTaskListResponse {
        items: rows.into_iter().map(Into::into).collect(),
        next_page_token,
    }))
}

/// Creates a department- or company-owned task.
#[utoipa::path(post, path = "/tasks", tag = "tasks", request_body = SandboxTaskCreateRequest,
    responses((status = 200, body = SandboxTaskResponse),
              (status = 403, description = "owner_scope_forbidden"),
              (status = 422, description = "validation error (owner_scope chatroom included)")))]
async fn create_task(
    State(state): State<AppState>,
    ctx: Context,
    Auth(principal): Auth,
    ApiJson(body): ApiJson<SandboxTaskCreateRequest>,
) -> ApiResult<Json<SandboxTaskResponse>> {
    check_text(Some(&body.name), Some(&body.description))?;
    let owner_id = resolve_owner(&state, &principal, body.owner_scope, body.owner_id).await?;
    let id = Uuid::new_v4();
    let created = TaskCreated {
        task_id: id,
        company_id: principal.company_id,
        owner_scope: body.owner_scope,
        owner_id,
        name: body.name,
        description: body.description,
        agent_enabled: body.agent_enabled,
        hidden: false,
    };
    state
        .bus
        .execute::<Task>(
            &id.to_string(),
            TaskCommand::Create(created),
            &ctx.metadata(&principal),
        )
        .await?;
    Ok(Json(access::task(&state, &principal, id).await?.row.into()))
}

/// One task.
#[utoipa::path(get, path = "/tasks/{task_id}", tag = "tasks", params(("task_id" = Uuid, Path)),
    responses((status = 200, body = SandboxTaskResponse), (status = 404, description = "not found")))]
async fn get_task(
    State(state): State<AppState>,
    Auth(principal): Auth,
    Path(task_id): Path<Uuid>,
) -> ApiResult<Json<SandboxTaskResponse>> {
    Ok(Json(
        access::task(&state, &principal, task_id).await?.row.into(),
    ))
}

/// Changes name, description or the legacy flag (owner managers only).
#[utoipa::path(patch, path = "/tasks/{task_id}", tag = "tasks", params(("task_id" = Uuid, Path)),
    request_body = SandboxTaskUpdateRequest,
    responses((status = 200, body = SandboxTaskResponse), (status = 404, description = "not found"),
              (status = 409, description = "task_archived"), (status = 422, description = "no_fields")))]
async fn update_task(
    State(state): State<AppState>,
    ctx: Context,
    Auth(principal): Auth,
    Path(task_id): Path<Uuid>,
    ApiJson(body): ApiJson<SandboxTaskUpdateRequest>,
) -> ApiResult<Json<SandboxTaskResponse>> {
    access::owned_task(&state, &principal, task_id).await?;
    if body.name.is_none() && body.description.is_none() && body.agent_enabled.is_none() {
        return Err(no_fields());
    }
    check_text(body.name.as_deref(), body.description.as_deref())?;
    let command = TaskCommand::Update {
        name: body.name,
        description: body.description,
        agent_enabled: body.agent_enabled,
    };
    state
        .bus
        .execute::<Task>(&task_id.to_string(), command, &ctx.metadata(&principal))
        .await?;
    Ok(Json(
        access::task(&state, &principal, task_id).await?.row.into(),
    ))
}

/// Archives the task and every version of it, then cancels its queued runs.
/// Versions are archived first, so an interrupted archive can simply be repeated;
/// share records are kept, and the bindings stop applying (the `sharing` projection).
#[utoipa::path(post, path = "/tasks/{task_id}/archive", tag = "tasks", params(("task_id" = Uuid, Path)),
    responses((status = 200, body = SandboxTaskResponse), (status = 404, description = "not found"),
              (status = 409, description = "already_archived")))]
async fn archive_task(
    State(state): State<AppState>,
    ctx: Context,
    Auth(principal): Auth,
    Path(task_id): Path<Uuid>,
) -> ApiResult<Json<SandboxTaskResponse>> {
    let task = access::owned_task(&state, &principal, task_id).await?;
    let meta = ctx.metadata(&principal);
    if task.row.lifecycle == "active" {
        let live: Vec<Uuid> = sqlx::query_scalar(
            "SELECT id FROM task_versions WHERE task_id = $1 AND state <> 'archived' ORDER BY version_number",
        )
        .bind(task_id)
        .fetch_all(&state.pool)
        .await?;
        for version_id in live {
            state
                .bus
                .execute::<TaskVersion>(&version_id.to_string(), TaskVersionCommand::Archive, &meta)
                .await?;
        }
    }
    state
        .bus
        .execute::<Task>(&task_id.to_string(), TaskCommand::Archive, &meta)
        .await?;
    let queued: Vec<Uuid> =
        sqlx::query_scalar("SELECT id FROM runs WHERE task_id = $1 AND status = 'queued'")
            .bind(task_id)
            .fetch_all(&state.pool)
            .await?;
    for run_id in queued {
        // A run a worker claimed meanwhile runs to its end.
        let _ = state
            .bus
            .execute::<Run>(&run_id.to_string(), RunCommand::Cancel, &meta)
            .await;
    }
    Ok(Json(
        access::task(&state, &principal, task_id).await?.row.into(),
    ))
}
