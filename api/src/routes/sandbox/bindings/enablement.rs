//! What enabling a task in a room takes: the caller's standing in the room, the live
//! grant that reaches it (room, then department, then company), the published
//! version to pin, and the binding command itself. `POST /bindings`, accept-version
//! and the granted-job routes all go through here.

use super::views::{SandboxBindingResponse, secret_slots};
use crate::authz::INSUFFICIENT;
use crate::directory::{RoomStanding, room_standing};
use crate::error::{ApiError, ApiResult};
use crate::request::Context;
use crate::routes::sandbox::tasks::access::{TaskAccess, task};
use crate::state::AppState;
use chrono::{DateTime, Utc};
use domain::error::Code;
use domain::principal::Principal;
use domain::sharing::binding::{
    Binding, BindingCommand, Pin, SlotAssignment, binding_aggregate_id,
};
use domain::sharing::policy::{SlotPolicies, policy_of};
use domain::tasks::contents::VersionContents;
use sqlx::types::Json;
use uuid::Uuid;

/// A live room the caller can see: 404 unless the caller is a member, manages it,
/// or is a restricted key allowed into it (the key's allowlist is its authority).
pub async fn visible_room(
    state: &AppState,
    principal: &Principal,
    room: Uuid,
) -> ApiResult<RoomStanding> {
    let allowed = |id: Uuid| {
        principal.is_restricted()
            && principal
                .allowed_chatroom_ids
                .as_ref()
                .is_some_and(|ids| ids.contains(&id))
    };
    room_standing(&state.pool, principal, room)
        .await?
        .filter(|r| r.member || r.manager || allowed(r.id))
        .ok_or(ApiError::NotFound)
}

/// A room the caller manages: 404 when it cannot see the room, 403 when it is only
/// a member.
pub async fn managed_room(
    state: &AppState,
    principal: &Principal,
    room: Uuid,
) -> ApiResult<RoomStanding> {
    let room = visible_room(state, principal, room).await?;
    if room.manager {
        Ok(room)
    } else {
        Err(ApiError::Forbidden(INSUFFICIENT))
    }
}

/// The refusal when no live grant reaches the room.
pub fn not_shared() -> ApiError {
    ApiError::code(
        Code::TaskNotSharedToRoom,
        "the task is not shared to this room, its department or the company",
    )
}

/// A live grant and what it reaches.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct LiveGrant {
    /// The grant.
    pub id: Uuid,
    /// `chatroom`, `department` or `company`.
    pub target_kind: String,
    /// Its slot policies.
    pub secret_slot_policies: Json<SlotPolicies>,
}

/// The SQL condition (over `share_grants s`) of live grants that reach room `$2` of
/// company `$1` in department `$3`, and the order that puts the room's own grant
/// first, then the department's, then the company's.
pub const REACHES_ROOM: &str = "s.company_id = $1 AND s.state = 'active' AND (
        (s.target_kind = 'chatroom' AND s.target_id = $2)
     OR (s.target_kind = 'department' AND s.target_id = $3)
     OR (s.target_kind = 'company' AND s.target_id = $1))";
/// See [`REACHES_ROOM`].
pub const RESOLUTION_ORDER: &str =
    "CASE s.target_kind WHEN 'chatroom' THEN 0 WHEN 'department' THEN 1 ELSE 2 END";

/// The live grant of `task` that reaches the room, if any.
pub async fn live_grant(
    state: &AppState,
    principal: &Principal,
    room: &RoomStanding,
    task: Uuid,
) -> ApiResult<Option<LiveGrant>> {
    Ok(sqlx::query_as(&format!(
        "SELECT s.id, s.target_kind, s.secret_slot_policies FROM share_grants s
          WHERE {REACHES_ROOM} AND s.task_id = $4
          ORDER BY {RESOLUTION_ORDER} LIMIT 1"
    ))
    .bind(principal.company_id)
    .bind(room.id)
    .bind(room.department_id)
    .bind(task)
    .fetch_optional(&state.pool)
    .await?)
}

#[derive(sqlx::FromRow)]
struct PinnableVersion {
    id: Uuid,
    version_number: i64,
    state: String,
    content_state: String,
    canonical_digest: String,
    contents: Json<VersionContents>,
}

/// Refuses a version that is not published with active contents (spec rule 2).
pub fn require_runnable(state: &str, content_state: &str) -> ApiResult<()> {
    if content_state == "scrubbed" {
        return Err(ApiError::code(
            Code::ContentScrubbedIrreversible,
            "the version's contents were scrubbed; it can never run again",
        ));
    }
    if state != "published" || content_state != "active" {
        return Err(not_runnable());
    }
    Ok(())
}

/// The refusal of a version that is not published and active (or of a task with no
/// such version).
pub fn not_runnable() -> ApiError {
    ApiError::code(
        Code::VersionNotRunnable,
        "the version is not published with active contents",
    )
}

/// The pin of `version` (the newest published version by default) under `grant`:
/// 404 for a version of another task or a draft, 409 for one that cannot run.
pub async fn pin(
    state: &AppState,
    task: Uuid,
    version: Option<Uuid>,
    grant: &LiveGrant,
) -> ApiResult<Pin> {
    let row: Option<PinnableVersion> = sqlx::query_as(
        "SELECT id, version_number, state, content_state, canonical_digest, contents
           FROM task_versions
          WHERE task_id = $1
            AND ($2::uuid IS NULL AND state = 'published' AND content_state = 'active' OR id = $2)
          ORDER BY version_number DESC LIMIT 1",
    )
    .bind(task)
    .bind(version)
    .fetch_optional(&state.pool)
    .await?;
    let row = match row {
        Some(row) if row.state != "draft" => row,
        _ if version.is_none() => return Err(not_runnable()),
        _ => return Err(ApiError::NotFound),
    };
    require_runnable(&row.state, &row.content_state)?;
    let contents = row.contents.0;
    Ok(Pin {
        task_version_id: row.id,
        version_number: row.version_number,
        task_version_digest: row.canonical_digest,
        secret_slots: contents
            .secret_slot_names()
            .into_iter()
            .map(|name| SlotAssignment {
                policy: policy_of(&grant.secret_slot_policies, &name),
                name,
            })
            .collect(),
        input_schema: contents.input_schema,
        share_grant_id: grant.id,
    })
}

/// A task of the caller's company that can be enabled: 404 when unknown, 409
/// `task_archived` when archived.
pub async fn enableable_task(
    state: &AppState,
    principal: &Principal,
    task_id: Uuid,
) -> ApiResult<TaskAccess> {
    let access = task(state, principal, task_id).await?;
    require_enableable(&access)?;
    Ok(access)
}

/// Refuses a hidden (404) or archived (409 `task_archived`) task.
pub fn require_enableable(access: &TaskAccess) -> ApiResult<()> {
    if access.row.hidden {
        return Err(ApiError::NotFound);
    }
    if access.row.lifecycle != "active" {
        return Err(ApiError::code(Code::TaskArchived, "the task is archived"));
    }
    Ok(())
}

/// The enabled binding of `task` in the room, per the read model.
pub async fn live_binding(state: &AppState, room: Uuid, task: Uuid) -> ApiResult<Option<Uuid>> {
    Ok(sqlx::query_scalar(
        "SELECT id FROM bindings WHERE chatroom_id = $1 AND task_id = $2 AND state = 'enabled'",
    )
    .bind(room)
    .bind(task)
    .fetch_optional(&state.pool)
    .await?)
}

/// Enables `task` in a room the caller manages at `version` (the newest published
/// one by default); `exclusive` refuses when a binding is live instead of re-pinning
/// it. Returns the live binding's id.
pub async fn enable(
    state: &AppState,
    ctx: &Context,
    principal: &Principal,
    room: &RoomStanding,
    task_id: Uuid,
    version: Option<Uuid>,
    exclusive: bool,
) -> ApiResult<Uuid> {
    let task = enableable_task(state, principal, task_id).await?;
    let grant = live_grant(state, principal, room, task_id)
        .await?
        .ok_or_else(not_shared)?;
    let pin = pin(state, task_id, version, &grant).await?;
    let current = live_binding(state, room.id, task_id).await?;
    let command = BindingCommand::Enable {
        chatroom_id: room.id,
        task_id,
        company_id: task.row.company_id,
        pin,
        restart: current.is_none(),
        exclusive,
    };
    state
        .bus
        .execute::<Binding>(
            &binding_aggregate_id(room.id, task_id).to_string(),
            command,
            &ctx.metadata(principal),
        )
        .await?;
    match live_binding(state, room.id, task_id).await? {
        Some(id) => Ok(id),
        // The grant was revoked or the task archived while this request decided.
        None => {
            enableable_task(state, principal, task_id).await?;
            Err(not_shared())
        }
    }
}

/// A binding row as the routes read it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct BindingRow {
    id: Uuid,
    chatroom_id: Uuid,
    task_id: Uuid,
    task_name: String,
    generation: i64,
    share_grant_id: Uuid,
    task_version_id: Uuid,
    version_number: i64,
    task_version_digest: String,
    secret_slots: Json<Vec<SlotAssignment>>,
    state: String,
    authority_applicable: bool,
    update_available: bool,
    revoke_reason: Option<String>,
    enabled_by: String,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    revoked_at: Option<DateTime<Utc>>,
}

impl BindingRow {
    /// The room.
    pub fn chatroom_id(&self) -> Uuid {
        self.chatroom_id
    }
    /// The task.
    pub fn task_id(&self) -> Uuid {
        self.task_id
    }
    /// Whether it is enabled.
    pub fn enabled(&self) -> bool {
        self.state == "enabled"
    }
}

/// The columns of [`BindingRow`] over `bindings b`.
pub const BINDING_COLUMNS: &str = "b.id, b.chatroom_id, b.task_id, b.task_name, b.generation, \
     b.share_grant_id, b.task_version_id, b.version_number, b.task_version_digest, b.secret_slots, \
     b.state, b.state = 'enabled' AND b.authority_applicable AS authority_applicable, \
     EXISTS (SELECT 1 FROM task_versions n WHERE n.task_id = b.task_id AND n.state = 'published' \
             AND n.content_state = 'active' AND n.version_number > b.version_number) AS update_available, \
     b.revoke_reason, b.enabled_by, b.created_at, b.updated_at, b.revoked_at";

impl From<BindingRow> for SandboxBindingResponse {
    fn from(row: BindingRow) -> Self {
        Self {
            id: row.id,
            chatroom_id: row.chatroom_id,
            task_id: row.task_id,
            task_name: row.task_name,
            task_version_id: row.task_version_id,
            version_number: row.version_number,
            task_version_digest: row.task_version_digest,
            share_grant_id: row.share_grant_id,
            state: row.state,
            authority_applicable: row.authority_applicable,
            update_available: row.update_available,
            secret_slots: secret_slots(&row.secret_slots),
            generation: row.generation,
            revoke_reason: row.revoke_reason,
            enabled_by: row.enabled_by,
            created_at: row.created_at,
            updated_at: row.updated_at,
            revoked_at: row.revoked_at,
        }
    }
}

/// Loads a binding of the caller's company.
pub async fn binding_row(
    state: &AppState,
    principal: &Principal,
    id: Uuid,
) -> ApiResult<BindingRow> {
    let row: Option<BindingRow> = sqlx::query_as(&format!(
        "SELECT {BINDING_COLUMNS} FROM bindings b WHERE b.id = $1 AND b.company_id = $2"
    ))
    .bind(id)
    .bind(principal.company_id)
    .fetch_optional(&state.pool)
    .await?;
    row.ok_or(ApiError::NotFound)
}
