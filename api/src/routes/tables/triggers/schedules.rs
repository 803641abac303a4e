//! Schedule triggers (`cron`, `interval`, `daily`): each pass creates a run for the
//! latest window due since the trigger's window cursor — one catch-up run after
//! downtime, never the windows missed before it — unless a run of the trigger is
//! still pending or running. A failed run consumes its window like a successful one. The
//! cursor (`custom_table_trigger_windows`) is not a read model, and the run id is
//! derived from the table, the trigger and the window, so no window is served
//! twice.

use super::fire::create;
use crate::state::AppState;
use chrono::{DateTime, Utc};
use domain::tables::trigger::Trigger;
use domain::tables::trigger::run::{RunCreated, run_id_for_window};
use sqlx::types::Json;
use uuid::Uuid;

#[derive(sqlx::FromRow)]
struct Scheduled {
    table_id: Uuid,
    company_id: Uuid,
    definition: Json<Trigger>,
    saved_by: String,
    created_at: DateTime<Utc>,
    last_window: Option<DateTime<Utc>>,
    pending: bool,
}

/// Creates the runs of the schedule windows due at `now`; answers the new ones.
pub async fn schedule(state: &AppState, now: DateTime<Utc>) -> anyhow::Result<Vec<Uuid>> {
    let rows: Vec<Scheduled> = sqlx::query_as(
        "SELECT t.table_id, c.company_id, t.definition, t.saved_by, t.created_at, w.last_window,
                EXISTS (SELECT 1 FROM custom_table_trigger_runs r
                         WHERE r.table_id = t.table_id AND r.trigger_id = t.trigger_id
                           AND r.status IN ('pending', 'running')) AS pending
           FROM custom_table_triggers t
           JOIN custom_tables c ON c.id = t.table_id
           LEFT JOIN custom_table_trigger_windows w
             ON w.table_id = t.table_id AND w.trigger_id = t.trigger_id
          WHERE (t.definition->>'enabled')::boolean
            AND t.definition->'schedule'->>'type' IN ('cron', 'interval', 'daily')",
    )
    .fetch_all(&state.pool)
    .await?;
    let mut created = Vec::new();
    for row in rows.into_iter().filter(|r| !r.pending) {
        let trigger = row.definition.0;
        let Some(schedule) = &trigger.schedule else {
            continue;
        };
        // A trigger saved again under an old id starts afresh.
        let since = row
            .last_window
            .map_or(row.created_at, |w| w.max(row.created_at));
        let Some(window) = schedule.latest_due(since, now) else {
            continue;
        };
        let run_id = run_id_for_window(row.table_id, &trigger.id, window);
        let trigger_id = trigger.id.clone();
        let run = RunCreated {
            run_id,
            company_id: row.company_id,
            table_id: row.table_id,
            trigger,
            record_id: None,
            window_start: Some(window),
            author: row.saved_by,
        };
        created.extend(create(state, run).await?);
        sqlx::query(
            "INSERT INTO custom_table_trigger_windows (table_id, trigger_id, last_window) VALUES ($1, $2, $3)
             ON CONFLICT (table_id, trigger_id) DO UPDATE SET last_window = EXCLUDED.last_window",
        )
        .bind(row.table_id)
        .bind(&trigger_id)
        .bind(window)
        .execute(&state.pool)
        .await?;
    }
    Ok(created)
}
