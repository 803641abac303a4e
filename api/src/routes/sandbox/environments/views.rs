//! Request and response bodies of the environment routes, built from the read
//! models' rows.

use crate::access::EnvironmentVersion;
use crate::openapi::enums::string_enum;
use crate::pagination::list_response;
use chrono::{DateTime, Utc};
use domain::catalog::ResourceProfile;
use domain::environments::archive::ArchiveFormat;
use domain::environments::environment::OwnerScope;
use domain::environments::version::{BuildProfile, VersionState};
use domain::wire::wire;
use projections::read_models::context_uploads::UploadRow;
use projections::read_models::context_uploads::query::CompletedUpload;
use projections::read_models::environments::{AttemptRow, EnvironmentRow};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

/// `SandboxEnvironmentCreateRequest`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxEnvironmentCreateRequest {
    /// 1..256 characters.
    #[schema(min_length = 1, max_length = 256)]
    pub name: String,
    /// Up to 2048 characters.
    #[serde(default)]
    #[schema(max_length = 2048)]
    pub description: String,
    /// `company` (default) or `department`.
    #[serde(default)]
    #[schema(schema_with = string_enum::<OwnerScope>)]
    pub owner_scope: Option<OwnerScope>,
    /// The company id (optional) or the department id.
    #[serde(default)]
    pub owner_id: Option<Uuid>,
}

/// `SandboxEnvironmentUpdateRequest`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(min_properties = 1)]
pub struct SandboxEnvironmentUpdateRequest {
    /// New name, 1..256 characters.
    #[schema(min_length = 1, max_length = 256)]
    pub name: Option<String>,
    /// New description, up to 2048 characters.
    #[schema(max_length = 2048)]
    pub description: Option<String>,
}

/// `SandboxEnvironmentResponse`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxEnvironmentResponse {
    /// Id.
    pub id: Uuid,
    /// `system_curated` or `company`.
    pub owner_kind: String,
    /// `company` or `department`.
    pub owner_scope: String,
    /// The owning company or department (`null` for curated).
    pub owner_id: Option<Uuid>,
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// `active` or `archived`.
    pub lifecycle: String,
    /// `clear` or `blocked`.
    pub security_state: String,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

impl From<EnvironmentRow> for SandboxEnvironmentResponse {
    fn from(row: EnvironmentRow) -> Self {
        Self {
            id: row.id,
            owner_kind: wire(&row.owner_kind),
            owner_scope: wire(&row.owner_scope),
            owner_id: row.owner_id,
            name: row.name,
            description: row.description,
            lifecycle: wire(&row.lifecycle),
            security_state: wire(&row.security_state),
            created_at: row.created_at,
            updated_at: row.updated_at,
        }
    }
}

list_response!(
    /// `SandboxEnvironmentListResponse`.
    SandboxEnvironmentListResponse of SandboxEnvironmentResponse
);

/// `SandboxContextUploadInitRequest`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxContextUploadInitRequest {
    /// Bytes the PUT will send at most, 1..1 GiB.
    pub declared_bytes: i64,
    /// `zip`, `tar` or `tar.gz`.
    #[schema(schema_with = string_enum::<ArchiveFormat>)]
    pub archive_format: ArchiveFormat,
}

/// `SandboxContextUploadInitResponse`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxContextUploadInitResponse {
    /// The session.
    #[serde(flatten)]
    pub session: SandboxContextUploadSessionResponse,
    /// Send it in `X-Sandbox-Upload-Capability` with the PUT.
    pub capability: String,
    /// The header to send it in.
    pub capability_header: &'static str,
    /// When the capability stops working (15 minutes).
    pub capability_expires_at: DateTime<Utc>,
    /// Where to PUT the bytes.
    pub upload_url: String,
    /// Always `single_part`.
    pub upload_mode: &'static str,
}

/// `SandboxContextUploadSessionResponse`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxContextUploadSessionResponse {
    /// Session id.
    pub id: Uuid,
    /// Environment.
    pub environment_id: Uuid,
    /// `uploading`, `completing`, `completed`, `abort_pending` or `aborted`.
    pub state: String,
    /// Declared size.
    pub declared_bytes: i64,
    /// `zip`, `tar` or `tar.gz`.
    pub archive_format: String,
    /// Bytes received by the PUT.
    pub received_bytes: Option<i64>,
    /// `sha256:` of the received bytes.
    pub digest: Option<String>,
    /// The owned object, once completed.
    pub owned_object_id: Option<Uuid>,
    /// The rule that refused the last complete.
    pub error_detail: Option<String>,
    /// Opened.
    pub created_at: DateTime<Utc>,
    /// Expires (24 hours after opening).
    pub expires_at: DateTime<Utc>,
}

impl From<UploadRow> for SandboxContextUploadSessionResponse {
    fn from(row: UploadRow) -> Self {
        Self {
            id: row.id,
            environment_id: row.environment_id,
            state: wire(&row.state),
            declared_bytes: row.declared_bytes,
            archive_format: row.archive_format.as_str().into(),
            received_bytes: row.received_bytes,
            digest: row.digest,
            owned_object_id: row.owned_object_id,
            error_detail: row.error_detail,
            created_at: row.created_at,
            expires_at: row.expires_at,
        }
    }
}

/// `SandboxContextUploadPutResponse`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxContextUploadPutResponse {
    /// Session id.
    pub session_id: Uuid,
    /// State (`uploading`).
    pub state: String,
    /// Bytes received.
    pub received_bytes: i64,
    /// Their `sha256:` digest.
    pub digest: String,
}

/// `SandboxContextUploadCompleteRequest` (no fields; an empty object or no body).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxContextUploadCompleteRequest {}

/// `SandboxContextUploadCompleteResponse`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxContextUploadCompleteResponse {
    /// Session id.
    pub session_id: Uuid,
    /// `completed`.
    pub state: String,
    /// The object to create versions from.
    pub owned_object_id: Uuid,
    /// `sha256:` of the archive.
    pub digest: String,
    /// Its size.
    pub byte_size: i64,
}

/// One completed upload (`SandboxContextObjectListResponse` item).
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxContextObject {
    /// The owned object.
    pub owned_object_id: Uuid,
    /// The session it came from.
    pub session_id: Uuid,
    /// `sha256:` of the archive.
    pub digest: String,
    /// Its size.
    pub byte_size: i64,
    /// Archive format.
    pub archive_format: String,
    /// `active`, `delete_pending`, `deleted` or `tombstoned`.
    pub deletion_state: String,
    /// Completed.
    pub created_at: DateTime<Utc>,
    /// Versions built from it.
    pub used_by_version_ids: Vec<Uuid>,
}

impl From<CompletedUpload> for SandboxContextObject {
    fn from(r: CompletedUpload) -> Self {
        Self {
            owned_object_id: r.owned_object_id,
            session_id: r.session_id,
            digest: r.digest,
            byte_size: r.byte_size,
            archive_format: r.archive_format.as_str().into(),
            deletion_state: wire(&r.deletion_state),
            created_at: r.created_at,
            used_by_version_ids: r.used_by,
        }
    }
}

list_response!(
    /// `SandboxContextObjectListResponse`.
    SandboxContextObjectListResponse of SandboxContextObject
);

/// `SandboxEnvironmentVersionCreateRequest`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxEnvironmentVersionCreateRequest {
    /// The completed upload (preferred).
    pub owned_object_id: Option<Uuid>,
    /// `sha256:<64 hex>`; alone only its format is checked.
    pub source_digest: Option<String>,
    /// Free reference, up to 1024 characters.
    pub source_ref: Option<String>,
    /// A tenant-selectable profile (default `standard`).
    #[schema(schema_with = string_enum::<ResourceProfile>)]
    pub resource_profile: Option<ResourceProfile>,
}

/// `SandboxEnvironmentVersionResponse`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxEnvironmentVersionResponse {
    /// Id.
    pub id: Uuid,
    /// Environment.
    pub environment_id: Uuid,
    /// Environment name.
    pub environment_name: String,
    /// Number within the environment.
    pub version_number: i64,
    /// Version state.
    pub state: String,
    /// `clear` or `blocked`.
    pub security_state: String,
    /// Runtime profile.
    pub resource_profile: String,
    /// Whether it occupies a capacity-retained slot.
    pub capacity_retained: bool,
    /// When it became ready.
    pub ready_at: Option<DateTime<Utc>>,
    /// Runner release its images use.
    pub runner_release: String,
    /// Whether that release is approved.
    pub runner_release_approved: bool,
    /// What the owner should do about the runner release: `null`, or
    /// `rebuild_on_approved_runner` when the release is not approved (a new version
    /// builds with the service's current release).
    pub runner_release_next_action: Option<String>,
    /// Owner only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_digest: Option<String>,
    /// Owner only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_ref: Option<String>,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

impl From<EnvironmentVersion> for SandboxEnvironmentVersionResponse {
    /// `source_digest` and `source_ref` only for the environment's managers.
    fn from(handle: EnvironmentVersion) -> Self {
        let owner = handle.manager;
        let (v, environment_name) = (handle.row.version, handle.row.environment_name);
        let approved = handle
            .row
            .runner_release_decision
            .unwrap_or(v.runner_release == domain::runner_release::BUILT_IN);
        Self {
            id: v.id,
            environment_id: v.environment_id,
            environment_name,
            version_number: v.version_number,
            capacity_retained: v.state != VersionState::Archived,
            state: wire(&v.state),
            security_state: wire(&v.security_state),
            resource_profile: v.resource_profile.as_str().into(),
            ready_at: v.ready_at,
            runner_release_approved: approved,
            runner_release_next_action: (!approved).then(|| "rebuild_on_approved_runner".into()),
            runner_release: v.runner_release,
            source_digest: if owner { v.source_digest } else { None },
            source_ref: if owner { v.source_ref } else { None },
            created_at: v.created_at,
            updated_at: v.updated_at,
        }
    }
}

list_response!(
    /// `SandboxEnvironmentVersionListResponse`.
    SandboxEnvironmentVersionListResponse of SandboxEnvironmentVersionResponse
);

/// `SandboxBuildAttemptCreateRequest`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxBuildAttemptCreateRequest {
    /// `SandboxRegionCode`; default `onprem` on-prem, `asia-east1` managed.
    pub build_region: Option<String>,
    /// `standard` (default), `fast` or `large`.
    #[schema(schema_with = string_enum::<BuildProfile>)]
    pub build_profile: Option<BuildProfile>,
}

/// `SandboxBuildAttemptResponse`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxBuildAttemptResponse {
    /// Id.
    pub id: Uuid,
    /// The version.
    pub environment_version_id: Uuid,
    /// Number within the version.
    pub attempt_number: i64,
    /// Attempt state.
    pub status: String,
    /// `validation`, `build` or `verify` while running.
    pub phase: Option<String>,
    /// How it ended.
    pub terminal_class: Option<String>,
    /// The step that failed.
    pub stage_code: Option<String>,
    /// `context_invalid`, `dockerfile_exit`, `policy_reject`, `tenant_cancel`, ...
    pub error_code: Option<String>,
    /// The specific rule (up to 128 characters).
    pub error_detail: Option<String>,
    /// Build region.
    pub build_region: String,
    /// Build profile.
    pub build_profile: String,
    /// Size of the stored build report.
    pub report_total_bytes: Option<i64>,
    /// End of the retry window while the version is `retryable_failed`.
    pub retryable_until: Option<DateTime<Utc>>,
    /// Queued.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

impl From<AttemptRow> for SandboxBuildAttemptResponse {
    fn from(row: AttemptRow) -> Self {
        Self {
            id: row.id,
            environment_version_id: row.version_id,
            attempt_number: row.attempt_number,
            phase: row.status.phase().map(|p| wire(&p)),
            status: wire(&row.status),
            terminal_class: row.terminal_class.map(|c| wire(&c)),
            stage_code: row.stage_code,
            error_code: row.error_code,
            error_detail: row.error_detail,
            build_region: row.build_region,
            build_profile: wire(&row.build_profile),
            report_total_bytes: row.report_total_bytes,
            retryable_until: row.retryable_until,
            created_at: row.queued_at,
            updated_at: row.updated_at,
        }
    }
}

list_response!(
    /// `SandboxBuildAttemptListResponse`.
    SandboxBuildAttemptListResponse of SandboxBuildAttemptResponse
);
