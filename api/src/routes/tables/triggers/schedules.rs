//! Schedule triggers (`cron`, `interval`, `daily`): each pass creates a run for the
//! latest window due since the trigger's window cursor — one catch-up run after
//! downtime, never the windows missed before it — unless a run of the trigger is
//! still pending or running. A failed run consumes its window like a successful
//! one. The cursor (`custom_table_trigger_windows`) is not a read model, and the run id is
//! derived from the table, the trigger and the window, so no window is served
//! twice.

use super::fire::create;
use crate::state::AppState;
use chrono::{DateTime, Utc};
use domain::tables::trigger::run::{RunCreated, run_id_for_window};
use projections::read_models::trigger_runs::query as runs;
use uuid::Uuid;

/// Creates the runs of the schedule windows due at `now`; answers the new ones.
pub async fn schedule(state: &AppState, now: DateTime<Utc>) -> anyhow::Result<Vec<Uuid>> {
    let mut created = Vec::new();
    for row in runs::clock_triggers(&state.pool).await? {
        if row.active {
            continue;
        }
        let saved = row.saved;
        let trigger = saved.definition.0;
        let Some(schedule) = &trigger.schedule else {
            continue;
        };
        // A trigger saved again under an old id starts afresh.
        let since = row
            .last_window
            .map_or(saved.created_at, |w| w.max(saved.created_at));
        let Some(window) = schedule.latest_due(since, now) else {
            continue;
        };
        let trigger_id = trigger.id.clone();
        let run = RunCreated {
            run_id: run_id_for_window(saved.table_id, &trigger.id, window),
            company_id: saved.company_id,
            table_id: saved.table_id,
            trigger,
            record_id: None,
            window_start: Some(window),
            author: saved.saved_by,
        };
        created.extend(create(state, run).await?);
        runs::set_window(&state.pool, saved.table_id, &trigger_id, window).await?;
    }
    Ok(created)
}
