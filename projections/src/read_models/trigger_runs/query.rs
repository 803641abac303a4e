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
    /// `pending`, `running`, `succeeded` or `failed`.
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
    /// The sandbox runs it submitted.
    pub sandbox_run_ids: Vec<Uuid>,
    /// When it was created.
    pub created_at: DateTime<Utc>,
}

const COLUMNS: &str = "id, company_id, table_id, trigger_id, status, record_id, window_start, author, definition, error, sandbox_run_ids, created_at";

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

/// Runs waiting for the sandbox runs they submitted, oldest first.
pub async fn running(pool: &PgPool, limit: i64) -> sqlx::Result<Vec<TriggerRunRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM custom_table_trigger_runs WHERE status = 'running'
          ORDER BY created_at, id LIMIT $1"
    ))
    .bind(limit)
    .fetch_all(pool)
    .await
}

/// Runs by id (in no particular order).
pub async fn by_ids(pool: &PgPool, ids: &[Uuid]) -> sqlx::Result<Vec<TriggerRunRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM custom_table_trigger_runs WHERE id = ANY($1)
          ORDER BY created_at, id"
    ))
    .bind(ids)
    .fetch_all(pool)
    .await
}

/// An enabled event trigger of a table, with who saved it and when it was first
/// saved.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct EventTrigger {
    /// The trigger as saved.
    pub definition: Json<Trigger>,
    /// Who saved the trigger set.
    pub saved_by: String,
    /// When the trigger was first saved (writes before it fire nothing).
    pub created_at: DateTime<Utc>,
}

/// The enabled event triggers of a table, in set order.
pub async fn event_triggers(pool: &PgPool, table_id: Uuid) -> sqlx::Result<Vec<EventTrigger>> {
    sqlx::query_as(
        "SELECT definition, saved_by, created_at FROM custom_table_triggers
          WHERE table_id = $1 AND definition->>'on' IS NOT NULL
            AND (definition->>'enabled')::boolean
          ORDER BY position",
    )
    .bind(table_id)
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

/// Whether a run of the trigger is still pending or running.
pub async fn active(pool: &PgPool, table_id: Uuid, trigger_id: &str) -> sqlx::Result<bool> {
    sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM custom_table_trigger_runs
                         WHERE table_id = $1 AND trigger_id = $2
                           AND status IN ('pending', 'running'))",
    )
    .bind(table_id)
    .bind(trigger_id)
    .fetch_one(pool)
    .await
}

/// An enabled schedule trigger with its table's company.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SavedTrigger {
    /// The trigger's table.
    pub table_id: Uuid,
    /// The table's company.
    pub company_id: Uuid,
    /// The trigger as saved.
    pub definition: Json<Trigger>,
    /// Who saved the trigger set.
    pub saved_by: String,
    /// When the trigger was first saved.
    pub created_at: DateTime<Utc>,
}

/// Every enabled `date_column_reached` trigger.
pub async fn date_triggers(pool: &PgPool) -> sqlx::Result<Vec<SavedTrigger>> {
    sqlx::query_as(
        "SELECT t.table_id, c.company_id, t.definition, t.saved_by, t.created_at
           FROM custom_table_triggers t JOIN custom_tables c ON c.id = t.table_id
          WHERE (t.definition->>'enabled')::boolean
            AND t.definition->'schedule'->>'type' = 'date_column_reached'
          ORDER BY t.table_id, t.position",
    )
    .fetch_all(pool)
    .await
}

/// An enabled clock trigger (`cron`, `interval`, `daily`) with its window cursor.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ClockTrigger {
    /// The trigger.
    #[sqlx(flatten)]
    pub saved: SavedTrigger,
    /// The start of the last window a run was created for.
    pub last_window: Option<DateTime<Utc>>,
    /// Whether a run of the trigger is pending or running.
    pub active: bool,
}

/// Every enabled clock trigger with its window cursor.
pub async fn clock_triggers(pool: &PgPool) -> sqlx::Result<Vec<ClockTrigger>> {
    sqlx::query_as(
        "SELECT t.table_id, c.company_id, t.definition, t.saved_by, t.created_at, w.last_window,
                EXISTS (SELECT 1 FROM custom_table_trigger_runs r
                         WHERE r.table_id = t.table_id AND r.trigger_id = t.trigger_id
                           AND r.status IN ('pending', 'running')) AS active
           FROM custom_table_triggers t
           JOIN custom_tables c ON c.id = t.table_id
           LEFT JOIN custom_table_trigger_windows w
             ON w.table_id = t.table_id AND w.trigger_id = t.trigger_id
          WHERE (t.definition->>'enabled')::boolean
            AND t.definition->'schedule'->>'type' IN ('cron', 'interval', 'daily')",
    )
    .fetch_all(pool)
    .await
}

/// Moves a clock trigger's window cursor (not a read model: a rebuild must not
/// serve a window again).
pub async fn set_window(
    pool: &PgPool,
    table_id: Uuid,
    trigger_id: &str,
    window: DateTime<Utc>,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO custom_table_trigger_windows (table_id, trigger_id, last_window) VALUES ($1, $2, $3)
         ON CONFLICT (table_id, trigger_id) DO UPDATE SET last_window = EXCLUDED.last_window",
    )
    .bind(table_id)
    .bind(trigger_id)
    .bind(window)
    .execute(pool)
    .await
    .map(|_| ())
}

/// Where a `date_column_reached` trigger looks: its table's date or datetime
/// column, the offset, and the span of fire times that count.
#[derive(Debug, Clone)]
pub struct DateReach<'a> {
    /// The table.
    pub table_id: Uuid,
    /// The trigger.
    pub trigger_id: &'a str,
    /// The column's internal key.
    pub column: &'a str,
    /// Whether it is a `date` column (its value stands for midnight UTC).
    pub date: bool,
    /// Seconds added to the value.
    pub offset_seconds: i64,
    /// Fire times at or before this are not due (the trigger did not exist).
    pub after: DateTime<Utc>,
    /// Fire times after this are not due yet.
    pub until: DateTime<Utc>,
}

/// Records whose value (plus the offset) was reached within the span and that the
/// trigger has not fired for with that value, as (record, the value's instant),
/// earliest first.
pub async fn reached_dates(
    pool: &PgPool,
    reach: &DateReach<'_>,
    limit: i64,
) -> anyhow::Result<Vec<(Uuid, DateTime<Utc>)>> {
    let column = crate::read_models::tables::physical::ident(reach.column)?;
    let instant = if reach.date {
        format!("(r.{column}::timestamp AT TIME ZONE 'UTC')")
    } else {
        format!("r.{column}")
    };
    let table = crate::read_models::tables::physical::table_name(reach.table_id);
    let sql = format!(
        "SELECT r.id, v.at FROM {table} r CROSS JOIN LATERAL (SELECT {instant} AS at) v
          WHERE v.at + make_interval(secs => $3) > $4 AND v.at + make_interval(secs => $3) <= $5
            AND NOT EXISTS (SELECT 1 FROM custom_table_trigger_fired_values f
                             WHERE f.table_id = $1 AND f.trigger_id = $2
                               AND f.record_id = r.id AND f.value = v.at)
          ORDER BY v.at, r.id LIMIT $6"
    );
    Ok(sqlx::query_as(&sql)
        .bind(reach.table_id)
        .bind(reach.trigger_id)
        .bind(reach.offset_seconds as f64)
        .bind(reach.after)
        .bind(reach.until)
        .bind(limit)
        .fetch_all(pool)
        .await?)
}

/// Notes that the trigger fired (or passed over) the record's value: it never
/// fires for that value again.
pub async fn mark_fired(
    pool: &PgPool,
    table_id: Uuid,
    trigger_id: &str,
    record_id: Uuid,
    value: DateTime<Utc>,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO custom_table_trigger_fired_values (table_id, trigger_id, record_id, value)
         VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
    )
    .bind(table_id)
    .bind(trigger_id)
    .bind(record_id)
    .bind(value)
    .execute(pool)
    .await
    .map(|_| ())
}
