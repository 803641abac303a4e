//! Bodies of the run routes.

use crate::pagination::list_response;
use chrono::{DateTime, Utc};
use projections::read_models::runs::query::ArtifactRow;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

/// `SandboxManualRunSubmitRequest` (parsed within the input bounds by the route).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxManualRunSubmitRequest {
    /// The published version to run.
    pub task_version_id: Uuid,
    /// Any JSON value; canonicalized (RFC 8785) into the inputs file.
    #[schema(value_type = Object)]
    pub input: Value,
    /// Seconds from start until the work is killed (may exceed the company ceiling).
    #[serde(default)]
    pub timeout_seconds: Option<i64>,
}

/// The optional body of a retry: no body, `{}` or `{input: null}` replays the
/// retained input.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxRunRetryRequest {
    /// A new input, validated and staged like a submission's.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub input: Option<Value>,
}

/// `SandboxRunDetailResponse`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxRunDetailResponse {
    /// Id.
    pub id: Uuid,
    /// Company.
    pub company_id: Uuid,
    /// Room.
    pub chatroom_id: Uuid,
    /// `queued`, `starting`, `running`, `cancel_requested` or a terminal class.
    pub status: String,
    /// The resource profile.
    pub resource_profile: String,
    /// `user` or `social_media_client`.
    pub principal_type: String,
    /// Who submitted it.
    pub principal_id: Uuid,
    /// `jwt` or `api_key`.
    pub auth_method: String,
    /// The task.
    pub task_id: Uuid,
    /// The pinned version.
    pub task_version_id: Uuid,
    /// Seconds from start until the work is killed.
    pub timeout_seconds: i64,
    /// `rest`, `agent`, `quick_run` or `custom_table_trigger`.
    pub submission_source: String,
    /// `sha256:` of the inputs file.
    pub input_digest: String,
    /// The run this one retries.
    pub retry_of_run_id: Option<Uuid>,
    /// Why it did not complete.
    pub error_code: Option<String>,
    /// Position in the queue, from 1.
    pub queue_position: Option<i64>,
    /// Estimated seconds until it starts (on-prem only).
    pub eta_seconds: Option<i64>,
    /// Queued.
    pub queued_at: Option<DateTime<Utc>>,
    /// Ended.
    pub terminal_at: Option<DateTime<Utc>>,
    /// Where each secret slot's value came from (`null`: no secrets yet).
    #[schema(value_type = Option<Object>)]
    pub secret_slot_provenance: Option<Value>,
}

list_response!(
    /// `SandboxRunListResponse`.
    SandboxRunListResponse of SandboxRunDetailResponse
);

/// `SandboxRunContentResponse`: flags only, no bytes.
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxRunContentResponse {
    /// `active`, or `expired` once the company's run content retention passed.
    pub state: String,
    /// Whether the staged input is kept.
    pub has_input: bool,
    /// Whether an output file was stored.
    pub has_output: bool,
    /// Whether a log was stored.
    pub has_log: bool,
    /// Whether an artifact bundle was stored.
    pub has_artifact_bundle: bool,
    /// `sha256:` of the inputs file.
    pub input_digest: String,
}

/// One artifact file.
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxRunArtifact {
    /// Id.
    pub id: Uuid,
    /// The run.
    pub run_id: Uuid,
    /// Path under the artifacts directory.
    pub relative_path: String,
    /// Bytes.
    pub byte_size: i64,
    /// `sha256:` of its bytes.
    pub digest: String,
    /// Content type guessed from its name.
    pub declared_content_type: String,
}

impl From<ArtifactRow> for SandboxRunArtifact {
    fn from(row: ArtifactRow) -> Self {
        Self {
            id: row.id,
            run_id: row.run_id,
            relative_path: row.relative_path,
            byte_size: row.byte_size,
            digest: row.digest,
            declared_content_type: row.declared_content_type,
        }
    }
}

list_response!(
    /// `SandboxRunArtifactListResponse`.
    SandboxRunArtifactListResponse of SandboxRunArtifact
);

/// `SandboxArtifactDownloadCapabilityResponse`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxArtifactDownloadCapabilityResponse {
    /// The artifact.
    pub artifact_id: Uuid,
    /// Its run.
    pub run_id: Uuid,
    /// Its company.
    pub company_id: Uuid,
    /// An opaque capability (there is no tenant redemption route).
    pub capability_token: String,
    /// 5 minutes from now.
    pub expires_at: DateTime<Utc>,
    /// The declared content type.
    pub content_type: String,
    /// `attachment; filename="..."`.
    pub content_disposition: String,
    /// `nosniff`.
    pub x_content_type_options: &'static str,
}

/// `SandboxPublicLinkResponse` (log and output) and
/// `SandboxArtifactPublicLinkResponse` (one artifact file).
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxPublicLinkResponse {
    /// The run.
    pub run_id: Uuid,
    /// `log` or `output` (absent from artifact links).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_kind: Option<String>,
    /// The artifact, for artifact links.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifact_id: Option<Uuid>,
    /// The permanent URL (no TTL).
    pub url: String,
    /// The token in the URL.
    pub token: String,
    /// Whether the link is revoked.
    pub revoked: bool,
    /// When it was minted.
    pub created_at: Option<DateTime<Utc>>,
}

/// `SandboxQuickRunRequest`: every field is required.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxQuickRunRequest {
    /// The hidden task's name (1..256).
    pub name: String,
    /// A ready company-owned or curated environment version.
    pub environment_version_id: Uuid,
    /// Up to 1 MiB.
    pub startup_script: String,
    /// Up to 1 MiB.
    pub work_script: String,
    /// At most 100 names.
    pub ordinary_env: std::collections::BTreeMap<String, String>,
    /// Any JSON value.
    #[schema(value_type = Object)]
    pub input: Value,
    /// 1..604680, within the company's ceiling.
    pub timeout_seconds: i64,
}

/// `SandboxQuickRunResponse`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxQuickRunResponse {
    /// The hidden task.
    pub task_id: Uuid,
    /// Its published version 1.
    pub task_version_id: Uuid,
    /// The run.
    pub run: SandboxRunDetailResponse,
}
