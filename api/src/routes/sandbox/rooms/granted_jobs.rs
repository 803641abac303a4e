//! Granted jobs of a room (`/chatrooms/{cid}/granted-jobs`): the tasks a live grant
//! reaches the room with (its own, its department's or the company's), and their
//! enablement, which room managers switch on (pinning a version) and off (the share
//! stays).

use crate::access::{Room, Task, not_shared};
use crate::error::ApiResult;
use crate::extract::ApiPath;
use crate::extract::OptionalJson;
use crate::pagination::{MANAGEMENT_LIST_CAP, capped};
use crate::request::Caller;
use crate::routes::sandbox::bindings::enablement::enable;
use crate::routes::sandbox::bindings::views::{
    SandboxGrantedJobEnableRequest, SandboxGrantedJobItemResponse, SandboxGrantedJobListResponse,
    resolve_views, secret_slots,
};
use crate::secrets::slots;
use crate::state::AppState;
use axum::Json;
use domain::sharing::binding::{Binding, BindingCommand, SlotAssignment, binding_aggregate_id};
use domain::wire::wire;
use projections::read_models::sharing::query::{self as sharing, GrantedRow};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// The granted-job routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_granted_jobs))
        .routes(routes!(enable_granted_job))
        .routes(routes!(disable_granted_job))
}

/// The slots of a granted task with the grant's policies: the pinned version's,
/// else the newest published version's.
fn assignments(row: &GrantedRow) -> Vec<SlotAssignment> {
    match (&row.pinned_slots, &row.latest_slots) {
        (Some(pinned), _) => pinned.0.clone(),
        (None, Some(latest)) => SlotAssignment::all(
            latest.iter().map(|d| d.name.clone()),
            &row.secret_slot_policies,
        ),
        (None, None) => Vec::new(),
    }
}

impl From<GrantedRow> for SandboxGrantedJobItemResponse {
    fn from(row: GrantedRow) -> Self {
        let slots = secret_slots(&assignments(&row));
        let policies = row.secret_slot_policies.0;
        Self {
            task_id: row.task_id,
            task_name: row.task_name,
            owner_scope: wire(&row.owner_scope),
            owner_id: row.owner_id,
            share_grant_id: row.share_grant_id,
            share_target_kind: row.share_target_kind.as_str().into(),
            secret_slot_policies: policies,
            latest_published_version_id: row.latest_published_version_id,
            enabled: row.binding_id.is_some(),
            binding_id: row.binding_id,
            task_version_id: row.task_version_id,
            task_version_digest: row.task_version_digest,
            authority_applicable: row.authority_applicable,
            update_available: row.update_available,
            secret_slots: slots,
        }
    }
}

/// The granted jobs of the room (one task when `task` is given), by task name, at
/// most `limit` rows.
async fn granted(
    state: &AppState,
    room: &Room,
    task: Option<Uuid>,
    limit: i64,
) -> ApiResult<Vec<SandboxGrantedJobItemResponse>> {
    let rows = sharing::granted(&state.pool, room.place(), task, limit).await?;
    let pins: Vec<_> = rows
        .iter()
        .map(|row| (row.task_id, assignments(row)))
        .collect();
    let mut items: Vec<SandboxGrantedJobItemResponse> = rows.into_iter().map(Into::into).collect();
    let resolved = slots::resolve(&state.pool, room.place(), &pins).await?;
    for item in &mut items {
        resolve_views(&mut item.secret_slots, resolved.get(&item.task_id));
    }
    Ok(items)
}

/// The item of one task, or 409 `task_not_shared_to_room`.
async fn item(
    state: &AppState,
    room: &Room,
    task: Uuid,
) -> ApiResult<Json<SandboxGrantedJobItemResponse>> {
    granted(state, room, Some(task), 1)
        .await?
        .pop()
        .map(Json)
        .ok_or_else(not_shared)
}

/// The tasks granted to the room and their enablement (room managers).
#[utoipa::path(get, path = "/chatrooms/{chatroom_id}/granted-jobs", tag = "runs",
    params(("chatroom_id" = Uuid, Path)),
    responses((status = 200, body = SandboxGrantedJobListResponse)))]
async fn list_granted_jobs(
    caller: Caller,
    ApiPath(chatroom_id): ApiPath<Uuid>,
) -> ApiResult<Json<SandboxGrantedJobListResponse>> {
    let room = Room::managed(&caller, chatroom_id).await?;
    let items = granted(&caller.state, &room, None, MANAGEMENT_LIST_CAP + 1).await?;
    let (items, truncated) = capped(items, |_| true);
    Ok(Json(SandboxGrantedJobListResponse { items, truncated }))
}

/// Enables a granted task in the room, pinning `task_version_id` (the newest
/// published version by default); enabling an enabled task re-pins it.
#[utoipa::path(post, path = "/chatrooms/{chatroom_id}/granted-jobs/{task_id}/enable", tag = "runs",
    params(("chatroom_id" = Uuid, Path), ("task_id" = Uuid, Path)),
    request_body = SandboxGrantedJobEnableRequest,
    responses((status = 200, body = SandboxGrantedJobItemResponse)))]
async fn enable_granted_job(
    caller: Caller,
    ApiPath((chatroom_id, task_id)): ApiPath<(Uuid, Uuid)>,
    OptionalJson(body): OptionalJson<SandboxGrantedJobEnableRequest>,
) -> ApiResult<Json<SandboxGrantedJobItemResponse>> {
    let room = Room::managed(&caller, chatroom_id).await?;
    enable(&caller, &room, task_id, body.task_version_id, false).await?;
    item(&caller.state, &room, task_id).await
}

/// Disables a task in the room (revokes its binding); the share stays. Disabling a
/// task that is not enabled changes nothing.
#[utoipa::path(post, path = "/chatrooms/{chatroom_id}/granted-jobs/{task_id}/disable", tag = "runs",
    params(("chatroom_id" = Uuid, Path), ("task_id" = Uuid, Path)),
    responses((status = 200, body = SandboxGrantedJobItemResponse)))]
async fn disable_granted_job(
    caller: Caller,
    ApiPath((chatroom_id, task_id)): ApiPath<(Uuid, Uuid)>,
) -> ApiResult<Json<SandboxGrantedJobItemResponse>> {
    let room = Room::managed(&caller, chatroom_id).await?;
    Task::enableable(&caller, task_id).await?;
    if let Some(binding_id) = sharing::live_binding(caller.pool(), room.id, task_id).await? {
        let command = BindingCommand::Revoke {
            binding_id,
            reason: "disabled".into(),
        };
        caller
            .command::<Binding>(binding_aggregate_id(room.id, task_id), command)
            .await?;
    }
    item(&caller.state, &room, task_id).await
}
