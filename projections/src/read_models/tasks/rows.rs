//! Rows and tables of the task read models (migration `0201_tasks.sql`).

use crate::read_models::Table;
use chrono::{DateTime, Utc};
use domain::environments::environment::{Lifecycle, OwnerScope};
use domain::tasks::contents::VersionContents;
use domain::tasks::version::{ContentState, TaskVersionState};
use serde::{Deserialize, Serialize};
use sqlx::types::Json;
use uuid::Uuid;

pub(super) const TASKS: Table = Table {
    name: "tasks",
    key: &["id"],
    columns: &[
        ("id", "uuid"),
        ("company_id", "uuid"),
        ("owner_scope", "text"),
        ("owner_id", "uuid"),
        ("name", "text"),
        ("description", "text"),
        ("agent_enabled", "boolean"),
        ("hidden", "boolean"),
        ("lifecycle", "text"),
        ("version_count", "bigint"),
        ("created_at", "timestamptz"),
        ("updated_at", "timestamptz"),
    ],
};

pub(super) const VERSIONS: Table = Table {
    name: "task_versions",
    key: &["id"],
    columns: &[
        ("id", "uuid"),
        ("task_id", "uuid"),
        ("company_id", "uuid"),
        ("version_number", "bigint"),
        ("state", "text"),
        ("content_state", "text"),
        ("environment_version_id", "uuid"),
        ("contents", "jsonb"),
        ("canonical_digest", "text"),
        ("content_hash", "text"),
        ("published_at", "timestamptz"),
        ("created_at", "timestamptz"),
        ("updated_at", "timestamptz"),
    ],
};

/// Key of the id-keyed tables.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub(super) struct Id {
    pub id: Uuid,
}

/// A catalog task (`tasks`).
#[derive(Debug, Clone, Serialize, Deserialize, sqlx::FromRow)]
pub struct TaskRow {
    /// Id.
    pub id: Uuid,
    /// Its company.
    pub company_id: Uuid,
    /// Company or department.
    pub owner_scope: OwnerScope,
    /// The owning company or department.
    pub owner_id: Uuid,
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Legacy flag.
    pub agent_enabled: bool,
    /// A Quick Run parent (never listed).
    pub hidden: bool,
    /// Active or archived.
    pub lifecycle: Lifecycle,
    /// Versions allocated so far.
    pub version_count: i64,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

/// A task version (`task_versions`).
#[derive(Debug, Clone, Serialize, Deserialize, sqlx::FromRow)]
pub struct VersionRow {
    /// Id.
    pub id: Uuid,
    /// Its task.
    pub task_id: Uuid,
    /// Its company.
    pub company_id: Uuid,
    /// Number within the task.
    pub version_number: i64,
    /// Draft, published or archived.
    pub state: TaskVersionState,
    /// Whether its contents are still held.
    pub content_state: ContentState,
    /// The environment version it pins.
    pub environment_version_id: Uuid,
    /// Scripts, contract and policy.
    pub contents: Json<VersionContents>,
    /// Canonical digest (`sha256:`).
    pub canonical_digest: String,
    /// Hash of the contents.
    pub content_hash: String,
    /// When it was published.
    pub published_at: Option<DateTime<Utc>>,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

impl VersionRow {
    /// Published with its contents held (spec rule 2: shareable, enableable,
    /// runnable).
    pub fn runnable(&self) -> bool {
        self.state == TaskVersionState::Published && self.content_state == ContentState::Active
    }
}
