//! Firing event triggers, through the log, and the pass that creates and runs
//! every kind of trigger run.
//!
//! [`dispatch`] reads the record events the tables read model has reached, past a
//! cursor of its own (`custom_table_trigger_dispatch`, not a read model: rebuilding
//! the read models fires nothing again), and creates one [`TriggerRun`] per event
//! and matching trigger, under an id derived from the record, the event's sequence
//! and the trigger: a dispatcher that stops before saving its cursor creates the
//! same runs again, which the aggregate ignores. Only triggers first saved before
//! the write fire, and writes made by trigger actions fire none (no cascades).
//!
//! `date_column_reached` triggers become runs in [`dates`], the other schedule
//! triggers in [`schedules`]; [`runner`] runs the actions.

use super::super::scope::table_columns;
use super::{dates, runner, schedules};
use crate::admission;
use crate::state::AppState;
use chrono::{DateTime, Utc};
use domain::principal::{Actor, AuthMethod, EventMetadata};
use domain::tables::column::ColumnDef;
use domain::tables::query;
use domain::tables::record::{Record, RecordEvent};
use domain::tables::trigger::TriggerEvent;
use domain::tables::trigger::run::{RunCreated, TriggerRun, TriggerRunCommand, run_id_for_write};
use projections::log;
use projections::read_models::tables::read::{Selection, TableHandle};
use projections::read_models::trigger_runs::query as runs;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::time::Duration;
use uuid::Uuid;

/// Record events one dispatch reads at most.
const BATCH: i64 = 1000;

/// Runs a pass every `interval` until shutdown.
pub fn spawn(state: AppState, interval: Duration) {
    let runtime = state.runtime.clone();
    runtime.spawn(async move {
        loop {
            if let Err(error) = fire_at(&state, Utc::now()).await {
                tracing::error!(error = format!("{error:#}"), "trigger pass failed");
            }
            tokio::select! {
                _ = state.runtime.shutdown.cancelled() => break,
                _ = tokio::time::sleep(interval) => {}
            }
        }
    })
}

/// One pass as of `now`: new writes, reached dates and due schedule windows become
/// runs, pending runs run, running runs whose sandbox runs ended end. One node at a
/// time. Answers the runs it created.
pub async fn fire_at(state: &AppState, now: DateTime<Utc>) -> anyhow::Result<Vec<Uuid>> {
    let _lock = admission::lock(&state.pool, Uuid::nil(), "table-triggers").await?;
    let mut created = dispatch(state).await?;
    created.extend(dates::fire(state, now).await?);
    created.extend(schedules::schedule(state, now).await?);
    runner::run_pending(state).await?;
    runner::settle_running(state).await?;
    Ok(created)
}

/// Metadata of the events the trigger machinery records.
pub(super) fn metadata(company: Uuid, subject: Uuid) -> EventMetadata {
    EventMetadata {
        actor: Actor::System("triggers"),
        company_id: Some(company),
        request_id: format!("trigger-{subject}"),
        time: Utc::now(),
    }
}

/// Creates a run; answers its id when it is new (creating it again is nothing).
pub(super) async fn create(state: &AppState, run: RunCreated) -> anyhow::Result<Option<Uuid>> {
    let (run_id, company_id) = (run.run_id, run.company_id);
    let committed = state
        .bus
        .execute::<TriggerRun>(
            &run_id.to_string(),
            TriggerRunCommand::Create(Box::new(run)),
            &metadata(company_id, run_id),
        )
        .await?;
    Ok((!committed.events.is_empty()).then_some(run_id))
}

/// Whether the record matches a trigger's `when` (a `when` naming a column
/// deleted since matches nothing).
pub(super) async fn matches_when(
    state: &AppState,
    company_id: Uuid,
    table_id: Uuid,
    columns: &[ColumnDef],
    when: &Value,
    record_id: Uuid,
) -> anyhow::Result<bool> {
    let this = json!({"and": [when, {"column": "id", "op": "eq", "value": record_id}]});
    let Ok(condition) = query::resolve_filter(&this, columns) else {
        return Ok(false);
    };
    let handle = TableHandle {
        company_id,
        table_id,
        columns: columns.to_vec(),
        gates: Vec::new(),
    };
    let selection = Selection {
        condition: Some(condition),
        ..Default::default()
    };
    Ok(handle.count(&state.pool, &selection).await? > 0)
}

/// A table's columns, read once per pass.
pub(super) async fn columns_of<'a>(
    state: &AppState,
    cache: &'a mut HashMap<Uuid, Vec<ColumnDef>>,
    table_id: Uuid,
) -> anyhow::Result<&'a [ColumnDef]> {
    Ok(match cache.entry(table_id) {
        Entry::Occupied(known) => known.into_mut(),
        Entry::Vacant(slot) => slot.insert(
            table_columns(state, table_id)
                .await
                .map_err(|e| anyhow::anyhow!(runner::refused(e)))?,
        ),
    })
}

/// Creates the runs of the record events past the cursor; answers the new ones.
pub async fn dispatch(state: &AppState) -> anyhow::Result<Vec<Uuid>> {
    let pool = &state.pool;
    let cursor: i64 =
        sqlx::query_scalar("SELECT position FROM custom_table_trigger_dispatch WHERE id = 1")
            .fetch_one(pool)
            .await?;
    let reached: Option<i64> = sqlx::query_scalar(
        "SELECT position FROM projection_checkpoints WHERE name = 'custom_tables'",
    )
    .fetch_optional(pool)
    .await?;
    let until = reached.unwrap_or(0).min(cursor + BATCH);
    if until <= cursor {
        return Ok(Vec::new());
    }
    let mut conn = pool.acquire().await?;
    let events = log::read_range_of(&mut conn, cursor, until, &["custom_table_record"]).await?;
    drop(conn);
    let mut columns = HashMap::new();
    // Each table's event triggers, read once per pass.
    let mut triggers_of: HashMap<Uuid, Vec<runs::EventTrigger>> = HashMap::new();
    let mut created = Vec::new();
    for event in events {
        let (table_id, kind) = match event.decode::<Record>()? {
            Some(RecordEvent::RecordCreated { table_id, .. }) => (table_id, TriggerEvent::Created),
            Some(RecordEvent::RecordUpdated { table_id, .. }) => (table_id, TriggerEvent::Updated),
            _ => continue,
        };
        let meta = event.metadata_map();
        if meta.get("auth_method").map(String::as_str) == Some(AuthMethod::Trigger.as_str()) {
            continue;
        }
        let triggers = match triggers_of.entry(table_id) {
            Entry::Occupied(known) => known.into_mut(),
            Entry::Vacant(slot) => slot.insert(runs::event_triggers(pool, table_id).await?),
        };
        // Only triggers first saved before the write, for its kind of write.
        let firing: Vec<runs::EventTrigger> = triggers
            .iter()
            .filter(|t| t.definition.0.on == Some(kind) && t.created_at <= event.time())
            .cloned()
            .collect();
        if firing.is_empty() {
            continue;
        }
        let record_id: Uuid = event.aggregate_id.parse()?;
        let Some(company_id) = meta.get("company_id").and_then(|c| c.parse().ok()) else {
            continue;
        };
        for fired in firing {
            let trigger = fired.definition.0;
            if let Some(when) = &trigger.when {
                let columns = columns_of(state, &mut columns, table_id).await?;
                if !matches_when(state, company_id, table_id, columns, when, record_id).await? {
                    continue;
                }
            }
            let run = RunCreated {
                run_id: run_id_for_write(record_id, event.sequence, &trigger.id),
                company_id,
                table_id,
                trigger,
                record_id: Some(record_id),
                window_start: None,
                author: fired.saved_by,
            };
            created.extend(create(state, run).await?);
        }
    }
    sqlx::query("UPDATE custom_table_trigger_dispatch SET position = $1 WHERE id = 1")
        .bind(until)
        .execute(pool)
        .await?;
    Ok(created)
}
