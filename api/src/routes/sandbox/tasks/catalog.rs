//! The task resources: `GET/POST /tasks`, `GET/PATCH /tasks/{id}`,
//! `POST /tasks/{id}/archive`.

use super::views::*;
use crate::access::Task;
use crate::access::scope::resolve_owner;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiPath;
use crate::extract::{ApiJson, ApiQuery};
use crate::pagination::LifecycleQuery;
use crate::request::Caller;
use crate::routes::sandbox::owners::{check_text, no_fields};
use crate::state::AppState;
use axum::Json;
use domain::environments::environment::Lifecycle;
use domain::error::Code;
use domain::runs::run::{Run, RunCommand};
use domain::tasks::task::{Task as TaskAggregate, TaskCommand, TaskCreated};
use domain::tasks::version::{TaskVersion, TaskVersionCommand};
use projections::read_models::runs::query as runs;
use projections::read_models::tasks::query;
use projections::store::CommandError;
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
    caller: Caller,
    ApiQuery(query): ApiQuery<LifecycleQuery>,
) -> ApiResult<Json<SandboxTaskListResponse>> {
    let page = query.page(50)?;
    let (company, lifecycle) = (
        caller.principal.company_id,
        query.lifecycle.unwrap_or_default(),
    );
    let tasks = async |w| query::tasks(caller.pool(), company, lifecycle, w).await;
    let listed = page
        .fetch(tasks, |r| (r.task.created_at, r.task.id))
        .await?;
    Ok(Json(listed.into()))
}

/// Creates a department- or company-owned task.
#[utoipa::path(post, path = "/tasks", tag = "tasks", request_body = SandboxTaskCreateRequest,
    responses((status = 200, body = SandboxTaskResponse)))]
async fn create_task(
    caller: Caller,
    ApiJson(body): ApiJson<SandboxTaskCreateRequest>,
) -> ApiResult<Json<SandboxTaskResponse>> {
    if body.chatroom_id.is_some() {
        return Err(ApiError::code(
            Code::ChatroomOwnerScopeRemoved,
            "chatroom-owned tasks were removed: create the task for a department or the company and share it into the room",
        ));
    }
    check_text(Some(&body.name), Some(&body.description))?;
    let owner_id = resolve_owner(&caller, body.owner_scope, body.owner_id).await?;
    let id = Uuid::new_v4();
    let created = TaskCreated {
        task_id: id,
        company_id: caller.principal.company_id,
        owner_scope: body.owner_scope,
        owner_id,
        name: body.name,
        description: body.description,
        agent_enabled: body.agent_enabled,
        hidden: false,
    };
    let command = TaskCommand::Create(created);
    changed(&caller, id, command).await
}

/// One task.
#[utoipa::path(get, path = "/tasks/{task_id}", tag = "tasks", params(("task_id" = Uuid, Path)),
    responses((status = 200, body = SandboxTaskResponse)))]
async fn get_task(
    caller: Caller,
    ApiPath(task_id): ApiPath<Uuid>,
) -> ApiResult<Json<SandboxTaskResponse>> {
    Ok(Json(Task::read(&caller, task_id).await?.row.into()))
}

/// Changes name, description or the legacy flag (owner managers only).
#[utoipa::path(patch, path = "/tasks/{task_id}", tag = "tasks", params(("task_id" = Uuid, Path)),
    request_body = SandboxTaskUpdateRequest,
    responses((status = 200, body = SandboxTaskResponse)))]
async fn update_task(
    caller: Caller,
    ApiPath(task_id): ApiPath<Uuid>,
    ApiJson(body): ApiJson<SandboxTaskUpdateRequest>,
) -> ApiResult<Json<SandboxTaskResponse>> {
    Task::owned(&caller, task_id).await?;
    if body.name.is_none() && body.description.is_none() && body.agent_enabled.is_none() {
        return Err(no_fields());
    }
    check_text(body.name.as_deref(), body.description.as_deref())?;
    let command = TaskCommand::Update {
        name: body.name,
        description: body.description,
        agent_enabled: body.agent_enabled,
    };
    changed(&caller, task_id, command).await
}

/// Archives the task and every version of it, then cancels its queued runs.
/// Versions are archived first, so an interrupted archive can simply be repeated;
/// share records are kept, and the bindings stop applying (the `sharing` projection).
#[utoipa::path(post, path = "/tasks/{task_id}/archive", tag = "tasks", params(("task_id" = Uuid, Path)),
    responses((status = 200, body = SandboxTaskResponse)))]
async fn archive_task(
    caller: Caller,
    ApiPath(task_id): ApiPath<Uuid>,
) -> ApiResult<Json<SandboxTaskResponse>> {
    let task = Task::owned(&caller, task_id).await?;
    if task.row.task.lifecycle == Lifecycle::Active {
        for version_id in query::unarchived_version_ids(caller.pool(), task_id).await? {
            caller
                .command::<TaskVersion>(version_id, TaskVersionCommand::Archive)
                .await?;
        }
    }
    caller
        .command::<TaskAggregate>(task_id, TaskCommand::Archive)
        .await?;
    for run_id in runs::queued_of_task(caller.pool(), task_id).await? {
        cancel_queued(&caller, run_id).await?;
    }
    Ok(Json(Task::read(&caller, task_id).await?.row.into()))
}

/// Cancels a run that was queued. A run a worker claimed meanwhile runs to its end
/// (the refusal is its answer); a concurrent change to the run is tried again, so
/// no queued run outlives the archive unnoticed.
async fn cancel_queued(caller: &Caller, run_id: Uuid) -> ApiResult<()> {
    let id = run_id.to_string();
    let metadata = caller.metadata();
    let mut attempts = 0;
    loop {
        attempts += 1;
        match caller
            .state
            .bus
            .execute::<Run>(&id, RunCommand::Cancel, &metadata)
            .await
        {
            Ok(_) => return Ok(()),
            // Ended or claimed meanwhile (the executor cancels a queued run whose
            // version was archived): answer once the read models show that.
            Err(CommandError::Rejected(_)) => {
                caller
                    .state
                    .bus
                    .settle::<Run>(&id)
                    .await
                    .map_err(ApiError::from)?;
                return Ok(());
            }
            Err(CommandError::Conflict) if attempts < 5 => continue,
            Err(error) => return Err(error.into()),
        }
    }
}

/// Runs a command on a task and answers it as it stands afterwards.
async fn changed(
    caller: &Caller,
    id: Uuid,
    command: TaskCommand,
) -> ApiResult<Json<SandboxTaskResponse>> {
    caller.command::<TaskAggregate>(id, command).await?;
    Ok(Json(Task::read(caller, id).await?.row.into()))
}
