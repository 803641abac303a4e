//! Rows and tables of the environment read models (migration `0200_environments.sql`).

use crate::read_models::Table;
use chrono::{DateTime, Utc};
use domain::catalog::ResourceProfile;
use domain::environments::environment::{Lifecycle, OwnerKind, OwnerScope};
use domain::environments::version::{
    BuildProfile, BuildStatus, SecurityState, TerminalClass, VersionState,
};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

pub(super) const ENVIRONMENTS: Table = Table {
    name: "environments",
    key: &["id"],
    columns: &[
        ("id", "uuid"),
        ("company_id", "uuid"),
        ("owner_kind", "text"),
        ("owner_scope", "text"),
        ("owner_id", "uuid"),
        ("name", "text"),
        ("description", "text"),
        ("lifecycle", "text"),
        ("security_state", "text"),
        ("version_count", "bigint"),
        ("created_at", "timestamptz"),
        ("updated_at", "timestamptz"),
    ],
};

pub(super) const VERSIONS: Table = Table {
    name: "environment_versions",
    key: &["id"],
    columns: &[
        ("id", "uuid"),
        ("environment_id", "uuid"),
        ("company_id", "uuid"),
        ("version_number", "bigint"),
        ("state", "text"),
        ("security_state", "text"),
        ("resource_profile", "text"),
        ("owned_object_id", "uuid"),
        ("source_digest", "text"),
        ("source_ref", "text"),
        ("image", "text"),
        ("runner_release", "text"),
        ("ready_at", "timestamptz"),
        ("created_at", "timestamptz"),
        ("updated_at", "timestamptz"),
    ],
};

pub(super) const ATTEMPTS: Table = Table {
    name: "build_attempts",
    key: &["id"],
    columns: &[
        ("id", "uuid"),
        ("version_id", "uuid"),
        ("environment_id", "uuid"),
        ("company_id", "uuid"),
        ("attempt_number", "bigint"),
        ("status", "text"),
        ("terminal_class", "text"),
        ("stage_code", "text"),
        ("error_code", "text"),
        ("error_detail", "text"),
        ("build_region", "text"),
        ("build_profile", "text"),
        ("report_object_id", "uuid"),
        ("report_total_bytes", "bigint"),
        ("retryable_until", "timestamptz"),
        ("worker_id", "text"),
        ("queued_at", "timestamptz"),
        ("updated_at", "timestamptz"),
    ],
};

/// Key of the id-keyed tables.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub(super) struct Id {
    pub id: Uuid,
}

/// An environment (`environments`).
#[derive(Debug, Clone, Serialize, Deserialize, sqlx::FromRow)]
pub struct EnvironmentRow {
    /// Id.
    pub id: Uuid,
    /// Owning company (`None` for curated).
    pub company_id: Option<Uuid>,
    /// Curated or company-owned.
    pub owner_kind: OwnerKind,
    /// Company or department.
    pub owner_scope: OwnerScope,
    /// The owning company or department (`None` for curated).
    pub owner_id: Option<Uuid>,
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Active or archived.
    pub lifecycle: Lifecycle,
    /// Clear or blocked.
    pub security_state: SecurityState,
    /// Versions allocated so far.
    pub version_count: i64,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

impl EnvironmentRow {
    /// Whether it is operator-curated (readable by every company, no tenant writes).
    pub fn curated(&self) -> bool {
        self.owner_kind == OwnerKind::SystemCurated
    }
}

/// An environment version (`environment_versions`).
#[derive(Debug, Clone, Serialize, Deserialize, sqlx::FromRow)]
pub struct VersionRow {
    /// Id.
    pub id: Uuid,
    /// Its environment.
    pub environment_id: Uuid,
    /// Owning company (`None` for curated).
    pub company_id: Option<Uuid>,
    /// Number within the environment.
    pub version_number: i64,
    /// Version state.
    pub state: VersionState,
    /// Clear or blocked.
    pub security_state: SecurityState,
    /// Runtime profile.
    pub resource_profile: ResourceProfile,
    /// The uploaded context it builds from.
    pub owned_object_id: Option<Uuid>,
    /// The context's digest.
    pub source_digest: Option<String>,
    /// Free reference.
    pub source_ref: Option<String>,
    /// The built image, once ready.
    pub image: Option<String>,
    /// Runner release of its image.
    pub runner_release: String,
    /// When it became ready.
    pub ready_at: Option<DateTime<Utc>>,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

/// A build attempt (`build_attempts`).
#[derive(Debug, Clone, Serialize, Deserialize, sqlx::FromRow)]
pub struct AttemptRow {
    /// Id.
    pub id: Uuid,
    /// Its version.
    pub version_id: Uuid,
    /// Its environment.
    pub environment_id: Uuid,
    /// Owning company (`None` for curated).
    pub company_id: Option<Uuid>,
    /// Number within the version.
    pub attempt_number: i64,
    /// Attempt state.
    pub status: BuildStatus,
    /// How it ended.
    pub terminal_class: Option<TerminalClass>,
    /// The step that failed.
    pub stage_code: Option<String>,
    /// Why it failed.
    pub error_code: Option<String>,
    /// The specific rule.
    pub error_detail: Option<String>,
    /// Build region.
    pub build_region: String,
    /// Build profile.
    pub build_profile: BuildProfile,
    /// The stored build report.
    pub report_object_id: Option<Uuid>,
    /// Its size.
    pub report_total_bytes: Option<i64>,
    /// End of the retry window.
    pub retryable_until: Option<DateTime<Utc>>,
    /// The worker that claimed it.
    pub worker_id: Option<String>,
    /// Queued.
    pub queued_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}
