//! Queries of the sharing read models: grants, bindings, the room menu and a
//! room's granted jobs.
//!
//! A live grant reaches a room through the room itself, then its department, then
//! the company ([`REACHES_ROOM`] and [`RESOLUTION_ORDER`], written once here).

use crate::read_models::page::{LifecycleFilter, Window};
use chrono::{DateTime, Utc};
use domain::environments::environment::OwnerScope;
use domain::sharing::binding::{BindingState, SlotAssignment};
use domain::sharing::policy::SlotPolicies;
use domain::sharing::share::{ShareState, ShareTargetKind};
use domain::tasks::contents::SlotDeclaration;
use serde_json::Value;
use sqlx::PgPool;
use sqlx::types::Json;
use uuid::Uuid;

/// Live grants (over `share_grants s`) of company `$1` that reach room `$2` of
/// department `$3`.
const REACHES_ROOM: &str = "s.company_id = $1 AND s.state = 'active' AND (
        (s.target_kind = 'chatroom' AND s.target_id = $2)
     OR (s.target_kind = 'department' AND s.target_id = $3)
     OR (s.target_kind = 'company' AND s.target_id = $1))";
/// The room's own grant first, then the department's, then the company's.
const RESOLUTION_ORDER: &str =
    "CASE s.target_kind WHEN 'chatroom' THEN 0 WHEN 'department' THEN 1 ELSE 2 END";

/// A share grant (`share_grants`).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct GrantRow {
    /// Id (one per generation).
    pub id: Uuid,
    /// Its company.
    pub company_id: Uuid,
    /// The shared task.
    pub task_id: Uuid,
    /// Room, department or company.
    pub target_kind: ShareTargetKind,
    /// The target's id.
    pub target_id: Uuid,
    /// 1 for the first grant of the target, then one more per reshare.
    pub generation: i64,
    /// Who fills each secret slot.
    pub secret_slot_policies: Json<SlotPolicies>,
    /// Active or revoked.
    pub state: ShareState,
    /// Why it was revoked.
    pub revoke_reason: Option<String>,
    /// Who granted it.
    pub granted_by: String,
    /// Granted.
    pub created_at: DateTime<Utc>,
    /// Revoked.
    pub revoked_at: Option<DateTime<Utc>>,
}

/// A grant of the task.
pub async fn grant(pool: &PgPool, task: Uuid, id: Uuid) -> sqlx::Result<Option<GrantRow>> {
    sqlx::query_as("SELECT * FROM share_grants WHERE id = $1 AND task_id = $2")
        .bind(id)
        .bind(task)
        .fetch_optional(pool)
        .await
}

/// The task's grants, newest first; a grant is live until revoked.
pub async fn grants(
    pool: &PgPool,
    task: Uuid,
    lifecycle: LifecycleFilter,
    window: Window<(DateTime<Utc>, Uuid)>,
) -> sqlx::Result<Vec<GrantRow>> {
    let (after_time, after_id) = window
        .after
        .unwrap_or((DateTime::<Utc>::MAX_UTC, Uuid::max()));
    sqlx::query_as(
        "SELECT * FROM share_grants
          WHERE task_id = $1 AND ($2 OR (state = 'active') = $3)
            AND (created_at, id) < ($4, $5)
          ORDER BY created_at DESC, id DESC
          LIMIT $6",
    )
    .bind(task)
    .bind(lifecycle == LifecycleFilter::All)
    .bind(lifecycle == LifecycleFilter::Active)
    .bind(after_time)
    .bind(after_id)
    .bind(window.limit)
    .fetch_all(pool)
    .await
}

/// Where a room sits: its company, id and department.
#[derive(Debug, Clone, Copy)]
pub struct RoomPlace {
    /// The company.
    pub company: Uuid,
    /// The room.
    pub room: Uuid,
    /// Its department, if any.
    pub department: Option<Uuid>,
}

/// Where each of the company's rooms among `rooms` sits (archived ones too).
pub async fn room_places(
    pool: &PgPool,
    company: Uuid,
    rooms: &[Uuid],
) -> sqlx::Result<Vec<RoomPlace>> {
    let rows: Vec<(Uuid, Option<Uuid>)> = sqlx::query_as(
        "SELECT id, department_id FROM chatrooms WHERE company_id = $1 AND id = ANY($2)",
    )
    .bind(company)
    .bind(rooms)
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(room, department)| RoomPlace {
            company,
            room,
            department,
        })
        .collect())
}

/// The live grant of `task` that reaches the room, resolved room first.
pub async fn live_grant(
    pool: &PgPool,
    place: RoomPlace,
    task: Uuid,
) -> sqlx::Result<Option<GrantRow>> {
    sqlx::query_as(&format!(
        "SELECT s.* FROM share_grants s
          WHERE {REACHES_ROOM} AND s.task_id = $4
          ORDER BY {RESOLUTION_ORDER} LIMIT 1"
    ))
    .bind(place.company)
    .bind(place.room)
    .bind(place.department)
    .bind(task)
    .fetch_optional(pool)
    .await
}

/// A binding (`bindings`) with what its response derives.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct BindingRow {
    /// Id (one per generation).
    pub id: Uuid,
    /// Its company.
    pub company_id: Uuid,
    /// The room.
    pub chatroom_id: Uuid,
    /// The task.
    pub task_id: Uuid,
    /// The task's name (kept current).
    pub task_name: String,
    /// 1, then one more per enablement after a revoke.
    pub generation: i64,
    /// The grant it was enabled under.
    pub share_grant_id: Uuid,
    /// The pinned version.
    pub task_version_id: Uuid,
    /// Its number.
    pub version_number: i64,
    /// Its canonical digest.
    pub task_version_digest: String,
    /// Its secret slots with the grant's policies.
    pub secret_slots: Json<Vec<SlotAssignment>>,
    /// Enabled or revoked.
    pub state: BindingState,
    /// Enabled with its pinned version not archived.
    pub authority_applicable: bool,
    /// Whether a later runnable version exists.
    pub update_available: bool,
    /// Why it was revoked.
    pub revoke_reason: Option<String>,
    /// Who enabled it.
    pub enabled_by: String,
    /// Enabled.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// Revoked.
    pub revoked_at: Option<DateTime<Utc>>,
}

const BINDING: &str = "SELECT b.id, b.company_id, b.chatroom_id, b.task_id, b.task_name, b.generation,
        b.share_grant_id, b.task_version_id, b.version_number, b.task_version_digest, b.secret_slots,
        b.state, b.state = 'enabled' AND b.authority_applicable AS authority_applicable,
        EXISTS (SELECT 1 FROM task_versions n WHERE n.task_id = b.task_id AND n.state = 'published'
                AND n.content_state = 'active' AND n.version_number > b.version_number) AS update_available,
        b.revoke_reason, b.enabled_by, b.created_at, b.updated_at, b.revoked_at
   FROM bindings b";

/// A binding of the company.
pub async fn binding(pool: &PgPool, company: Uuid, id: Uuid) -> sqlx::Result<Option<BindingRow>> {
    sqlx::query_as(&format!("{BINDING} WHERE b.id = $1 AND b.company_id = $2"))
        .bind(id)
        .bind(company)
        .fetch_optional(pool)
        .await
}

/// Whose bindings a management list shows.
#[derive(Debug, Clone, Copy)]
pub enum BindingsOf<'a> {
    /// A task's, optionally only in some rooms.
    Task(Uuid, Option<&'a [Uuid]>),
    /// A room's.
    Room(Uuid),
}

/// Bindings newest first, at most `limit`; a binding is live while enabled.
pub async fn bindings(
    pool: &PgPool,
    of: BindingsOf<'_>,
    lifecycle: LifecycleFilter,
    limit: i64,
) -> sqlx::Result<Vec<BindingRow>> {
    let (column, id, rooms) = match of {
        BindingsOf::Task(task, rooms) => ("b.task_id", task, rooms),
        BindingsOf::Room(room) => ("b.chatroom_id", room, None),
    };
    sqlx::query_as(&format!(
        "{BINDING}
          WHERE {column} = $1 AND ($2 OR (b.state = 'enabled') = $3)
            AND ($4::uuid[] IS NULL OR b.chatroom_id = ANY($4))
          ORDER BY b.created_at DESC, b.id DESC
          LIMIT $5"
    ))
    .bind(id)
    .bind(lifecycle == LifecycleFilter::All)
    .bind(lifecycle == LifecycleFilter::Active)
    .bind(rooms)
    .bind(limit)
    .fetch_all(pool)
    .await
}

/// The enabled binding of `task` in the room.
pub async fn live_binding(pool: &PgPool, room: Uuid, task: Uuid) -> sqlx::Result<Option<Uuid>> {
    sqlx::query_scalar(
        "SELECT id FROM bindings WHERE chatroom_id = $1 AND task_id = $2 AND state = 'enabled'",
    )
    .bind(room)
    .bind(task)
    .fetch_optional(pool)
    .await
}

/// One entry of a room's menu.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct MenuRow {
    /// The task.
    pub task_id: Uuid,
    /// Its name.
    pub task_name: String,
    /// The pinned version.
    pub task_version_id: Uuid,
    /// Its digest.
    pub task_version_digest: String,
    /// Its input schema.
    pub input_schema: Option<Json<Value>>,
    /// Its secret slots with the grant's policies.
    pub secret_slots: Json<Vec<SlotAssignment>>,
}

/// The room's menu in (task name, task id) order, after the task whose id the
/// window names: enabled bindings whose pinned version applies, one indexed range;
/// with `search`, only tasks whose name contains it (case-insensitive).
pub async fn menu(
    pool: &PgPool,
    room: Uuid,
    search: Option<&str>,
    window: Window<Uuid>,
) -> sqlx::Result<Vec<MenuRow>> {
    let pattern = search.map(|s| {
        let escaped = s
            .replace('\\', "\\\\")
            .replace('%', "\\%")
            .replace('_', "\\_");
        format!("%{escaped}%")
    });
    sqlx::query_as(
        "SELECT task_id, task_name, task_version_id, task_version_digest, input_schema, secret_slots
           FROM bindings
          WHERE chatroom_id = $1 AND state = 'enabled' AND authority_applicable
            AND ($2::uuid IS NULL
                 OR (task_name, task_id) > ((SELECT name FROM sharing_tasks WHERE task_id = $2), $2))
            AND ($4::text IS NULL OR task_name ILIKE $4)
          ORDER BY task_name, task_id
          LIMIT $3",
    )
    .bind(room)
    .bind(window.after)
    .bind(window.limit)
    .bind(pattern)
    .fetch_all(pool)
    .await
}

/// The room's menu entry pinning exactly `version` (an enabled binding whose
/// pinned version applies), if any.
pub async fn menu_entry(pool: &PgPool, room: Uuid, version: Uuid) -> sqlx::Result<Option<MenuRow>> {
    sqlx::query_as(
        "SELECT task_id, task_name, task_version_id, task_version_digest, input_schema, secret_slots
           FROM bindings
          WHERE chatroom_id = $1 AND task_version_id = $2 AND state = 'enabled'
            AND authority_applicable",
    )
    .bind(room)
    .bind(version)
    .fetch_optional(pool)
    .await
}

/// A task a live grant reaches a room with, and its enablement there.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct GrantedRow {
    /// The task.
    pub task_id: Uuid,
    /// Its name.
    pub task_name: String,
    /// Its owner scope.
    pub owner_scope: OwnerScope,
    /// Its owner.
    pub owner_id: Uuid,
    /// The grant that applies (the binding's own while enabled).
    pub share_grant_id: Uuid,
    /// That grant's target kind.
    pub share_target_kind: ShareTargetKind,
    /// That grant's slot policies.
    pub secret_slot_policies: Json<SlotPolicies>,
    /// The newest runnable version.
    pub latest_published_version_id: Option<Uuid>,
    /// Its slot declarations.
    pub latest_slots: Option<Json<Vec<SlotDeclaration>>>,
    /// The enabled binding, if any.
    pub binding_id: Option<Uuid>,
    /// Its pinned version.
    pub task_version_id: Option<Uuid>,
    /// That version's digest.
    pub task_version_digest: Option<String>,
    /// The pinned slots.
    pub pinned_slots: Option<Json<Vec<SlotAssignment>>>,
    /// Whether the binding applies.
    pub authority_applicable: bool,
    /// Whether a later runnable version exists.
    pub update_available: bool,
}

/// The granted jobs of a room (one task when `task` is given), by task name, at
/// most `limit` rows.
pub async fn granted(
    pool: &PgPool,
    place: RoomPlace,
    task: Option<Uuid>,
    limit: i64,
) -> sqlx::Result<Vec<GrantedRow>> {
    sqlx::query_as(&format!(
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
    .bind(place.company)
    .bind(place.room)
    .bind(place.department)
    .bind(task)
    .bind(limit)
    .fetch_all(pool)
    .await
}
