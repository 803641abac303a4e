//! Bindings (spec section 4, prefix `/bindings`): the room enablement of a shared
//! task at an exact version. Room managers (the chatroom manager ladder) create,
//! re-pin and revoke them; the task's owners and the room's managers read them.

mod consent;
pub mod enablement;
pub mod resolved;
pub mod views;

use crate::access::{Binding, Room, Task};
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiPath;
use crate::extract::{ApiJson, OptionalJson};
use crate::request::Caller;
use crate::state::AppState;
use axum::Json;
use domain::error::Code;
use domain::secrets::owner_consumer;
use domain::sharing::binding::{
    Binding as BindingAggregate, BindingCommand, BindingState, binding_aggregate_id,
};
use domain::validation::Violations;
use enablement::{enable, pin};
use projections::read_models::sharing::query::{self as sharing, BindingRow};
use projections::read_models::tasks::query as tasks;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;
use views::*;

/// The `/bindings` routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_binding))
        .routes(routes!(get_binding))
        .routes(routes!(accept_version))
        .routes(routes!(revoke_binding))
}

/// The binding, or the refusal of a change to a revoked one.
fn enabled(row: BindingRow) -> ApiResult<BindingRow> {
    if row.state == BindingState::Enabled {
        Ok(row)
    } else {
        Err(ApiError::code(
            Code::IllegalStateTransition,
            "the binding is revoked",
        ))
    }
}

/// Checks a revoke reason (up to 512 characters).
pub fn check_reason(reason: &Option<String>) -> ApiResult<String> {
    let reason = reason.clone().unwrap_or_default();
    let mut violations = Violations::new();
    violations.length("reason", &reason, 0, 512);
    violations
        .into_result()
        .map_err(|v| ApiError::Validation(v.0))?;
    Ok(reason)
}

/// Enables a task in a room at an exact version (409 `binding_already_live` when a
/// binding of the task in the room is live).
#[utoipa::path(post, path = "/bindings", tag = "bindings", request_body = SandboxBindingCreateRequest,
    responses((status = 200, body = SandboxBindingResponse)))]
async fn create_binding(
    caller: Caller,
    ApiJson(body): ApiJson<SandboxBindingCreateRequest>,
) -> ApiResult<Json<SandboxBindingResponse>> {
    let room = Room::managed(&caller, body.chatroom_id).await?;
    let id = enable(
        &caller,
        &room,
        body.task_id,
        Some(body.task_version_id),
        true,
    )
    .await?;
    Ok(Json(current(&caller, id).await?))
}

/// A binding as it stands after the caller's own command.
async fn current(caller: &Caller, id: Uuid) -> ApiResult<SandboxBindingResponse> {
    let company = caller.principal.company_id;
    let row = sharing::binding(caller.pool(), company, id)
        .await?
        .ok_or(ApiError::NotFound)?;
    resolved::response(caller.pool(), company, row).await
}

/// One binding (room managers and the task's owners).
#[utoipa::path(get, path = "/bindings/{binding_id}", tag = "bindings", params(("binding_id" = Uuid, Path)),
    responses((status = 200, body = SandboxBindingResponse)))]
async fn get_binding(
    caller: Caller,
    ApiPath(binding_id): ApiPath<Uuid>,
) -> ApiResult<Json<SandboxBindingResponse>> {
    let binding = Binding::readable(&caller, binding_id).await?;
    let company = caller.principal.company_id;
    Ok(Json(
        resolved::response(caller.pool(), company, binding.row).await?,
    ))
}

/// Re-pins an enabled binding to another published version and recomputes
/// `update_available`.
#[utoipa::path(post, path = "/bindings/{binding_id}/accept-version", tag = "bindings",
    params(("binding_id" = Uuid, Path)), request_body = SandboxBindingAcceptVersionRequest,
    responses((status = 200, body = SandboxBindingResponse)))]
async fn accept_version(
    caller: Caller,
    ApiPath(binding_id): ApiPath<Uuid>,
    ApiJson(body): ApiJson<SandboxBindingAcceptVersionRequest>,
) -> ApiResult<Json<SandboxBindingResponse>> {
    let (binding, room) = Binding::changeable(&caller, binding_id).await?;
    let row = enabled(binding.row)?;
    let grant = room.required_grant(&caller, row.task_id).await?;
    let sees_drafts = Task::read(&caller, row.task_id).await?.owner();
    let pin = pin(
        &caller.state,
        row.task_id,
        Some(body.task_version_id),
        &grant,
        sees_drafts,
    )
    .await?;
    let command = BindingCommand::AcceptVersion {
        binding_id,
        pin: pin.clone(),
    };
    let answer = execute(&caller, &row, command).await?;
    let task = tasks::task(caller.pool(), caller.principal.company_id, row.task_id)
        .await?
        .ok_or(ApiError::NotFound)?
        .task;
    let owner = owner_consumer(task.owner_scope, task.owner_id);
    consent::record(&caller, room.place(), row.task_id, owner, &pin).await?;
    Ok(answer)
}

/// Revokes an enabled binding; the share stays.
#[utoipa::path(post, path = "/bindings/{binding_id}/revoke", tag = "bindings",
    params(("binding_id" = Uuid, Path)), request_body = SandboxRevokeRequest,
    responses((status = 200, body = SandboxBindingResponse)))]
async fn revoke_binding(
    caller: Caller,
    ApiPath(binding_id): ApiPath<Uuid>,
    OptionalJson(body): OptionalJson<SandboxRevokeRequest>,
) -> ApiResult<Json<SandboxBindingResponse>> {
    let (binding, _) = Binding::changeable(&caller, binding_id).await?;
    let reason = check_reason(&body.reason)?;
    let row = enabled(binding.row)?;
    let command = BindingCommand::Revoke { binding_id, reason };
    execute(&caller, &row, command).await
}

/// Runs a command on the binding's aggregate and answers the binding afterwards.
async fn execute(
    caller: &Caller,
    row: &BindingRow,
    command: BindingCommand,
) -> ApiResult<Json<SandboxBindingResponse>> {
    let aggregate = binding_aggregate_id(row.chatroom_id, row.task_id);
    caller
        .command::<BindingAggregate>(aggregate, command)
        .await?;
    Ok(Json(current(caller, row.id).await?))
}
