//! Share grants of a task (`/tasks/{id}/shares`): the owner shares a task with a
//! live room, department or the company of its own company, lists the grants
//! (every lifecycle by default) and revokes them. One grant per task and target is
//! live at a time; the Share aggregate keyed by the target makes that race-free.

use crate::access::{ShareGrant, Task, not_runnable};
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiPath;
use crate::extract::{ApiJson, ApiQuery, OptionalJson};
use crate::pagination::{LifecycleFilter, LifecycleQuery};
use crate::request::Caller;
use crate::routes::sandbox::bindings::check_reason;
use crate::routes::sandbox::bindings::views::*;
use crate::state::AppState;
use axum::Json;
use domain::error::Code;
use domain::sharing::policy::parse_policies;
use domain::sharing::share::{Share, ShareCommand, ShareTargetKind, share_id};
use projections::read_models::directory::query as directory;
use projections::read_models::sharing::query as sharing;
use projections::read_models::tasks::query as tasks;
use serde_json::json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// The share routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_shares, create_share))
        .routes(routes!(revoke_share))
}

async fn grant(state: &AppState, task: Uuid, id: Uuid) -> ApiResult<SandboxShareGrantResponse> {
    sharing::grant(&state.pool, task, id)
        .await?
        .map(Into::into)
        .ok_or(ApiError::NotFound)
}

/// Whether the target is live in the caller's company.
async fn target_is_live(caller: &Caller, kind: ShareTargetKind, id: Uuid) -> ApiResult<bool> {
    let company = caller.principal.company_id;
    Ok(match kind {
        ShareTargetKind::Company => id == company,
        ShareTargetKind::Department => {
            directory::department_in_company(caller.pool(), company, id).await?
        }
        ShareTargetKind::Chatroom => {
            directory::live_room_in_company(caller.pool(), company, id).await?
        }
    })
}

/// The task's grants, newest first (`lifecycle=all` by default).
#[utoipa::path(get, path = "/tasks/{task_id}/shares", tag = "tasks",
    params(("task_id" = Uuid, Path), LifecycleQuery),
    responses((status = 200, body = SandboxShareGrantListResponse)))]
async fn list_shares(
    caller: Caller,
    ApiPath(task_id): ApiPath<Uuid>,
    ApiQuery(query): ApiQuery<LifecycleQuery>,
) -> ApiResult<Json<SandboxShareGrantListResponse>> {
    let page = query.page(20)?;
    Task::owned(&caller, task_id).await?;
    let lifecycle = query.lifecycle.unwrap_or(LifecycleFilter::All);
    let grants = async |w| sharing::grants(caller.pool(), task_id, lifecycle, w).await;
    let listed = page.fetch(grants, |r| (r.created_at, r.id)).await?;
    Ok(Json(listed.into()))
}

/// Shares the task with a live room, department or the company (owners only).
#[utoipa::path(post, path = "/tasks/{task_id}/shares", tag = "tasks",
    params(("task_id" = Uuid, Path)), request_body = SandboxShareCreateRequest,
    responses((status = 200, body = SandboxShareGrantResponse)))]
async fn create_share(
    caller: Caller,
    ApiPath(task_id): ApiPath<Uuid>,
    ApiJson(body): ApiJson<SandboxShareCreateRequest>,
) -> ApiResult<Json<SandboxShareGrantResponse>> {
    let task = Task::owned(&caller, task_id).await?;
    let secret_slot_policies =
        parse_policies(body.secret_slot_policies.as_ref()).map_err(|problems| {
            ApiError::code(Code::SecretSlotPoliciesInvalid, "secret_slot_policies must map at most 100 valid slot names to borrower, owner or owner_overridable",
            )
            .with("errors", json!(problems))
        })?;
    task.require_enableable()?;
    if !target_is_live(&caller, body.target_kind, body.target_id).await? {
        return Err(ApiError::NotFound);
    }
    if !tasks::has_runnable_version(caller.pool(), task_id).await? {
        return Err(not_runnable());
    }
    let aggregate = share_id(task_id, body.target_kind, body.target_id);
    let command = ShareCommand::Grant {
        task_id,
        company_id: task.row.task.company_id,
        target_kind: body.target_kind,
        target_id: body.target_id,
        secret_slot_policies,
    };
    let committed = caller.command::<Share>(aggregate, command).await?;
    let id = committed.state.live.ok_or(ApiError::NotFound)?;
    Ok(Json(grant(&caller.state, task_id, id).await?))
}

/// Revokes a live grant; the bindings it carried stop applying.
#[utoipa::path(post, path = "/tasks/{task_id}/shares/{grant_id}/revoke", tag = "tasks",
    params(("task_id" = Uuid, Path), ("grant_id" = Uuid, Path)), request_body = SandboxRevokeRequest,
    responses((status = 200, body = SandboxShareGrantResponse)))]
async fn revoke_share(
    caller: Caller,
    ApiPath((task_id, grant_id)): ApiPath<(Uuid, Uuid)>,
    OptionalJson(body): OptionalJson<SandboxRevokeRequest>,
) -> ApiResult<Json<SandboxShareGrantResponse>> {
    let current = ShareGrant::owned(&caller, task_id, grant_id).await?;
    let reason = check_reason(&body.reason)?;
    let aggregate = share_id(task_id, current.row.target_kind, current.row.target_id);
    let command = ShareCommand::Revoke { grant_id, reason };
    caller.command::<Share>(aggregate, command).await?;
    Ok(Json(grant(&caller.state, task_id, grant_id).await?))
}
