//! Firing event triggers, through the log.
//!
//! [`dispatch`] reads the record events the tables read model has reached, past a
//! cursor of its own (`custom_table_trigger_dispatch`, not a read model: rebuilding
//! the read models fires nothing again), and creates one [`TriggerRun`] per event
//! and matching trigger, under an id derived from the record, the event's sequence
//! and the trigger: a dispatcher that stops before saving its cursor creates the
//! same runs again, which the aggregate ignores. Only triggers first saved before
//! the write fire, and writes made by trigger actions fire none (no cascades).
//!
//! Schedule triggers become runs in [`schedules`].
//!
//! [`run_pending`] runs the actions of pending runs as the user who saved the
//! trigger set, through the one table write path (`records::insert`,
//! `records::change`: permissions, column checks, locks). A created record's id
//! is derived from the run and the action, so running a run again (after a crash)
//! never creates a second record. `run_sandbox_task` and `execute_command` are not
//! built yet and fail the run.

use super::super::gates::Operation;
use super::super::records;
use super::super::scope::{Mount, OpenTable, open_table_id, table_columns, table_row};
use super::schedules;
use crate::admission;
use crate::auth::user_principal;
use crate::error::ApiError;
use crate::request::{Caller, Context};
use crate::state::AppState;
use chrono::{DateTime, Utc};
use domain::principal::{Actor, AuthMethod, EventMetadata};
use domain::tables::column::ColumnDef;
use domain::tables::query;
use domain::tables::record::{Record, RecordEvent};
use domain::tables::trigger::Action;
use domain::tables::trigger::run::{RunCreated, TriggerRun, TriggerRunCommand, run_id_for_write};
use projections::log;
use projections::read_models::tables::read::{Selection, TableHandle};
use projections::read_models::trigger_runs::query::{self as runs, TriggerRunRow};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::time::Duration;
use uuid::Uuid;

/// Record events one dispatch reads at most.
const BATCH: i64 = 1000;

/// Runs the dispatcher and the runner every `interval` until shutdown.
pub fn spawn(state: AppState, interval: Duration) {
    let runtime = state.runtime.clone();
    runtime.spawn(async move {
        loop {
            if let Err(error) = fire(&state).await {
                tracing::error!(error = format!("{error:#}"), "trigger pass failed");
            }
            tokio::select! {
                _ = state.runtime.shutdown.cancelled() => break,
                _ = tokio::time::sleep(interval) => {}
            }
        }
    })
}

/// One pass now.
pub async fn fire(state: &AppState) -> anyhow::Result<()> {
    fire_at(state, Utc::now()).await
}

/// One pass as of `now`: new writes and due schedule windows become runs, pending
/// runs run. One node at a time.
pub async fn fire_at(state: &AppState, now: DateTime<Utc>) -> anyhow::Result<()> {
    let _lock = admission::lock(&state.pool, Uuid::nil(), "table-triggers").await?;
    dispatch(state).await?;
    schedules::schedule(state, now).await?;
    run_pending(state).await
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

/// Creates the runs of the record events past the cursor.
pub async fn dispatch(state: &AppState) -> anyhow::Result<()> {
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
        return Ok(());
    }
    let mut conn = pool.acquire().await?;
    let events = log::read_range_of(&mut conn, cursor, until, &["custom_table_record"]).await?;
    drop(conn);
    let mut columns_of: HashMap<Uuid, Vec<ColumnDef>> = HashMap::new();
    for event in events {
        let on = match event.decode::<Record>()? {
            Some(RecordEvent::RecordCreated { table_id, .. }) => (table_id, "created"),
            Some(RecordEvent::RecordUpdated { table_id, .. }) => (table_id, "updated"),
            _ => continue,
        };
        let meta = event.metadata_map();
        if meta.get("auth_method").map(String::as_str) == Some(AuthMethod::Trigger.as_str()) {
            continue;
        }
        let (table_id, kind) = on;
        let triggers = runs::event_triggers(pool, table_id, kind, event.time()).await?;
        if triggers.is_empty() {
            continue;
        }
        let record_id: Uuid = event.aggregate_id.parse()?;
        let Some(company_id) = meta.get("company_id").and_then(|c| c.parse().ok()) else {
            continue;
        };
        // Read once per table and pass.
        let columns = match columns_of.get(&table_id) {
            Some(columns) => columns.clone(),
            None => {
                let columns = table_columns(state, table_id)
                    .await
                    .map_err(|e| anyhow::anyhow!(refused(e)))?;
                columns_of.insert(table_id, columns.clone());
                columns
            }
        };
        for (trigger, author) in triggers {
            let trigger = trigger.0;
            if let Some(when) = &trigger.when {
                let handle = TableHandle {
                    company_id,
                    table_id,
                    columns: columns.clone(),
                    gates: Vec::new(),
                };
                let this = json!({"and": [when, {"column": "id", "op": "eq", "value": record_id}]});
                // A `when` naming a column deleted since matches nothing.
                let Ok(condition) = query::resolve_filter(&this, &columns) else {
                    continue;
                };
                let selection = Selection {
                    condition: Some(condition),
                    ..Default::default()
                };
                if handle.count(pool, &selection).await? == 0 {
                    continue;
                }
            }
            let run_id = run_id_for_write(record_id, event.sequence, &trigger.id);
            let created = RunCreated {
                run_id,
                company_id,
                table_id,
                trigger,
                record_id: Some(record_id),
                window_start: None,
                author,
            };
            let command = TriggerRunCommand::Create(Box::new(created));
            state
                .bus
                .execute::<TriggerRun>(&run_id.to_string(), command, &metadata(company_id, run_id))
                .await?;
        }
    }
    sqlx::query("UPDATE custom_table_trigger_dispatch SET position = $1 WHERE id = 1")
        .bind(until)
        .execute(pool)
        .await?;
    Ok(())
}

/// Runs the actions of pending runs and records how each ended.
pub async fn run_pending(state: &AppState) -> anyhow::Result<()> {
    for run in runs::pending(&state.pool, 100).await? {
        let outcome = execute(state, &run).await;
        let command = TriggerRunCommand::Finish(outcome);
        state
            .bus
            .execute::<TriggerRun>(
                &run.id.to_string(),
                command,
                &metadata(run.company_id, run.id),
            )
            .await?;
    }
    Ok(())
}

/// What a refused action says in the run's `error` (never an internal cause).
fn refused(error: ApiError) -> String {
    match error {
        ApiError::Coded(coded) => format!("{}: {}", coded.code.as_str(), coded.message),
        ApiError::Forbidden(message) => format!("forbidden: {message}"),
        ApiError::NotFound => "not found".into(),
        ApiError::Validation(violations) => format!("invalid values: {violations:?}"),
        ApiError::Internal(cause) => {
            tracing::error!(error = format!("{cause:#}"), "trigger action failed");
            "internal error".into()
        }
        other => format!("{other:?}"),
    }
}

/// The caller the run's actions act as: the user who saved the trigger set.
async fn author(state: &AppState, run: &TriggerRunRow) -> Result<Caller, String> {
    let user = run
        .author
        .strip_prefix("user:")
        .and_then(|id| id.parse::<Uuid>().ok())
        .ok_or("the trigger set was not saved by a user")?;
    let principal = user_principal(state, run.company_id, user, AuthMethod::Trigger)
        .await
        .map_err(refused)?
        .ok_or("the user who saved the triggers is no longer in the company")?;
    Ok(Caller {
        state: state.clone(),
        ctx: Context {
            request_id: format!("trigger-run-{}", run.id),
            time: Utc::now(),
        },
        principal,
    })
}

/// Opens a table as the run's author for `operation`.
async fn open(caller: &Caller, table_id: Uuid, operation: Operation) -> Result<OpenTable, String> {
    let row = table_row(&caller.state, caller.principal.company_id, table_id)
        .await
        .map_err(refused)?
        .ok_or_else(|| format!("table {table_id} does not exist"))?;
    open_table_id(caller, &Mount::owning(&row), table_id, operation)
        .await
        .map_err(refused)
}

/// The triggering record's cells by internal key, as the author reads them.
async fn record_cells(table: &OpenTable, record_id: Uuid) -> Result<Map<String, Value>, String> {
    let selection = Selection {
        condition: query::resolve_filter(
            &json!({"column": "id", "op": "eq", "value": record_id}),
            &table.columns,
        )
        .ok(),
        limit: Some(1),
        ..table.selection()
    };
    let rows = table
        .handle()
        .page(table.caller.pool(), &selection)
        .await
        .map_err(|e| e.to_string())?;
    let row = rows
        .into_iter()
        .next()
        .ok_or("the triggering record is gone or hidden from the trigger's author")?;
    Ok(row.cells.into_iter().map(|(c, v)| (c.key, v)).collect())
}

/// `values` with every `$row.<key>` replaced by the record's cell.
fn substitute(values: &Map<String, Value>, row: &Map<String, Value>) -> Map<String, Value> {
    values
        .iter()
        .map(|(column, value)| {
            let value = match value.as_str().and_then(|v| v.strip_prefix("$row.")) {
                Some(key) => row.get(key).cloned().unwrap_or(Value::Null),
                None => value.clone(),
            };
            (column.clone(), value)
        })
        .collect()
}

/// Runs a run's actions in order; the first refusal ends it.
async fn execute(state: &AppState, run: &TriggerRunRow) -> Result<(), String> {
    let caller = author(state, run).await?;
    let home = open(&caller, run.table_id, Operation::ReadRows).await?;
    let row = match run.record_id {
        Some(record) => record_cells(&home, record).await?,
        None => Map::new(),
    };
    for (index, action) in run.definition.0.actions.iter().enumerate() {
        let step = |e: String| format!("action {}: {e}", index + 1);
        match action {
            Action::CreateRecord { table_id, values } => {
                let table = open(&caller, *table_id, Operation::InsertRows)
                    .await
                    .map_err(step)?;
                let record_id = Uuid::new_v5(&run.id, &(index as u64).to_be_bytes());
                let exists = table
                    .handle()
                    .existing(&state.pool, &[record_id])
                    .await
                    .map_err(|e| step(e.to_string()))?;
                if exists.is_empty() {
                    records::insert(&table, record_id, &substitute(values, &row))
                        .await
                        .map_err(|e| step(refused(e)))?;
                }
            }
            Action::UpdateRecord { values } => {
                let record_id = run
                    .record_id
                    .ok_or_else(|| step("there is no triggering record".into()))?;
                let table = open(&caller, run.table_id, Operation::EditRows)
                    .await
                    .map_err(step)?;
                records::change(&table, record_id, &substitute(values, &row))
                    .await
                    .map_err(|e| step(refused(e)))?;
            }
            Action::RunSandboxTask { .. } => {
                return Err(step(
                    "run_sandbox_task actions are not available yet".into(),
                ));
            }
            Action::ExecuteCommand { .. } => {
                return Err(step("execute_command actions need Commands".into()));
            }
        }
    }
    Ok(())
}
