//! Running trigger runs: the actions of a pending run apply in order as the user
//! who saved the trigger set, through the one table write path (`records::insert`,
//! `records::change`: permissions, column checks, locks). Every effect has an id
//! derived from the run and the action (a created record, a submitted sandbox
//! run), so running a run again after a crash never does anything twice.
//!
//! A run whose actions submitted sandbox runs is `running` until they end: it
//! succeeds when all of them completed, else fails naming the first that did not.
//! `execute_command` actions need Commands and fail the run.

use super::super::gates::Operation;
use super::super::records;
use super::super::scope::{Mount, OpenTable, open_table_id, table_row};
use super::fire::metadata;
use crate::access::{Room, TaskVersion};
use crate::auth::user_principal;
use crate::error::ApiError;
use crate::middleware::kill_switch;
use crate::request::{Caller, Context};
use crate::routes::sandbox::runs::admission::{Admission, admit, stage};
use crate::state::AppState;
use chrono::Utc;
use domain::principal::AuthMethod;
use domain::runs::run::{RunStatus, SubmissionSource};
use domain::tables::query;
use domain::tables::trigger::Action;
use domain::tables::trigger::run::{TriggerRun, TriggerRunCommand};
use projections::read_models::runs::query as sandbox_runs;
use projections::read_models::tables::read::Selection;
use projections::read_models::trigger_runs::query::{self as runs, TriggerRunRow};
use serde_json::{Map, Value, json};
use uuid::Uuid;

/// Runs one pass takes up at most.
const BATCH: i64 = 100;

/// Runs the actions of pending runs: each ends, or waits for its sandbox runs.
pub async fn run_pending(state: &AppState) -> anyhow::Result<()> {
    for run in runs::pending(&state.pool, BATCH).await? {
        let command = match execute(state, &run).await {
            Ok(submitted) if !submitted.is_empty() => TriggerRunCommand::Await(submitted),
            outcome => TriggerRunCommand::Finish(outcome.map(|_| ())),
        };
        record(state, &run, command).await?;
    }
    Ok(())
}

/// Ends the running runs whose sandbox runs all ended.
pub async fn settle_running(state: &AppState) -> anyhow::Result<()> {
    'runs: for run in runs::running(&state.pool, BATCH).await? {
        let mut outcome = Ok(());
        for id in &run.sandbox_run_ids {
            // A run the runs read model does not show yet is still going.
            let Some(row) = sandbox_runs::run(&state.pool, *id).await? else {
                continue 'runs;
            };
            let status = row.status;
            if !status.terminal() {
                continue 'runs;
            }
            if status != RunStatus::Completed && outcome.is_ok() {
                let status = serde_json::to_value(status)?;
                let status = status.as_str().unwrap_or_default();
                outcome = Err(format!("sandbox run {id} ended {status}"));
            }
        }
        record(state, &run, TriggerRunCommand::Finish(outcome)).await?;
    }
    Ok(())
}

async fn record(
    state: &AppState,
    run: &TriggerRunRow,
    command: TriggerRunCommand,
) -> anyhow::Result<()> {
    state
        .bus
        .execute::<TriggerRun>(
            &run.id.to_string(),
            command,
            &metadata(run.company_id, run.id),
        )
        .await?;
    Ok(())
}

/// What a refused action says in the run's `error` (never an internal cause).
pub(super) fn refused(error: ApiError) -> String {
    match error {
        ApiError::Coded(coded) => format!("{}: {}", coded.code.as_str(), coded.message),
        ApiError::Forbidden(message) => format!("forbidden: {message}"),
        ApiError::NotFound => "not found".into(),
        ApiError::Missing(what) => what.to_lowercase(),
        ApiError::Validation(violations) => format!("invalid values: {violations:?}"),
        ApiError::Internal(cause) => {
            tracing::error!(error = format!("{cause:#}"), "trigger action failed");
            "internal error".into()
        }
        other => format!("{other:?}"),
    }
}

/// The caller the run's actions act as: the user who saved the trigger set,
/// through `method` (`trigger` for table writes, which fire nothing; `jwt` for the
/// sandbox runs they submit, whose principal is that user).
async fn author(
    state: &AppState,
    run: &TriggerRunRow,
    method: AuthMethod,
) -> Result<Caller, String> {
    let user = run
        .author
        .strip_prefix("user:")
        .and_then(|id| id.parse::<Uuid>().ok())
        .ok_or("the trigger set was not saved by a user")?;
    let principal = user_principal(state, run.company_id, user, method)
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

/// `value` with every string `$row.<key>` in it replaced by the record's cell.
fn substitute(value: &Value, row: &Map<String, Value>) -> Value {
    match value {
        Value::String(s) => match s.strip_prefix("$row.") {
            Some(key) => row.get(key).cloned().unwrap_or(Value::Null),
            None => value.clone(),
        },
        Value::Array(items) => Value::Array(items.iter().map(|v| substitute(v, row)).collect()),
        Value::Object(map) => Value::Object(substitute_all(map, row)),
        other => other.clone(),
    }
}

fn substitute_all(values: &Map<String, Value>, row: &Map<String, Value>) -> Map<String, Value> {
    values
        .iter()
        .map(|(key, value)| (key.clone(), substitute(value, row)))
        .collect()
}

/// Runs a run's actions in order; the first refusal ends it. Answers the sandbox
/// runs it submitted.
async fn execute(state: &AppState, run: &TriggerRunRow) -> Result<Vec<Uuid>, String> {
    let caller = author(state, run, AuthMethod::Trigger).await?;
    let home = open(&caller, run.table_id, Operation::ReadRows).await?;
    let row = match run.record_id {
        Some(record) => record_cells(&home, record).await?,
        None => Map::new(),
    };
    let mut submitted = Vec::new();
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
                    records::insert(&table, record_id, &substitute_all(values, &row))
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
                records::change(&table, record_id, &substitute_all(values, &row))
                    .await
                    .map_err(|e| step(refused(e)))?;
            }
            Action::RunSandboxTask {
                chatroom_id,
                task_version_id,
                input,
            } => {
                let task = SandboxTask {
                    sandbox_run_id: Uuid::new_v5(
                        &run.id,
                        format!("sandbox-run:{index}").as_bytes(),
                    ),
                    chatroom_id: *chatroom_id,
                    task_version_id: *task_version_id,
                    input: match input {
                        Value::Null => json!({}),
                        input => substitute(input, &row),
                    },
                };
                submitted.push(submit(state, run, task).await.map_err(step)?);
            }
            Action::ExecuteCommand { .. } => {
                return Err(step("execute_command actions need Commands".into()));
            }
        }
    }
    Ok(submitted)
}

/// A `run_sandbox_task` action, its `$row` tokens replaced.
struct SandboxTask {
    sandbox_run_id: Uuid,
    chatroom_id: Uuid,
    task_version_id: Uuid,
    input: Value,
}

/// Submits a sandbox run as a REST submission by the author would be (room
/// visibility, a runnable version with a live share into the room, the input
/// schema, the queued-run limit), with `submission_source`
/// `custom_table_trigger`. The kill switch stops it as it stops REST runs.
async fn submit(state: &AppState, run: &TriggerRunRow, task: SandboxTask) -> Result<Uuid, String> {
    // Submitted before a crash: it stands, whatever the switches say now.
    let submitted = sandbox_runs::exists(&state.pool, task.sandbox_run_id).await;
    if submitted.map_err(|e| refused(ApiError::from(e)))? {
        return Ok(task.sandbox_run_id);
    }
    kill_switch::check(state, Some(run.company_id))
        .await
        .map_err(refused)?;
    let caller = author(state, run, AuthMethod::Jwt).await?;
    let staged = stage(&caller, task.input).await.map_err(refused)?;
    let room = Room::visible(&caller, task.chatroom_id)
        .await
        .map_err(refused)?;
    let version = TaskVersion::runnable(&caller, task.task_version_id)
        .await
        .map_err(refused)?;
    let admission = Admission {
        run_id: task.sandbox_run_id,
        room: &room,
        version: &version,
        input: &staged,
        timeout_seconds: version.contents.timeout_seconds,
        source: SubmissionSource::CustomTableTrigger,
        retry_of_run_id: None,
        share_required: true,
        request_facts: None,
    };
    match admit(&caller, admission).await {
        Ok(detail) => Ok(detail.id),
        // Committed; the read models are only late.
        Err(ApiError::NotYetVisible(_)) => Ok(task.sandbox_run_id),
        Err(error) => Err(refused(error)),
    }
}
