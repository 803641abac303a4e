//! Bodies of the sharing and enablement routes: share grants, bindings, granted
//! jobs and the room menu.

use crate::openapi::enums::string_enum;
use crate::pagination::list_response;
use crate::routes::sandbox::tasks::views::RuntimeContract;
use chrono::{DateTime, Utc};
use domain::secrets::resolve::SlotResolution;
use domain::sharing::binding::SlotAssignment;
use domain::sharing::policy::SlotPolicies;
use domain::sharing::share::ShareTargetKind;
use domain::wire::wire;
use projections::read_models::sharing::query::{BindingRow, GrantRow};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

/// `SandboxShareCreateRequest`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxShareCreateRequest {
    /// `chatroom`, `department` or `company`.
    #[schema(schema_with = string_enum::<ShareTargetKind>)]
    pub target_kind: ShareTargetKind,
    /// A live room, department or the company itself.
    pub target_id: Uuid,
    /// Slot name to `borrower`, `owner` or `owner_overridable` (at most 100);
    /// settable only here.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub secret_slot_policies: Option<Value>,
}

/// `SandboxShareRevokeRequest` (also `SandboxBindingRevokeRequest`).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxRevokeRequest {
    /// Why, up to 512 characters.
    #[serde(default)]
    pub reason: Option<String>,
}

/// `SandboxShareGrantResponse`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxShareGrantResponse {
    /// The grant (one per generation of a task and target).
    pub id: Uuid,
    /// The shared task.
    pub task_id: Uuid,
    /// `chatroom`, `department` or `company`.
    pub target_kind: String,
    /// The target's id.
    pub target_id: Uuid,
    /// 1, then one more per reshare of the same target.
    pub generation: i64,
    /// Who fills each listed slot (absent slots: `borrower`).
    #[schema(value_type = Object)]
    pub secret_slot_policies: SlotPolicies,
    /// `active` or `revoked`.
    pub state: String,
    /// Why it was revoked.
    pub revoke_reason: Option<String>,
    /// Who shared it (`user:<id>`).
    pub granted_by: String,
    /// Shared.
    pub created_at: DateTime<Utc>,
    /// Revoked.
    pub revoked_at: Option<DateTime<Utc>>,
}

impl From<GrantRow> for SandboxShareGrantResponse {
    fn from(row: GrantRow) -> Self {
        Self {
            id: row.id,
            task_id: row.task_id,
            target_kind: row.target_kind.as_str().into(),
            target_id: row.target_id,
            generation: row.generation,
            secret_slot_policies: row.secret_slot_policies.0,
            state: wire(&row.state),
            revoke_reason: row.revoke_reason,
            granted_by: row.granted_by,
            created_at: row.created_at,
            revoked_at: row.revoked_at,
        }
    }
}

list_response!(
    /// `SandboxShareGrantListResponse`.
    SandboxShareGrantListResponse of SandboxShareGrantResponse
);

/// `SandboxBindingCreateRequest`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxBindingCreateRequest {
    /// The room.
    pub chatroom_id: Uuid,
    /// The task.
    pub task_id: Uuid,
    /// The published version to pin.
    pub task_version_id: Uuid,
}

/// `SandboxBindingAcceptVersionRequest`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxBindingAcceptVersionRequest {
    /// The published version to pin now.
    pub task_version_id: Uuid,
}

/// `SandboxGrantedJobEnableRequest`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxGrantedJobEnableRequest {
    /// The version to pin; the newest published one by default.
    #[serde(default)]
    pub task_version_id: Option<Uuid>,
}

/// A secret slot as rooms see it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SandboxSecretSlot {
    /// Slot name.
    pub name: String,
    /// `borrower`, `owner` or `owner_overridable`.
    pub policy: String,
    /// Whether the borrowing scope has a value bound.
    pub borrower_bound: bool,
    /// Whether the owner has a value bound.
    pub owner_bound: bool,
    /// `borrower`, `owner` or `missing`.
    pub effective_source: String,
}

impl From<&SlotResolution> for SandboxSecretSlot {
    fn from(slot: &SlotResolution) -> Self {
        Self {
            name: slot.name.clone(),
            policy: slot.policy.as_str().into(),
            borrower_bound: slot.borrower.is_some(),
            owner_bound: slot.owner.is_some(),
            effective_source: slot
                .source()
                .map_or("missing", |source| source.as_str())
                .into(),
        }
    }
}

/// Replaces room-facing slot views with their resolution (when one is known).
pub fn resolve_views(views: &mut Vec<SandboxSecretSlot>, resolved: Option<&Vec<SlotResolution>>) {
    if let Some(resolved) = resolved {
        *views = resolved.iter().map(Into::into).collect();
    }
}

impl From<&SlotAssignment> for SandboxSecretSlot {
    /// A slot before resolution: nothing bound, `missing`.
    fn from(slot: &SlotAssignment) -> Self {
        Self {
            name: slot.name.clone(),
            policy: slot.policy.as_str().into(),
            borrower_bound: false,
            owner_bound: false,
            effective_source: "missing".into(),
        }
    }
}

/// The room's slots of a pin.
pub fn secret_slots(slots: &[SlotAssignment]) -> Vec<SandboxSecretSlot> {
    slots.iter().map(Into::into).collect()
}

/// `SandboxBindingResponse`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxBindingResponse {
    /// The binding (one per generation of a room and task).
    pub id: Uuid,
    /// The room.
    pub chatroom_id: Uuid,
    /// The task.
    pub task_id: Uuid,
    /// Its name.
    pub task_name: String,
    /// The pinned version.
    pub task_version_id: Uuid,
    /// Its number.
    pub version_number: i64,
    /// Its canonical digest.
    pub task_version_digest: String,
    /// The grant the binding is enabled under.
    pub share_grant_id: Uuid,
    /// `enabled` or `revoked`.
    pub state: String,
    /// Whether the binding applies now (enabled and its pinned version not archived).
    pub authority_applicable: bool,
    /// Whether a newer published version exists.
    pub update_available: bool,
    /// The pinned version's secret slots.
    pub secret_slots: Vec<SandboxSecretSlot>,
    /// 1, then one more per re-enablement.
    pub generation: i64,
    /// Why it was revoked (`disabled`, `share_revoked`, `task_archived`,
    /// `superseded` or the revoker's reason).
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
            state: wire(&row.state),
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

/// A management list of bindings (at most 2000 rows).
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxBindingListResponse {
    /// Newest first.
    pub items: Vec<SandboxBindingResponse>,
    /// Whether more rows exist than the cap.
    pub truncated: bool,
}

/// `SandboxGrantedJobItemResponse`: a task granted to the room and its enablement.
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxGrantedJobItemResponse {
    /// The task.
    pub task_id: Uuid,
    /// Its name.
    pub task_name: String,
    /// `company` or `department`.
    pub owner_scope: String,
    /// The owning company or department.
    pub owner_id: Uuid,
    /// The grant the binding is enabled under; before enabling, the grant that
    /// reaches the room (room, then department, then company). Enabling again
    /// re-pins to the latter.
    pub share_grant_id: Uuid,
    /// That grant's target kind.
    pub share_target_kind: String,
    /// That grant's slot policies.
    #[schema(value_type = Object)]
    pub secret_slot_policies: SlotPolicies,
    /// The newest published version.
    pub latest_published_version_id: Option<Uuid>,
    /// Whether the room has enabled the task.
    pub enabled: bool,
    /// The live binding.
    pub binding_id: Option<Uuid>,
    /// The pinned version.
    pub task_version_id: Option<Uuid>,
    /// Its digest.
    pub task_version_digest: Option<String>,
    /// Whether the pin applies (its version not archived).
    pub authority_applicable: bool,
    /// Whether a newer published version than the pin exists.
    pub update_available: bool,
    /// The secret slots of the pinned version (or, before enabling, of the newest
    /// published one) with the grant's policies.
    pub secret_slots: Vec<SandboxSecretSlot>,
}

/// `SandboxGrantedJobListResponse`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxGrantedJobListResponse {
    /// Granted tasks by name.
    pub items: Vec<SandboxGrantedJobItemResponse>,
    /// Whether more than 2000 tasks are granted.
    pub truncated: bool,
}

/// One menu entry.
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxMenuItem {
    /// The task.
    pub task_id: Uuid,
    /// Its name.
    pub task_name: String,
    /// The pinned version (what a submission names).
    pub task_version_id: Uuid,
    /// Its canonical digest.
    pub task_version_digest: String,
    /// Its input schema.
    #[schema(value_type = Option<Object>)]
    pub input_schema: Option<Value>,
    /// Its secret slots.
    pub secret_slots: Vec<SandboxSecretSlot>,
    /// Always the default contract (never the version's real work command).
    pub runtime_contract: RuntimeContract,
    /// Set when the job reads secrets.
    pub secret_use_risk_warning: Option<String>,
}

list_response!(
    /// `SandboxMenuResponse`.
    SandboxMenuResponse of SandboxMenuItem
);
