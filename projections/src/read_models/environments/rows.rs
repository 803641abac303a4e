//! Rows and tables of the environment read models (migration `0200_environments.sql`).

use crate::read_models::Table;
use chrono::{DateTime, Utc};
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

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct EnvironmentRow {
    pub id: Uuid,
    pub company_id: Option<Uuid>,
    pub owner_kind: String,
    pub owner_scope: String,
    pub owner_id: Option<Uuid>,
    pub name: String,
    pub description: String,
    pub lifecycle: String,
    pub security_state: String,
    pub version_count: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct VersionRow {
    pub id: Uuid,
    pub environment_id: Uuid,
    pub company_id: Option<Uuid>,
    pub version_number: i64,
    pub state: String,
    pub security_state: String,
    pub resource_profile: String,
    pub owned_object_id: Option<Uuid>,
    pub source_digest: Option<String>,
    pub source_ref: Option<String>,
    pub image: Option<String>,
    pub runner_release: String,
    pub ready_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct AttemptRow {
    pub id: Uuid,
    pub version_id: Uuid,
    pub environment_id: Uuid,
    pub company_id: Option<Uuid>,
    pub attempt_number: i64,
    pub status: String,
    pub terminal_class: Option<String>,
    pub stage_code: Option<String>,
    pub error_code: Option<String>,
    pub error_detail: Option<String>,
    pub build_region: String,
    pub build_profile: String,
    pub report_object_id: Option<Uuid>,
    pub report_total_bytes: Option<i64>,
    pub retryable_until: Option<DateTime<Utc>>,
    pub worker_id: Option<String>,
    pub queued_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}
