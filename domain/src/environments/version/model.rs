//! The states and records of environment versions and build attempts.

use crate::catalog::ResourceProfile;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Environment version states (spec section 3). This service reaches `draft`,
/// `build_queued`, `building`, `verifying`, `ready`, `retryable_failed`, `rejected`
/// and `archived`; the others are declared for completeness of the contract.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum VersionState {
    #[default]
    Draft,
    BuildQueued,
    Building,
    Quarantined,
    Verifying,
    Verified,
    RegionalProvisioning,
    Ready,
    RetryableFailed,
    Rejected,
    Abandoned,
    Blocked,
    Superseded,
    Archived,
    ProvisioningBlocked,
}

/// Build attempt states (spec section 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum BuildStatus {
    ValidationQueued,
    Validating,
    BuildQueued,
    Building,
    Verifying,
    Completed,
    CustomerFailed,
    PlatformFailed,
    CancelRequested,
    Cancelling,
    Cancelled,
}

impl BuildStatus {
    /// Whether the attempt has ended.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            Self::Completed | Self::CustomerFailed | Self::PlatformFailed | Self::Cancelled
        )
    }

    /// The phase this status belongs to.
    pub fn phase(self) -> Option<BuildPhase> {
        match self {
            Self::ValidationQueued | Self::Validating => Some(BuildPhase::Validation),
            Self::BuildQueued | Self::Building => Some(BuildPhase::Build),
            Self::Verifying => Some(BuildPhase::Verify),
            _ => None,
        }
    }
}

/// The step of a build.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BuildPhase {
    /// Archive and Dockerfile rules.
    Validation,
    /// The image build.
    Build,
    /// Checks of the built image.
    Verify,
}

/// How a build ended (`SandboxBuildTerminalClass`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TerminalClass {
    /// The image is ready.
    Completed,
    /// The tenant's context or Dockerfile failed.
    CustomerFailed,
    /// The platform failed.
    PlatformFailed,
    /// The tenant cancelled.
    Cancelled,
}

/// Build speed class (`SandboxBuildProfile`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BuildProfile {
    /// The default.
    #[default]
    Standard,
    /// More CPU.
    Fast,
    /// More memory and disk.
    Large,
}

/// Security state of environments and versions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SecurityState {
    /// Usable.
    #[default]
    Clear,
    /// Blocked by the operator.
    Blocked,
}

/// The stored build report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildReport {
    /// The owned object holding the builder's output.
    pub object_id: Uuid,
    /// Its size.
    pub total_bytes: i64,
}

/// How a failed build ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildFailure {
    /// `customer_failed` or `platform_failed`.
    pub terminal_class: TerminalClass,
    /// `context_invalid`, `dockerfile_exit`, `policy_reject`, `platform_failed`, ...
    pub error_code: String,
    /// The specific rule, up to 128 characters.
    pub error_detail: Option<String>,
    /// The step that failed.
    pub stage_code: Option<String>,
}

/// The facts a version is created with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionCreated {
    /// Its id.
    pub version_id: Uuid,
    /// Its environment.
    pub environment_id: Uuid,
    /// The company; `None` for curated environments.
    pub company_id: Option<Uuid>,
    /// Number within the environment, from 1.
    pub version_number: i64,
    /// The completed context archive it builds from.
    pub owned_object_id: Option<Uuid>,
    /// `sha256:<hex>` of the context, as sent or as the object has it.
    pub source_digest: Option<String>,
    /// A free reference (commit, tag), up to 1024 characters.
    pub source_ref: Option<String>,
    /// Runtime profile of runs on this version.
    pub resource_profile: ResourceProfile,
    /// The runner release images of this version are built with.
    pub runner_release: String,
}

/// One build attempt, as the version keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attempt {
    /// Its id.
    pub id: Uuid,
    /// Number within the version, from 1.
    pub number: i64,
    /// Status.
    pub status: BuildStatus,
    /// How it ended.
    pub failure: Option<BuildFailure>,
    /// `SandboxRegionCode`.
    pub region: String,
    /// Build profile.
    pub profile: BuildProfile,
    /// The stored report.
    pub report: Option<BuildReport>,
    /// The worker that claimed it.
    pub worker_id: Option<String>,
    /// End of the retry window (platform failures).
    pub retryable_until: Option<DateTime<Utc>>,
}
