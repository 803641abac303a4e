//! Table triggers (spec `custom-tables.md` section 2 "Triggers (schedule)", the
//! contract of issue 22): a table's trigger set is replaced as a whole, each
//! trigger fires on a record event (`on`) or on a schedule, may narrow its records
//! with `when` (a row-policy tree) and runs 1 to 10 actions.
//!
//! A saved set is checked here: ids, one of `on` and `schedule`, the schedule, the
//! `when` tree and `$row.<column>` tokens against the table's columns (stored by
//! internal key so renames flow through), recordless schedules without row
//! references, and a schedule's type never changing under an id.

mod cron;
#[cfg(test)]
mod posix_property;
pub mod run;
mod schedule;
#[cfg(test)]
mod tests;

pub use schedule::{EVERY_SECONDS, Schedule, ScheduleError};

use crate::tables::TableError;
use crate::tables::column::ColumnDef;
use crate::tables::query;
use crate::tables::table::keyed;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use uuid::Uuid;

/// Triggers of a table at most.
pub const MAX_TRIGGERS: usize = 50;
/// Actions of a trigger, at least and at most.
pub const ACTIONS: (usize, usize) = (1, 10);
/// Characters of a trigger name at most.
pub const NAME_CHARS: usize = 200;

/// The record event an event trigger fires on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TriggerEvent {
    /// A record was created.
    Created,
    /// A record was changed.
    Updated,
}

/// What a trigger does. A field its type does not take is refused (an
/// `update_record` naming a `table_id` would otherwise change the triggering
/// record, not that table's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Action {
    /// Creates a record in a table (`values` by column; `$row.<column>` reads the
    /// triggering record).
    CreateRecord {
        /// The table written to.
        table_id: Uuid,
        /// Cells by column.
        values: Map<String, Value>,
    },
    /// Changes the triggering record.
    UpdateRecord {
        /// Cells by column.
        values: Map<String, Value>,
    },
    /// Submits a sandbox run (`submission_source` `custom_table_trigger`).
    RunSandboxTask {
        /// The room the run belongs to.
        chatroom_id: Uuid,
        /// The exact task version.
        task_version_id: Uuid,
        /// The run's input.
        #[serde(default)]
        input: Value,
    },
    /// Executes a Command.
    ExecuteCommand {
        /// The command.
        command_id: String,
        /// Its arguments.
        #[serde(default)]
        args: Value,
    },
}

impl Action {
    /// The values it writes, if it writes records.
    fn values(&self) -> Option<&Map<String, Value>> {
        match self {
            Self::CreateRecord { values, .. } | Self::UpdateRecord { values } => Some(values),
            _ => None,
        }
    }
}

/// A trigger as saved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trigger {
    /// Chosen by the client: `^[a-z0-9][a-z0-9_-]{0,63}$`.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Disabled triggers never fire.
    #[serde(default = "enabled")]
    pub enabled: bool,
    /// The record event it fires on.
    #[serde(default)]
    pub on: Option<TriggerEvent>,
    /// Its schedule.
    #[serde(default)]
    pub schedule: Option<Schedule>,
    /// Which records it fires for (a row-policy tree; columns by internal key once
    /// saved).
    #[serde(default)]
    pub when: Option<Value>,
    /// What it does, in order.
    pub actions: Vec<Action>,
}

fn enabled() -> bool {
    true
}

/// Whether `id` is a trigger id: a lowercase letter or digit, then up to 63 of
/// those, `_` or `-`.
pub fn is_trigger_id(id: &str) -> bool {
    let mut bytes = id.bytes();
    let first = bytes
        .next()
        .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    first
        && id.len() <= 64
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

/// Why a trigger set is refused.
fn invalid(id: &str, message: impl std::fmt::Display) -> TableError {
    TableError::TriggerConfig(format!("trigger '{id}': {message}"))
}

/// Rewrites the `$row.<column>` tokens in an action's values or input, at any
/// depth, to internal keys; refuses unknown columns and, for a recordless
/// trigger, any token.
fn row_tokens(
    id: &str,
    value: &Value,
    columns: &[ColumnDef],
    has_record: bool,
) -> Result<Value, TableError> {
    Ok(match value {
        Value::String(text) => match text.strip_prefix("$row.") {
            Some(_) if !has_record => {
                return Err(invalid(
                    id,
                    format!("{text} reads a record, and this trigger fires without one"),
                ));
            }
            Some(reference) => {
                let found = columns
                    .iter()
                    .find(|c| c.is_named(reference) && c.column_type.is_stored())
                    .ok_or_else(|| {
                        invalid(
                            id,
                            format!("$row.{reference} is not a stored column of this table"),
                        )
                    })?;
                Value::String(format!("$row.{}", found.key))
            }
            None => value.clone(),
        },
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| row_tokens(id, item, columns, has_record))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => Value::Object(row_tokens_in(id, map, columns, has_record)?),
        other => other.clone(),
    })
}

/// [`row_tokens`] of each value of a map.
fn row_tokens_in(
    id: &str,
    values: &Map<String, Value>,
    columns: &[ColumnDef],
    has_record: bool,
) -> Result<Map<String, Value>, TableError> {
    values
        .iter()
        .map(|(key, value)| Ok((key.clone(), row_tokens(id, value, columns, has_record)?)))
        .collect()
}

/// Whether `value` holds the token at any depth.
fn holds(value: &Value, token: &str) -> bool {
    match value {
        Value::String(text) => text == token,
        Value::Array(items) => items.iter().any(|v| holds(v, token)),
        Value::Object(map) => map.values().any(|v| holds(v, token)),
        _ => false,
    }
}

/// Checks one trigger against the table's columns and its previous definition.
fn check_one(
    trigger: Trigger,
    columns: &[ColumnDef],
    previous: Option<&Trigger>,
) -> Result<Trigger, TableError> {
    let id = trigger.id.clone();
    if !is_trigger_id(&id) {
        return Err(TableError::TriggerConfig(format!(
            "trigger id '{id}' must match ^[a-z0-9][a-z0-9_-]{{0,63}}$"
        )));
    }
    let name = trigger.name.trim();
    if name.is_empty() || name.chars().count() > NAME_CHARS || name.chars().any(char::is_control) {
        return Err(invalid(
            &id,
            format!("name must be 1..{NAME_CHARS} characters"),
        ));
    }
    let schedule = match (trigger.on, trigger.schedule) {
        (Some(_), None) => None,
        (None, Some(schedule)) => Some(schedule.check(columns).map_err(|e| match e {
            ScheduleError::Cron(message) => {
                TableError::InvalidCron(format!("trigger '{id}': {message}"))
            }
            ScheduleError::Invalid(message) => invalid(&id, message),
        })?),
        _ => return Err(invalid(&id, "exactly one of on and schedule")),
    };
    if let (Some(new), Some(Some(old))) = (&schedule, previous.map(|p| &p.schedule))
        && new.kind() != old.kind()
    {
        return Err(TableError::ScheduleKindChange(format!(
            "trigger '{id}' has a {} schedule; a {} schedule needs a new trigger id",
            old.kind(),
            new.kind()
        )));
    }
    let has_record = schedule.as_ref().is_none_or(Schedule::has_record);
    let when = match trigger.when {
        None | Some(Value::Null) => None,
        Some(_) if !has_record => {
            return Err(invalid(
                &id,
                "when needs a record; this schedule fires without one",
            ));
        }
        Some(tree) => {
            query::resolve_filter(&tree, columns)
                .map_err(|e| invalid(&id, format!("when: {e}")))?;
            Some(keyed(&tree, columns))
        }
    };
    if !(ACTIONS.0..=ACTIONS.1).contains(&trigger.actions.len()) {
        return Err(invalid(
            &id,
            format!("{}..{} actions", ACTIONS.0, ACTIONS.1),
        ));
    }
    let actions = trigger
        .actions
        .into_iter()
        .map(|action| {
            if let Some(values) = action.values() {
                let values = row_tokens_in(&id, values, columns, has_record)?;
                return Ok(match action {
                    Action::CreateRecord { table_id, .. } => Action::CreateRecord { table_id, values },
                    Action::UpdateRecord { .. } if !has_record => {
                        return Err(invalid(
                            &id,
                            "update_record changes the triggering record; this trigger fires without one",
                        ));
                    }
                    _ => Action::UpdateRecord { values },
                });
            }
            match action {
                Action::RunSandboxTask { input, .. } if !(input.is_object() || input.is_null()) => {
                    Err(invalid(&id, "run_sandbox_task input is an object"))
                }
                Action::RunSandboxTask {
                    chatroom_id,
                    task_version_id,
                    input,
                } => Ok(Action::RunSandboxTask {
                    chatroom_id,
                    task_version_id,
                    input: row_tokens(&id, &input, columns, has_record)?,
                }),
                Action::ExecuteCommand { .. } => Err(TableError::CommandsUnavailable),
                action => Ok(action),
            }
        })
        .collect::<Result<_, _>>()?;
    Ok(Trigger {
        id,
        name: name.to_string(),
        enabled: trigger.enabled,
        on: trigger.on,
        schedule,
        when,
        actions,
    })
}

/// Checks a whole trigger set (replacing `previous`) against the table's columns.
pub fn check(
    triggers: Vec<Trigger>,
    columns: &[ColumnDef],
    previous: &[Trigger],
) -> Result<Vec<Trigger>, TableError> {
    if triggers.len() > MAX_TRIGGERS {
        return Err(TableError::TriggerConfig(format!(
            "a table holds at most {MAX_TRIGGERS} triggers"
        )));
    }
    let mut checked: Vec<Trigger> = Vec::with_capacity(triggers.len());
    for trigger in triggers {
        if checked.iter().any(|t| t.id == trigger.id) {
            return Err(invalid(&trigger.id, "named twice"));
        }
        let before = previous.iter().find(|p| p.id == trigger.id);
        checked.push(check_one(trigger, columns, before)?);
    }
    Ok(checked)
}

impl Trigger {
    /// Whether it reads the column (its `when`, schedule column or `$row` tokens
    /// in action values and inputs).
    pub fn reads(&self, key: &str) -> bool {
        let token = format!("$row.{key}");
        let in_action = |action: &Action| match action {
            Action::CreateRecord { values, .. } | Action::UpdateRecord { values } => {
                values.values().any(|v| holds(v, &token))
            }
            Action::RunSandboxTask { input, .. } => holds(input, &token),
            Action::ExecuteCommand { args, .. } => holds(args, &token),
        };
        self.when
            .as_ref()
            .is_some_and(|w| crate::tables::table::names_column(w, key))
            || matches!(&self.schedule, Some(Schedule::DateColumnReached { column, .. }) if column == key)
            || self.actions.iter().any(in_action)
    }
}
