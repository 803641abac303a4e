//! The run history of a task, as its managers page and filter it.

use chrono::{DateTime, Utc};
use domain::runs::run::{RunStatus, SubmissionSource};
use sqlx::PgPool;
use uuid::Uuid;

/// Filters of a task's run history (each `None` matches everything).
#[derive(Debug, Clone, Default)]
pub struct HistoryFilters {
    /// Run status.
    pub status: Option<String>,
    /// `agent` or `manual`.
    pub method: Option<String>,
    /// `internal_user` or `external_user`.
    pub executor_kind: Option<String>,
    /// `chatroom`, `department` or `external_platform`.
    pub source_kind: Option<String>,
    /// The room's department.
    pub department_id: Option<Uuid>,
    /// The room.
    pub chatroom_id: Option<Uuid>,
}

/// One row of a task's run history, with the kinds derived for its filters.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct HistoryRow {
    /// The run.
    pub run_id: Uuid,
    /// Its room.
    pub chatroom_id: Uuid,
    /// The room's name.
    pub chatroom_name: Option<String>,
    /// The room's department.
    pub department_id: Option<Uuid>,
    /// Status.
    pub status: RunStatus,
    /// `agent` or `manual` (rest, quick_run and custom_table_trigger).
    pub method: String,
    /// `internal_user` or `external_user`.
    pub executor_kind: String,
    /// `chatroom`, `department` or `external_platform`.
    pub source_kind: String,
    /// Who submitted it.
    pub principal_id: Uuid,
    /// Where it came from.
    pub submission_source: SubmissionSource,
    /// The version.
    pub task_version_id: Uuid,
    /// Why it did not complete.
    pub error_code: Option<String>,
    /// Queued.
    pub queued_at: DateTime<Utc>,
    /// Ended.
    pub terminal_at: Option<DateTime<Utc>>,
}

/// The history rows of task `$1` (`h`) and the filters `$2`..`$7`.
const HISTORY: &str = "(SELECT r.id AS run_id, r.chatroom_id, c.name AS chatroom_name,
        c.department_id, r.status,
        CASE WHEN r.submission_source = 'agent' THEN 'agent' ELSE 'manual' END AS method,
        CASE WHEN r.principal_type = 'user' THEN 'internal_user' ELSE 'external_user' END AS executor_kind,
        CASE WHEN r.principal_type = 'social_media_client' THEN 'external_platform'
             WHEN c.department_id IS NOT NULL THEN 'department' ELSE 'chatroom' END AS source_kind,
        r.principal_id, r.submission_source, r.task_version_id, r.error_code, r.queued_at, r.terminal_at
       FROM runs r LEFT JOIN chatrooms c ON c.id = r.chatroom_id
      WHERE r.task_id = $1) h
    WHERE ($2::text IS NULL OR h.status = $2)
      AND ($3::text IS NULL OR h.method = $3)
      AND ($4::text IS NULL OR h.executor_kind = $4)
      AND ($5::text IS NULL OR h.source_kind = $5)
      AND ($6::uuid IS NULL OR h.department_id = $6)
      AND ($7::uuid IS NULL OR h.chatroom_id = $7)";

fn history_filtered<'q, O>(
    query: sqlx::query::QueryAs<'q, sqlx::Postgres, O, sqlx::postgres::PgArguments>,
    task: Uuid,
    filters: &'q HistoryFilters,
) -> sqlx::query::QueryAs<'q, sqlx::Postgres, O, sqlx::postgres::PgArguments> {
    query
        .bind(task)
        .bind(&filters.status)
        .bind(&filters.method)
        .bind(&filters.executor_kind)
        .bind(&filters.source_kind)
        .bind(filters.department_id)
        .bind(filters.chatroom_id)
}

/// A page of the task's run history, by queue time (`ascending` or newest first).
pub async fn history(
    pool: &PgPool,
    task: Uuid,
    filters: &HistoryFilters,
    ascending: bool,
    offset: i64,
    limit: i64,
) -> sqlx::Result<Vec<HistoryRow>> {
    let order = if ascending { "ASC" } else { "DESC" };
    let sql = format!(
        "SELECT h.* FROM {HISTORY} ORDER BY h.queued_at {order}, h.run_id {order} OFFSET $8 LIMIT $9"
    );
    history_filtered(sqlx::query_as(&sql), task, filters)
        .bind(offset)
        .bind(limit)
        .fetch_all(pool)
        .await
}

/// How many rows the task's run history has with these filters.
pub async fn history_count(
    pool: &PgPool,
    task: Uuid,
    filters: &HistoryFilters,
) -> sqlx::Result<i64> {
    let sql = format!("SELECT count(*) FROM {HISTORY}");
    let (count,): (i64,) = history_filtered(sqlx::query_as(&sql), task, filters)
        .fetch_one(pool)
        .await?;
    Ok(count)
}
