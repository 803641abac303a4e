//! Queries of the trigger runs read model.

use chrono::{DateTime, Utc};
use domain::tables::trigger::Trigger;
use sqlx::PgPool;
use sqlx::types::Json;
use uuid::Uuid;

/// A trigger run as lists show it and the runner reads it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TriggerRunRow {
    /// The run.
    pub id: Uuid,
    /// Its company.
    pub company_id: Uuid,
    /// The trigger's table.
    pub table_id: Uuid,
    /// The trigger.
    pub trigger_id: String,
    /// `pending`, `succeeded` or `failed`.
    pub status: String,
    /// The record it fired for.
    pub record_id: Option<Uuid>,
    /// The schedule window it serves.
    pub window_start: Option<DateTime<Utc>>,
    /// Whom its actions act as (`user:<id>`).
    pub author: String,
    /// The definition frozen when it was created.
    pub definition: Json<Trigger>,
    /// Why it failed.
    pub error: Option<String>,
    /// When it was created.
    pub created_at: DateTime<Utc>,
}

const COLUMNS: &str = "id, company_id, table_id, trigger_id, status, record_id, window_start, author, definition, error, created_at";

/// A table's runs, newest first.
pub async fn of_table(
    pool: &PgPool,
    table_id: Uuid,
    offset: i64,
    limit: i64,
) -> sqlx::Result<(Vec<TriggerRunRow>, i64)> {
    let rows = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM custom_table_trigger_runs WHERE table_id = $1
          ORDER BY created_at DESC, id DESC OFFSET $2 LIMIT $3"
    ))
    .bind(table_id)
    .bind(offset)
    .bind(limit)
    .fetch_all(pool)
    .await?;
    let total =
        sqlx::query_scalar("SELECT count(*) FROM custom_table_trigger_runs WHERE table_id = $1")
            .bind(table_id)
            .fetch_one(pool)
            .await?;
    Ok((rows, total))
}

/// Runs not yet done, oldest first.
pub async fn pending(pool: &PgPool, limit: i64) -> sqlx::Result<Vec<TriggerRunRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM custom_table_trigger_runs WHERE status = 'pending'
          ORDER BY created_at, id LIMIT $1"
    ))
    .bind(limit)
    .fetch_all(pool)
    .await
}

/// The enabled event triggers of a table that fire on `event` (`created` or
/// `updated`), first saved at or before `at`, with who saved them.
pub async fn event_triggers(
    pool: &PgPool,
    table_id: Uuid,
    event: &str,
    at: DateTime<Utc>,
) -> sqlx::Result<Vec<(Json<Trigger>, String)>> {
    sqlx::query_as(
        "SELECT definition, saved_by FROM custom_table_triggers
          WHERE table_id = $1 AND definition->>'on' = $2 AND (definition->>'enabled')::boolean
            AND created_at <= $3
          ORDER BY position",
    )
    .bind(table_id)
    .bind(event)
    .bind(at)
    .fetch_all(pool)
    .await
}

/// A run by id, in a company.
pub async fn run(pool: &PgPool, company: Uuid, id: Uuid) -> sqlx::Result<Option<TriggerRunRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM custom_table_trigger_runs WHERE id = $1 AND company_id = $2"
    ))
    .bind(id)
    .bind(company)
    .fetch_optional(pool)
    .await
}

/// Whether a run of the trigger is still pending.
pub async fn active(pool: &PgPool, table_id: Uuid, trigger_id: &str) -> sqlx::Result<bool> {
    sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM custom_table_trigger_runs
                         WHERE table_id = $1 AND trigger_id = $2 AND status = 'pending')",
    )
    .bind(table_id)
    .bind(trigger_id)
    .fetch_one(pool)
    .await
}
