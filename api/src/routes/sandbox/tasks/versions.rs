//! Task versions: `GET/POST /tasks/{id}/versions`, `GET/PATCH .../versions/{vid}`,
//! `.../publish` and `.../archive`.

use super::views::*;
use super::{draft, output_policy};
use crate::access::{Task, TaskVersion as TaskVersionHandle, require_bundle_runner};
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiPath;
use crate::extract::{ApiJson, ApiQuery};
use crate::limits::company_limits;
use crate::pagination::LifecycleQuery;
use crate::request::Caller;
use crate::state::AppState;
use axum::Json;
use domain::environments::version::VersionState;
use domain::error::Code;
use domain::tasks::task::{Task as TaskAggregate, TaskCommand};
use domain::tasks::version::{
    TaskVersion, TaskVersionCommand, TaskVersionDrafted, TaskVersionState,
};
use domain::wire::wire;
use projections::read_models::environments::query as environments;
use projections::read_models::tasks::VersionRow;
use projections::read_models::tasks::query;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// The version routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_versions, create_version))
        .routes(routes!(get_version, update_version))
        .routes(routes!(publish_version))
        .routes(routes!(archive_version))
}

/// Versions of a task, newest first (borrowers never see drafts).
#[utoipa::path(get, path = "/tasks/{task_id}/versions", tag = "tasks",
    params(("task_id" = Uuid, Path), LifecycleQuery),
    responses((status = 200, body = SandboxTaskVersionListResponse)))]
async fn list_versions(
    caller: Caller,
    ApiPath(task_id): ApiPath<Uuid>,
    ApiQuery(query): ApiQuery<LifecycleQuery>,
) -> ApiResult<Json<SandboxTaskVersionListResponse>> {
    let task = Task::read(&caller, task_id).await?;
    let page = query.page(50)?;
    let (owner, lifecycle) = (task.owner(), query.lifecycle.unwrap_or_default());
    let versions = async |w| query::versions(caller.pool(), task_id, owner, lifecycle, w).await;
    let listed = page.fetch(versions, |r| r.version.version_number).await?;
    let viewer = task.viewer;
    Ok(Json(
        listed.map(|row| TaskVersionHandle { row, viewer }).into(),
    ))
}

/// Creates a draft version.
#[utoipa::path(post, path = "/tasks/{task_id}/versions", tag = "tasks",
    params(("task_id" = Uuid, Path)), request_body = SandboxTaskVersionRequest,
    responses((status = 200, body = SandboxTaskVersionResponse)))]
async fn create_version(
    caller: Caller,
    ApiPath(task_id): ApiPath<Uuid>,
    ApiJson(body): ApiJson<SandboxTaskVersionRequest>,
) -> ApiResult<Json<SandboxTaskVersionResponse>> {
    let task = Task::owned(&caller, task_id).await?;
    let contents = draft::create(&caller.state, &task, body).await?;
    let version_id = Uuid::new_v4();
    let command = TaskCommand::AllocateVersion { version_id };
    let allocated = caller.command::<TaskAggregate>(task_id, command).await?;
    let drafted = TaskVersionDrafted {
        version_id,
        task_id,
        company_id: task.row.task.company_id,
        version_number: allocated.state.version_count,
        contents,
    };
    let command = TaskVersionCommand::Draft(drafted);
    changed(&caller, &task, version_id, command).await
}

/// One version, in the caller's view.
#[utoipa::path(get, path = "/tasks/{task_id}/versions/{version_id}", tag = "tasks",
    params(("task_id" = Uuid, Path), ("version_id" = Uuid, Path)),
    responses((status = 200, body = SandboxTaskVersionResponse)))]
async fn get_version(
    caller: Caller,
    ApiPath((task_id, version_id)): ApiPath<(Uuid, Uuid)>,
) -> ApiResult<Json<SandboxTaskVersionResponse>> {
    let task = Task::read(&caller, task_id).await?;
    Ok(Json(task.version(&caller, version_id).await?.into()))
}

/// Changes a draft.
#[utoipa::path(patch, path = "/tasks/{task_id}/versions/{version_id}", tag = "tasks",
    params(("task_id" = Uuid, Path), ("version_id" = Uuid, Path)), request_body = SandboxTaskVersionRequest,
    responses((status = 200, body = SandboxTaskVersionResponse)))]
async fn update_version(
    caller: Caller,
    ApiPath((task_id, version_id)): ApiPath<(Uuid, Uuid)>,
    ApiJson(body): ApiJson<SandboxTaskVersionRequest>,
) -> ApiResult<Json<SandboxTaskVersionResponse>> {
    let task = Task::owned(&caller, task_id).await?;
    let version = draft_version(&caller, &task, version_id, "changed").await?;
    let contents = draft::update(&caller.state, &task, version.contents.0, body).await?;
    let command = TaskVersionCommand::Edit(contents);
    changed(&caller, &task, version_id, command).await
}

/// A draft version of the task: editing and publishing both start here, before
/// anything else they would refuse, so that a version that is no longer a draft
/// always answers the state conflict (409 naming what it cannot be; the aggregate
/// enforces it too).
async fn draft_version(
    caller: &Caller,
    task: &Task,
    version_id: Uuid,
    verb: &str,
) -> ApiResult<VersionRow> {
    let version = task.version(caller, version_id).await?.row.version;
    if version.state != TaskVersionState::Draft {
        return Err(ApiError::code(
            Code::IllegalStateTransition,
            format!("a {} task version cannot be {verb}", wire(&version.state)),
        ));
    }
    Ok(version)
}

/// Runs a command on a version of the task and answers the version as the caller
/// sees it afterwards.
pub async fn changed(
    caller: &Caller,
    task: &Task,
    version_id: Uuid,
    command: TaskVersionCommand,
) -> ApiResult<Json<SandboxTaskVersionResponse>> {
    caller.command::<TaskVersion>(version_id, command).await?;
    Ok(Json(task.version(caller, version_id).await?.into()))
}

/// Publishes a draft: its environment version must be `ready` and its timeout
/// within the company ceiling; it is immutable afterwards.
#[utoipa::path(post, path = "/tasks/{task_id}/versions/{version_id}/publish", tag = "tasks",
    params(("task_id" = Uuid, Path), ("version_id" = Uuid, Path)),
    responses((status = 200, body = SandboxTaskVersionResponse)))]
async fn publish_version(
    caller: Caller,
    ApiPath((task_id, version_id)): ApiPath<(Uuid, Uuid)>,
) -> ApiResult<Json<SandboxTaskVersionResponse>> {
    let task = Task::owned(&caller, task_id).await?;
    let version = draft_version(&caller, &task, version_id, "published").await?;
    let contents = &version.contents.0;
    let pinned =
        environments::version_with_environment(caller.pool(), contents.environment_version_id)
            .await?;
    if pinned.is_none_or(|(v, _)| v.state != VersionState::Ready) {
        return Err(ApiError::code(
            Code::EnvironmentVersionNotReady,
            "the environment version is not ready",
        ));
    }
    check_ceiling(
        &caller.state,
        caller.principal.company_id,
        contents.timeout_seconds,
    )
    .await?;
    require_bundle_runner(caller.pool(), contents).await?;
    output_policy::check_publish(&caller, &task, contents).await?;
    let command = TaskVersionCommand::Publish;
    changed(&caller, &task, version_id, command).await
}

/// Archives a version.
#[utoipa::path(post, path = "/tasks/{task_id}/versions/{version_id}/archive", tag = "tasks",
    params(("task_id" = Uuid, Path), ("version_id" = Uuid, Path)),
    responses((status = 200, body = SandboxTaskVersionResponse)))]
async fn archive_version(
    caller: Caller,
    ApiPath((task_id, version_id)): ApiPath<(Uuid, Uuid)>,
) -> ApiResult<Json<SandboxTaskVersionResponse>> {
    let task = Task::owned(&caller, task_id).await?;
    task.version(&caller, version_id).await?;
    let command = TaskVersionCommand::Archive;
    changed(&caller, &task, version_id, command).await
}

/// Refuses a timeout above the company's ceiling (checked at publish and by Quick
/// Run only).
pub async fn check_ceiling(state: &AppState, company: Uuid, timeout_seconds: i64) -> ApiResult<()> {
    let ceiling = company_limits(&state.pool, company)
        .await?
        .timeout_ceiling_seconds;
    if timeout_seconds > ceiling {
        return Err(ApiError::code(
            Code::TimeoutExceedsCeiling,
            format!("timeout_seconds {timeout_seconds} is above the company ceiling of {ceiling}"),
        )
        .with("ceiling", ceiling));
    }
    Ok(())
}
