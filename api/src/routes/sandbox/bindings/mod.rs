//! Bindings (spec section 4, prefix `/bindings`): the room enablement of a shared
//! task at an exact version. Room managers (the chatroom manager ladder) create,
//! re-pin and revoke them; the task's owners and the room's managers read them.

pub mod enablement;
pub mod views;

use crate::auth::Auth;
use crate::authz::INSUFFICIENT;
use crate::directory::{RoomStanding, room_standing};
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, OptionalJson};
use crate::request::Context;
use crate::routes::sandbox::environments::access::manages_scope;
use crate::routes::sandbox::tasks::access::task;
use crate::state::AppState;
use axum::Json;
use axum::extract::{Path, State};
use domain::error::Code;
use domain::principal::Principal;
use domain::sharing::binding::{Binding, BindingCommand, binding_aggregate_id};
use domain::validation::Violations;
use enablement::{BindingRow, binding_row, enable, live_grant, managed_room, not_shared, pin};
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

/// Whether the caller may read a binding: it manages the room or owns the task.
async fn readable(state: &AppState, principal: &Principal, row: &BindingRow) -> ApiResult<bool> {
    let room = room_standing(&state.pool, principal, row.chatroom_id()).await?;
    if room.is_some_and(|r| r.manager) {
        return Ok(true);
    }
    let Ok(task) = task(state, principal, row.task_id()).await else {
        return Ok(false);
    };
    manages_scope(
        state,
        principal,
        &task.row.owner_scope,
        Some(task.row.owner_id),
    )
    .await
}

/// A binding the caller may change and its room: 404 unless the caller may read
/// the binding, 403 unless it manages the room.
async fn changeable(
    state: &AppState,
    principal: &Principal,
    id: Uuid,
) -> ApiResult<(BindingRow, RoomStanding)> {
    let row = binding_row(state, principal, id).await?;
    if !readable(state, principal, &row).await? {
        return Err(ApiError::NotFound);
    }
    match room_standing(&state.pool, principal, row.chatroom_id()).await? {
        Some(room) if room.manager => Ok((row, room)),
        _ => Err(ApiError::Forbidden(INSUFFICIENT)),
    }
}

/// The refusal of a change to a revoked binding.
fn revoked() -> ApiError {
    ApiError::code(Code::IllegalStateTransition, "the binding is revoked")
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
    responses((status = 200, body = SandboxBindingResponse),
              (status = 403, description = "not a manager of the room"),
              (status = 404, description = "room, task or version not visible"),
              (status = 409, description = "task_not_shared_to_room, binding_already_live, version_not_runnable, task_archived")))]
async fn create_binding(
    State(state): State<AppState>,
    ctx: Context,
    Auth(principal): Auth,
    ApiJson(body): ApiJson<SandboxBindingCreateRequest>,
) -> ApiResult<Json<SandboxBindingResponse>> {
    let room = managed_room(&state, &principal, body.chatroom_id).await?;
    let id = enable(
        &state,
        &ctx,
        &principal,
        &room,
        body.task_id,
        Some(body.task_version_id),
        true,
    )
    .await?;
    Ok(Json(binding_row(&state, &principal, id).await?.into()))
}

/// One binding (room managers and the task's owners).
#[utoipa::path(get, path = "/bindings/{binding_id}", tag = "bindings", params(("binding_id" = Uuid, Path)),
    responses((status = 200, body = SandboxBindingResponse), (status = 404, description = "not found")))]
async fn get_binding(
    State(state): State<AppState>,
    Auth(principal): Auth,
    Path(binding_id): Path<Uuid>,
) -> ApiResult<Json<SandboxBindingResponse>> {
    let row = binding_row(&state, &principal, binding_id).await?;
    if !readable(&state, &principal, &row).await? {
        return Err(ApiError::NotFound);
    }
    Ok(Json(row.into()))
}

/// Re-pins an enabled binding to another published version and recomputes
/// `update_available`.
#[utoipa::path(post, path = "/bindings/{binding_id}/accept-version", tag = "bindings",
    params(("binding_id" = Uuid, Path)), request_body = SandboxBindingAcceptVersionRequest,
    responses((status = 200, body = SandboxBindingResponse), (status = 404, description = "not found"),
              (status = 409, description = "illegal_state_transition, task_not_shared_to_room, version_not_runnable")))]
async fn accept_version(
    State(state): State<AppState>,
    ctx: Context,
    Auth(principal): Auth,
    Path(binding_id): Path<Uuid>,
    ApiJson(body): ApiJson<SandboxBindingAcceptVersionRequest>,
) -> ApiResult<Json<SandboxBindingResponse>> {
    let (row, room) = changeable(&state, &principal, binding_id).await?;
    if !row.enabled() {
        return Err(revoked());
    }
    let grant = live_grant(&state, &principal, &room, row.task_id())
        .await?
        .ok_or_else(not_shared)?;
    let pin = pin(&state, row.task_id(), Some(body.task_version_id), &grant).await?;
    let command = BindingCommand::AcceptVersion { binding_id, pin };
    execute(&state, &ctx, &principal, &row, command).await?;
    Ok(Json(
        binding_row(&state, &principal, binding_id).await?.into(),
    ))
}

/// Revokes an enabled binding; the share stays.
#[utoipa::path(post, path = "/bindings/{binding_id}/revoke", tag = "bindings",
    params(("binding_id" = Uuid, Path)), request_body = SandboxRevokeRequest,
    responses((status = 200, body = SandboxBindingResponse), (status = 404, description = "not found"),
              (status = 409, description = "illegal_state_transition")))]
async fn revoke_binding(
    State(state): State<AppState>,
    ctx: Context,
    Auth(principal): Auth,
    Path(binding_id): Path<Uuid>,
    OptionalJson(body): OptionalJson<SandboxRevokeRequest>,
) -> ApiResult<Json<SandboxBindingResponse>> {
    let (row, _) = changeable(&state, &principal, binding_id).await?;
    let reason = check_reason(&body.reason)?;
    if !row.enabled() {
        return Err(revoked());
    }
    let command = BindingCommand::Revoke { binding_id, reason };
    execute(&state, &ctx, &principal, &row, command).await?;
    Ok(Json(
        binding_row(&state, &principal, binding_id).await?.into(),
    ))
}

async fn execute(
    state: &AppState,
    ctx: &Context,
    principal: &Principal,
    row: &BindingRow,
    command: BindingCommand,
) -> ApiResult<()> {
    let aggregate = binding_aggregate_id(row.chatroom_id(), row.task_id());
    state
        .bus
        .execute::<Binding>(&aggregate.to_string(), command, &ctx.metadata(principal))
        .await?;
    Ok(())
}
