//! The TriggerRun aggregate: one firing of a trigger. Its id is derived from what
//! caused it (the record event, the reached date value, or the schedule window),
//! so whoever creates it
//! twice — a dispatcher that crashed before saving its cursor, a second node —
//! reaches the same aggregate and creates nothing more. The definition is frozen
//! into the run when it is created.

use super::Trigger;
use crate::AggregateExt;
use crate::error::{Code, SpecError};
use chrono::{DateTime, Utc};
use cqrs_es::event_sink::EventSink;
use cqrs_es::{Aggregate, DomainEvent};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Namespace of run ids derived from their cause.
const RUN_IDS: Uuid = Uuid::from_u128(0x5d1c_7a2e_0b6f_4e83_9a41_3c2d_8e7f_1b60);

/// The run id of a trigger fired by a record event (the record and the event's
/// sequence name the write).
pub fn run_id_for_write(record_id: Uuid, sequence: i64, trigger_id: &str) -> Uuid {
    Uuid::new_v5(
        &RUN_IDS,
        format!("{record_id}:{sequence}:{trigger_id}").as_bytes(),
    )
}

/// The run id of a schedule trigger's window.
pub fn run_id_for_window(table_id: Uuid, trigger_id: &str, window_start: DateTime<Utc>) -> Uuid {
    let window = window_start.timestamp();
    Uuid::new_v5(
        &RUN_IDS,
        format!("{table_id}:{trigger_id}:{window}").as_bytes(),
    )
}

/// The run id of a `date_column_reached` trigger reaching a record's value.
pub fn run_id_for_date(
    table_id: Uuid,
    trigger_id: &str,
    record_id: Uuid,
    value: DateTime<Utc>,
) -> Uuid {
    let value = value.timestamp_micros();
    Uuid::new_v5(
        &RUN_IDS,
        format!("{table_id}:{trigger_id}:{record_id}:{value}").as_bytes(),
    )
}

/// A run as created.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunCreated {
    /// The run.
    pub run_id: Uuid,
    /// The company.
    pub company_id: Uuid,
    /// The trigger's table.
    pub table_id: Uuid,
    /// The trigger as it was defined when the run was created.
    pub trigger: Trigger,
    /// The record it fires for.
    pub record_id: Option<Uuid>,
    /// The schedule window it serves.
    pub window_start: Option<DateTime<Utc>>,
    /// Who saved the trigger set the trigger belongs to (`user:<id>`): the
    /// actions act as them.
    pub author: String,
}

/// Where a run is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TriggerRunStatus {
    /// Created, not yet done.
    #[default]
    Pending,
    /// Its actions applied and submitted sandbox runs; it ends when they end.
    Running,
    /// Every action applied.
    Succeeded,
    /// An action was refused; the actions after it did not run.
    Failed,
}

impl TriggerRunStatus {
    /// Whether it has ended.
    pub fn terminal(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed)
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Running => "running",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
        }
    }
}

/// Commands of [`TriggerRun`].
#[derive(Debug, Clone, PartialEq)]
pub enum TriggerRunCommand {
    /// Creates the run (nothing happens when it exists).
    Create(Box<RunCreated>),
    /// Its actions applied and submitted these sandbox runs: it is running until
    /// they end (nothing happens unless it is pending).
    Await(Vec<Uuid>),
    /// Records how it ended (nothing happens once it has).
    Finish(Result<(), String>),
}

/// Events of [`TriggerRun`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum TriggerRunEvent {
    /// The trigger fired.
    TriggerRunCreated(Box<RunCreated>),
    /// Every action applied; these sandbox runs were submitted and it waits for
    /// them.
    TriggerRunAwaiting {
        /// The sandbox runs, in action order.
        sandbox_run_ids: Vec<Uuid>,
    },
    /// Every action applied (and every sandbox run it submitted completed).
    TriggerRunSucceeded,
    /// An action was refused.
    TriggerRunFailed {
        /// Why.
        error: String,
    },
}

impl DomainEvent for TriggerRunEvent {
    fn event_type(&self) -> String {
        match self {
            Self::TriggerRunCreated(_) => "TriggerRunCreated",
            Self::TriggerRunAwaiting { .. } => "TriggerRunAwaiting",
            Self::TriggerRunSucceeded => "TriggerRunSucceeded",
            Self::TriggerRunFailed { .. } => "TriggerRunFailed",
        }
        .into()
    }
    fn event_version(&self) -> String {
        "1".into()
    }
}

/// Refusals of trigger run commands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TriggerRunError {
    /// No such run.
    #[error("trigger run not found")]
    NotFound,
}

impl SpecError for TriggerRunError {
    fn code(&self) -> Code {
        Code::NotFound
    }
}

/// A trigger run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TriggerRun {
    /// What it was created with.
    pub created: Option<Box<RunCreated>>,
    /// Where it is.
    pub status: TriggerRunStatus,
    /// The sandbox runs it waits for.
    #[serde(default)]
    pub sandbox_run_ids: Vec<Uuid>,
}

impl Aggregate for TriggerRun {
    const TYPE: &'static str = "custom_table_trigger_run";
    type Command = TriggerRunCommand;
    type Event = TriggerRunEvent;
    type Error = TriggerRunError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _: &(),
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        match command {
            TriggerRunCommand::Create(run) => {
                if self.created.is_none() {
                    sink.write(TriggerRunEvent::TriggerRunCreated(run), self)
                        .await;
                }
            }
            TriggerRunCommand::Await(sandbox_run_ids) => {
                self.created.as_ref().ok_or(TriggerRunError::NotFound)?;
                if self.status == TriggerRunStatus::Pending {
                    let event = TriggerRunEvent::TriggerRunAwaiting { sandbox_run_ids };
                    sink.write(event, self).await;
                }
            }
            TriggerRunCommand::Finish(outcome) => {
                self.created.as_ref().ok_or(TriggerRunError::NotFound)?;
                if !self.status.terminal() {
                    let event = match outcome {
                        Ok(()) => TriggerRunEvent::TriggerRunSucceeded,
                        Err(error) => TriggerRunEvent::TriggerRunFailed { error },
                    };
                    sink.write(event, self).await;
                }
            }
        }
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        match event {
            TriggerRunEvent::TriggerRunCreated(run) => self.created = Some(run),
            TriggerRunEvent::TriggerRunAwaiting { sandbox_run_ids } => {
                self.status = TriggerRunStatus::Running;
                self.sandbox_run_ids = sandbox_run_ids;
            }
            TriggerRunEvent::TriggerRunSucceeded => self.status = TriggerRunStatus::Succeeded,
            TriggerRunEvent::TriggerRunFailed { .. } => self.status = TriggerRunStatus::Failed,
        }
    }
}

impl AggregateExt for TriggerRun {}
