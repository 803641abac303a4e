//! Queries of the task read models, as the task, sharing and run routes read them.

use super::rows::{TaskRow, VersionRow};
use crate::read_models::page::{LifecycleFilter, Window};
use chrono::{DateTime, Utc};
use sqlx::PgPool;
use uuid::Uuid;

/// A task with its newest published version.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TaskSummary {
    /// The task.
    #[sqlx(flatten)]
    pub task: TaskRow,
    /// Its newest published version, if any.
    pub latest_published_version_id: Option<Uuid>,
}

const SUMMARY: &str = "SELECT t.*,
        (SELECT v.id FROM task_versions v WHERE v.task_id = t.id AND v.state = 'published'
          ORDER BY v.version_number DESC LIMIT 1) AS latest_published_version_id
   FROM tasks t";

/// A task of the company (hidden Quick Run parents included).
pub async fn task(pool: &PgPool, company: Uuid, id: Uuid) -> sqlx::Result<Option<TaskSummary>> {
    sqlx::query_as(&format!("{SUMMARY} WHERE t.id = $1 AND t.company_id = $2"))
        .bind(id)
        .bind(company)
        .fetch_optional(pool)
        .await
}

/// The company's listed tasks (never Quick Run parents), newest first.
pub async fn tasks(
    pool: &PgPool,
    company: Uuid,
    lifecycle: LifecycleFilter,
    window: Window<(DateTime<Utc>, Uuid)>,
) -> sqlx::Result<Vec<TaskSummary>> {
    let (after_time, after_id) = window
        .after
        .unwrap_or((DateTime::<Utc>::MAX_UTC, Uuid::max()));
    sqlx::query_as(&format!(
        "{SUMMARY}
          WHERE t.company_id = $1 AND NOT t.hidden
            AND ($2 OR (t.lifecycle = 'active') = $3)
            AND (t.created_at, t.id) < ($4, $5)
          ORDER BY t.created_at DESC, t.id DESC
          LIMIT $6"
    ))
    .bind(company)
    .bind(lifecycle == LifecycleFilter::All)
    .bind(lifecycle == LifecycleFilter::Active)
    .bind(after_time)
    .bind(after_id)
    .bind(window.limit)
    .fetch_all(pool)
    .await
}

/// A version with what its response needs besides: its environment and whether a
/// later published version exists.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct VersionDetail {
    /// The version.
    #[sqlx(flatten)]
    pub version: VersionRow,
    /// The pinned environment version's environment.
    pub environment_id: Option<Uuid>,
    /// Its name.
    pub environment_name: Option<String>,
    /// Whether a later published version exists.
    pub update_available: bool,
}

const DETAIL: &str = "SELECT v.*, ev.environment_id, e.name AS environment_name,
        EXISTS (SELECT 1 FROM task_versions n WHERE n.task_id = v.task_id AND n.state = 'published'
                AND n.version_number > v.version_number) AS update_available
   FROM task_versions v
   LEFT JOIN environment_versions ev ON ev.id = v.environment_version_id
   LEFT JOIN environments e ON e.id = ev.environment_id";

/// A version of the task.
pub async fn version(
    pool: &PgPool,
    task: Uuid,
    version: Uuid,
) -> sqlx::Result<Option<VersionDetail>> {
    sqlx::query_as(&format!("{DETAIL} WHERE v.id = $1 AND v.task_id = $2"))
        .bind(version)
        .bind(task)
        .fetch_optional(pool)
        .await
}

/// Versions of a task, newest first; drafts only when `drafts`, a version is live
/// until archived.
pub async fn versions(
    pool: &PgPool,
    task: Uuid,
    drafts: bool,
    lifecycle: LifecycleFilter,
    window: Window<i64>,
) -> sqlx::Result<Vec<VersionDetail>> {
    sqlx::query_as(&format!(
        "{DETAIL}
          WHERE v.task_id = $1
            AND ($2 OR (v.state <> 'archived') = $3)
            AND ($4 OR v.state <> 'draft')
            AND v.version_number < $5
          ORDER BY v.version_number DESC
          LIMIT $6"
    ))
    .bind(task)
    .bind(lifecycle == LifecycleFilter::All)
    .bind(lifecycle == LifecycleFilter::Active)
    .bind(drafts)
    .bind(window.after.unwrap_or(i64::MAX))
    .bind(window.limit)
    .fetch_all(pool)
    .await
}

/// The task's versions not yet archived, oldest first.
pub async fn unarchived_version_ids(pool: &PgPool, task: Uuid) -> sqlx::Result<Vec<Uuid>> {
    sqlx::query_scalar(
        "SELECT id FROM task_versions WHERE task_id = $1 AND state <> 'archived' ORDER BY version_number",
    )
    .bind(task)
    .fetch_all(pool)
    .await
}

/// The version to pin: `version` when given, else the newest runnable one.
pub async fn pin_candidate(
    pool: &PgPool,
    task: Uuid,
    version: Option<Uuid>,
) -> sqlx::Result<Option<VersionRow>> {
    sqlx::query_as(
        "SELECT * FROM task_versions
          WHERE task_id = $1
            AND ($2::uuid IS NULL AND state = 'published' AND content_state = 'active' OR id = $2)
          ORDER BY version_number DESC LIMIT 1",
    )
    .bind(task)
    .bind(version)
    .fetch_optional(pool)
    .await
}

/// Whether the task has a published version with its contents held.
pub async fn has_runnable_version(pool: &PgPool, task: Uuid) -> sqlx::Result<bool> {
    sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM task_versions WHERE task_id = $1 AND state = 'published' AND content_state = 'active')",
    )
    .bind(task)
    .fetch_one(pool)
    .await
}

/// A version of the company with its task (run submission checks both).
pub async fn version_with_task(
    pool: &PgPool,
    company: Uuid,
    version: Uuid,
) -> sqlx::Result<Option<(VersionRow, TaskRow)>> {
    let Some(version) = sqlx::query_as::<_, VersionRow>(
        "SELECT * FROM task_versions WHERE id = $1 AND company_id = $2",
    )
    .bind(version)
    .bind(company)
    .fetch_optional(pool)
    .await?
    else {
        return Ok(None);
    };
    let task: Option<TaskRow> = sqlx::query_as("SELECT * FROM tasks WHERE id = $1")
        .bind(version.task_id)
        .fetch_optional(pool)
        .await?;
    Ok(task.map(|task| (version, task)))
}
