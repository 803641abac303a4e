//! Granted jobs of a room (`/chatrooms/{cid}/granted-jobs`): the tasks a live grant
//! reaches the room with (its own, its department's or the company's), and their
//! enablement, which room managers switch on (pinning a version) and off (the share
//! stays).

use crate::auth::Auth;
use crate::directory::RoomStanding;
use crate::error::ApiResult;
use crate::extract::OptionalJson;
use crate::request::Context;
use crate::routes::sandbox::bindings::enablement::{
    REACHES_ROOM, RESOLUTION_ORDER, enable, enableable_task, live_binding, managed_room, not_shared,
};
use crate::routes::sandbox::bindings::views::{
    SandboxGrantedJobEnableRequest, SandboxGrantedJobItemResponse, SandboxGrantedJobListResponse,
    SandboxSecretSlot, secret_slots,
};
use crate::state::AppState;
use axum::Json;
use axum::extract::{Path, State};
use domain::principal::Principal;
use domain::sharing::binding::{Binding, BindingCommand, SlotAssignment, binding_aggregate_id};
use domain::sharing::policy::{SlotPolicies, policy_of};
use domain::tasks::contents::SlotDeclaration;
use sqlx::types::Json as Jsonb;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// Most granted jobs one list returns.
const CAP: i64 = 2000;

/// The granted-job routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_granted_jobs))
        .routes(routes!(enable_granted_job))
        .routes(routes!(disable_granted_job))
}

#[derive(sqlx::FromRow)]
struct GrantedRow {
    task_id: Uuid,
    task_name: String,
    owner_scope: String,
    owner_id: Uuid,
    share_grant_id: Uuid,
    share_target_kind: String,
    secret_slot_policies: Jsonb<SlotPolicies>,
    latest_published_version_id: Option<Uuid>,
    latest_slots: Option<Jsonb<Vec<SlotDeclaration>>>,
    binding_id: Option<Uuid>,
    task_version_id: Option<Uuid>,
    task_version_digest: Option<String>,
    pinned_slots: Option<Jsonb<Vec<SlotAssignment>>>,
    authority_applicable: bool,
    update_available: bool,
}

impl From<GrantedRow> for SandboxGrantedJobItemResponse {
    fn from(row: GrantedRow) -> Self {
        let policies = row.secret_slot_policies.0;
        let slots: Vec<SandboxSecretSlot> = match (&row.pinned_slots, &row.latest_slots) {
            (Some(pinned), _) => secret_slots(pinned),
            (None, Some(latest)) => latest
                .iter()
                .map(|d| {
                    SandboxSecretSlot::from(&SlotAssignment {
                        name: d.name.clone(),
                        policy: policy_of(&policies, &d.name),
                    })
                })
                .collect(),
            (None, None) => Vec::new(),
        };
        Self {
            task_id: row.task_id,
            task_name: row.task_name,
            owner_scope: row.owner_scope,
            owner_id: row.owner_id,
            share_grant_id: row.share_grant_id,
            share_target_kind: row.share_target_kind,
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
    principal: &Principal,
    room: &RoomStanding,
    task: Option<Uuid>,
    limit: i64,
) -> ApiResult<Vec<SandboxGrantedJobItemResponse>> {
    let rows: Vec<GrantedRow> = sqlx::query_as(&format!(
        "WITH g AS (
           SELECT DISTINCT ON (s.task_id) s.task_id, s.id, s.target_kind, s.secret_slot_policies
             FROM share_grants s
            WHERE {REACHES_ROOM} AND ($4::uuid IS NULL OR s.task_id = $4)
            ORDER BY s.task_id, {RESOLUTION_ORDER})
         SELECT t.id AS task_id, t.name AS task_name, t.owner_scope, t.owner_id,
                coalesce(bg.id, g.id) AS share_grant_id,
                coalesce(bg.target_kind, g.target_kind) AS share_target_kind,
                coalesce(bg.secret_slot_policies, g.secret_slot_policies) AS secret_slot_policies,
                lv.id AS latest_published_version_id, lv.slots AS latest_slots,
                b.id AS binding_id, b.task_version_id, b.task_version_digest, b.secret_slots AS pinned_slots,
                coalesce(b.authority_applicable, false) AS authority_applicable,
                coalesce(b.version_number < lv.version_number, false) AS update_available
           FROM g
           JOIN tasks t ON t.id = g.task_id AND t.lifecycle = 'active' AND NOT t.hidden
           LEFT JOIN LATERAL (
                SELECT v.id, v.version_number, v.contents->'secret_slot_declarations' AS slots
                  FROM task_versions v
                 WHERE v.task_id = t.id AND v.state = 'published' AND v.content_state = 'active'
                 ORDER BY v.version_number DESC LIMIT 1) lv ON true
           LEFT JOIN bindings b ON b.chatroom_id = $2 AND b.task_id = t.id AND b.state = 'enabled'
           LEFT JOIN share_grants bg ON bg.id = b.share_grant_id
          ORDER BY t.name, t.id
          LIMIT $5"
    ))
    .bind(principal.company_id)
    .bind(room.id)
    .bind(room.department_id)
    .bind(task)
    .bind(limit)
    .fetch_all(&state.pool)
    .await?;
    Ok(rows.into_iter().map(Into::into).collect())
}

/// The item of one task, or 409 `task_not_shared_to_room`.
async fn item(
    state: &AppState,
    principal: &Principal,
    room: &RoomStanding,
    task: Uuid,
) -> ApiResult<Json<SandboxGrantedJobItemResponse>> {
    granted(state, principal, room, Some(task), 1)
        .await?
        .pop()
        .map(Json)
        .ok_or_else(not_shared)
}

/// The tasks granted to the room and their enablement (room managers).
#[utoipa::path(get, path = "/chatrooms/{chatroom_id}/granted-jobs", tag = "runs",
    params(("chatroom_id" = Uuid, Path)),
    responses((status = 200, body = SandboxGrantedJobListResponse),
              (status = 403, description = "not a manager of the room"), (status = 404, description = "room not visible")))]
async fn list_granted_jobs(
    State(state): State<AppState>,
    Auth(principal): Auth,
    Path(chatroom_id): Path<Uuid>,
) -> ApiResult<Json<SandboxGrantedJobListResponse>> {
    let room = managed_room(&state, &principal, chatroom_id).await?;
    let mut items = granted(&state, &principal, &room, None, CAP + 1).await?;
    let truncated = items.len() as i64 > CAP;
    items.truncate(CAP as usize);
    Ok(Json(SandboxGrantedJobListResponse { items, truncated }))
}

/// Enables a granted task in the room, pinning `task_version_id` (the newest
/// published version by default); enabling an enabled task re-pins it.
#[utoipa::path(post, path = "/chatrooms/{chatroom_id}/granted-jobs/{task_id}/enable", tag = "runs",
    params(("chatroom_id" = Uuid, Path), ("task_id" = Uuid, Path)),
    request_body = SandboxGrantedJobEnableRequest,
    responses((status = 200, body = SandboxGrantedJobItemResponse),
              (status = 403, description = "not a manager of the room"),
              (status = 404, description = "room, task or version not visible"),
              (status = 409, description = "task_not_shared_to_room, version_not_runnable, task_archived")))]
async fn enable_granted_job(
    State(state): State<AppState>,
    ctx: Context,
    Auth(principal): Auth,
    Path((chatroom_id, task_id)): Path<(Uuid, Uuid)>,
    OptionalJson(body): OptionalJson<SandboxGrantedJobEnableRequest>,
) -> ApiResult<Json<SandboxGrantedJobItemResponse>> {
    let room = managed_room(&state, &principal, chatroom_id).await?;
    enable(
        &state,
        &ctx,
        &principal,
        &room,
        task_id,
        body.task_version_id,
        false,
    )
    .await?;
    item(&state, &principal, &room, task_id).await
}

/// Disables a task in the room (revokes its binding); the share stays. Disabling a
/// task that is not enabled changes nothing.
#[utoipa::path(post, path = "/chatrooms/{chatroom_id}/granted-jobs/{task_id}/disable", tag = "runs",
    params(("chatroom_id" = Uuid, Path), ("task_id" = Uuid, Path)),
    responses((status = 200, body = SandboxGrantedJobItemResponse),
              (status = 403, description = "not a manager of the room"),
              (status = 404, description = "room or task not visible"),
              (status = 409, description = "task_not_shared_to_room")))]
async fn disable_granted_job(
    State(state): State<AppState>,
    ctx: Context,
    Auth(principal): Auth,
    Path((chatroom_id, task_id)): Path<(Uuid, Uuid)>,
) -> ApiResult<Json<SandboxGrantedJobItemResponse>> {
    let room = managed_room(&state, &principal, chatroom_id).await?;
    enableable_task(&state, &principal, task_id).await?;
    if let Some(binding_id) = live_binding(&state, room.id, task_id).await? {
        let command = BindingCommand::Revoke {
            binding_id,
            reason: "disabled".into(),
        };
        state
            .bus
            .execute::<Binding>(
                &binding_aggregate_id(room.id, task_id).to_string(),
                command,
                &ctx.metadata(&principal),
            )
            .await?;
    }
    item(&state, &principal, &room, task_id).await
}
