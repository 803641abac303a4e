//! Request and response shapes of the secret routes. No response carries a value,
//! a ciphertext, a digest or a value version id.

use crate::openapi::enums::string_enum;
use chrono::{DateTime, Utc};
use domain::secrets::ConsumerScope;
use projections::read_models::secrets::query::{ApprovalRow, SecretBindingRow};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

/// `SandboxEncryptedValue`: a hybrid envelope to the transit key.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxEncryptedValue {
    /// Base64 of the 32-byte AES-256 key under RSA-OAEP-SHA256.
    pub encrypted_key: String,
    /// Base64 of the 12-byte AES-GCM nonce.
    pub iv: String,
    /// Base64 of the AES-256-GCM ciphertext with its 16-byte tag.
    pub ciphertext: String,
}

/// `SandboxSecretWriteRequest` (write and rotate).
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxSecretWriteRequest {
    /// `chatroom`, `department` or `company`.
    #[schema(schema_with = string_enum::<ConsumerScope>)]
    pub consumer_scope: ConsumerScope,
    /// The room, department or company id.
    pub consumer_id: Uuid,
    /// The task whose slot this fills.
    pub task_id: Uuid,
    /// The slot (`^[A-Za-z_][A-Za-z0-9_]{0,127}$`).
    #[schema(pattern = "^[A-Za-z_][A-Za-z0-9_]{0,127}$")]
    pub slot_name: String,
    /// The value, encrypted to `GET /public/info/model_key/public_key`.
    pub encrypted_value: Option<SandboxEncryptedValue>,
    /// Always rejected unless empty or `null` (plaintext is never accepted).
    #[schema(value_type = Option<String>)]
    pub value: Option<Value>,
}

/// `SandboxSecretRevokeRequest`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxSecretRevokeRequest {
    /// `chatroom`, `department` or `company`.
    #[schema(schema_with = string_enum::<ConsumerScope>)]
    pub consumer_scope: ConsumerScope,
    /// The room, department or company id.
    pub consumer_id: Uuid,
    /// The task.
    pub task_id: Uuid,
    /// The slot (`^[A-Za-z_][A-Za-z0-9_]{0,127}$`).
    #[schema(pattern = "^[A-Za-z_][A-Za-z0-9_]{0,127}$")]
    pub slot_name: String,
}

/// `SandboxSecretOperationResponse`: what a write, rotation or revocation did.
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxSecretOperationResponse {
    /// The operation (the same for a replay of the same `Idempotency-Key`).
    pub id: Uuid,
    /// `write`, `rotate` or `revoke`.
    pub kind: &'static str,
    /// `applied` for a write or rotation, `terminal` for a revocation.
    pub state: &'static str,
    /// The binding it changed, masked.
    pub secret_binding: SandboxSecretBindingResponse,
}

/// `SandboxSecretBindingResponse`: a binding, masked.
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxSecretBindingResponse {
    /// The binding (one per generation).
    pub id: Uuid,
    /// `chatroom`, `department` or `company`.
    pub consumer_scope: String,
    /// The consumer's id.
    pub consumer_id: Uuid,
    /// The task.
    pub task_id: Uuid,
    /// The slot.
    pub slot_name: String,
    /// `active` or `revoked`.
    pub state: String,
    /// Always `true`: values are never shown.
    pub masked: bool,
    /// Versions written in this generation (writes and rotations).
    pub version_count: i64,
    /// Who wrote or revoked last.
    pub updated_by: String,
    /// First written.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// Revoked.
    pub revoked_at: Option<DateTime<Utc>>,
}

impl From<SecretBindingRow> for SandboxSecretBindingResponse {
    fn from(row: SecretBindingRow) -> Self {
        Self {
            id: row.id,
            consumer_scope: row.consumer_scope,
            consumer_id: row.consumer_id,
            task_id: row.task_id,
            slot_name: row.slot_name,
            state: row.state,
            masked: true,
            version_count: row.version_count,
            updated_by: row.written_by,
            created_at: row.created_at,
            updated_at: row.updated_at,
            revoked_at: row.revoked_at,
        }
    }
}

/// A capped management list of bindings.
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxSecretBindingListResponse {
    /// Newest first, at most 2000.
    pub items: Vec<SandboxSecretBindingResponse>,
    /// Whether more exist than listed.
    pub truncated: bool,
}

/// `SandboxSecretApprovalCreateRequest`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxSecretApprovalCreateRequest {
    /// `chatroom`, `department` or `company`.
    #[schema(schema_with = string_enum::<ConsumerScope>)]
    pub consumer_scope: ConsumerScope,
    /// The room, department or company id.
    pub consumer_id: Uuid,
    /// The task.
    pub task_id: Uuid,
    /// The exact version.
    pub task_version_id: Uuid,
    /// Its canonical digest (`sha256:` and 64 hex digits).
    #[schema(pattern = "^sha256:[0-9a-f]{64}$")]
    pub task_version_digest: String,
    /// The slots the version may read (1..100 valid slot names).
    #[schema(schema_with = crate::openapi::shapes::slot_names)]
    pub slot_names: Vec<String>,
    /// Must be `true`.
    #[schema(schema_with = crate::openapi::shapes::accepted)]
    pub risk_accepted: bool,
}

/// `SandboxSecretApprovalRevokeRequest`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxSecretApprovalRevokeRequest {
    /// Why (up to 512 characters).
    #[serde(default)]
    pub reason: Option<String>,
}

/// `SandboxSecretApprovalResponse`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxSecretApprovalResponse {
    /// The approval (one per generation).
    pub id: Uuid,
    /// `chatroom`, `department` or `company`.
    pub consumer_scope: String,
    /// The consumer's id.
    pub consumer_id: Uuid,
    /// The task.
    pub task_id: Uuid,
    /// The exact version.
    pub task_version_id: Uuid,
    /// Its digest.
    pub task_version_digest: String,
    /// The approved slots, sorted.
    pub slot_names: Vec<String>,
    /// `explicit` or `enablement`.
    pub source: String,
    /// `active` or `revoked`.
    pub state: String,
    /// Why it was revoked (`superseded` by a newer approval of the same version).
    pub revoke_reason: Option<String>,
    /// Who approved.
    pub approved_by: String,
    /// Approved.
    pub created_at: DateTime<Utc>,
    /// Revoked.
    pub revoked_at: Option<DateTime<Utc>>,
}

impl From<ApprovalRow> for SandboxSecretApprovalResponse {
    fn from(row: ApprovalRow) -> Self {
        Self {
            id: row.id,
            consumer_scope: row.consumer_scope,
            consumer_id: row.consumer_id,
            task_id: row.task_id,
            task_version_id: row.task_version_id,
            task_version_digest: row.task_version_digest,
            slot_names: row.slot_names,
            source: row.source,
            state: row.state,
            revoke_reason: row.revoke_reason,
            approved_by: row.approved_by,
            created_at: row.created_at,
            revoked_at: row.revoked_at,
        }
    }
}

/// A capped management list of approvals.
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxSecretApprovalListResponse {
    /// Newest first, at most 2000.
    pub items: Vec<SandboxSecretApprovalResponse>,
    /// Whether more exist than listed.
    pub truncated: bool,
}
