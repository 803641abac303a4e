//! The Run aggregate. Its id is derived from the submission's `Idempotency-Key`
//! (company, route, principal, key), so a repeated submission reaches the same run
//! and replays it, or answers `idempotency_conflict` when the request differs.
//!
//! States: `queued` → `starting` (claimed by a worker) → `running` → a terminal
//! class; a cancel of a queued run ends it at once, of a started one asks the
//! worker to kill it (`cancel_requested`).

use crate::AggregateExt;
use crate::error::{Code, SpecError};
use crate::principal::{AuthMethod, PrincipalType};
use crate::secrets::resolve::SlotSources;
use chrono::{DateTime, Utc};
use cqrs_es::event_sink::EventSink;
use cqrs_es::{Aggregate, DomainEvent};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Run states (spec section 3).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Waiting for a worker.
    #[default]
    Queued,
    /// Claimed; the container is being prepared.
    Starting,
    /// The work runs.
    Running,
    /// A cancel is asked of the worker.
    CancelRequested,
    /// Exit 0.
    Completed,
    /// The work failed (non-zero exit or timeout).
    CustomerFailed,
    /// The platform failed.
    PlatformFailed,
    /// Cancelled.
    Cancelled,
}

impl RunStatus {
    /// Every status, in lifecycle order.
    pub const ALL: [RunStatus; 8] = [
        Self::Queued,
        Self::Starting,
        Self::Running,
        Self::CancelRequested,
        Self::Completed,
        Self::CustomerFailed,
        Self::PlatformFailed,
        Self::Cancelled,
    ];

    /// Whether the run has ended.
    pub fn terminal(self) -> bool {
        matches!(
            self,
            Self::Completed | Self::CustomerFailed | Self::PlatformFailed | Self::Cancelled
        )
    }
}

/// How a run ended (spec `SandboxTerminalClass`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TerminalClass {
    /// Exit 0.
    Completed,
    /// Non-zero exit or timeout.
    CustomerFailed,
    /// The platform broke.
    PlatformFailed,
    /// Cancelled.
    Cancelled,
}

impl From<TerminalClass> for RunStatus {
    fn from(class: TerminalClass) -> Self {
        match class {
            TerminalClass::Completed => Self::Completed,
            TerminalClass::CustomerFailed => Self::CustomerFailed,
            TerminalClass::PlatformFailed => Self::PlatformFailed,
            TerminalClass::Cancelled => Self::Cancelled,
        }
    }
}

/// Whether a run's input, output, log and artifacts are still held.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContentState {
    /// Held.
    #[default]
    Active,
    /// Removed after the company's retention.
    Expired,
}

/// Where a run came from (spec `submission_source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubmissionSource {
    /// `POST /chatrooms/{cid}/runs` (and retries of such runs).
    Rest,
    /// The agent tools.
    Agent,
    /// Quick Run.
    QuickRun,
    /// A custom-table trigger.
    CustomTableTrigger,
}

impl SubmissionSource {
    /// How the run's output writes (through its writeback or Command-output
    /// credential) are recorded: as a trigger's own writes when a trigger started
    /// the run, so that they fire no triggers either (a run writing the table whose
    /// trigger started it would start itself again, without end); else `usual`.
    pub fn output_method(self, usual: AuthMethod) -> AuthMethod {
        match self {
            Self::CustomTableTrigger => AuthMethod::Trigger,
            _ => usual,
        }
    }
}

/// An object the run stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredObject {
    /// Object store key.
    pub key: String,
    /// Bytes.
    pub byte_size: i64,
    /// `sha256:` of the bytes.
    pub digest: String,
}

/// One file of the artifact bundle (the files' bytes concatenated in path order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Artifact {
    /// Its id (derived from the run and the path).
    pub artifact_id: Uuid,
    /// Path under the artifacts directory.
    pub relative_path: String,
    /// Where its bytes start in the bundle.
    pub offset: i64,
    /// Bytes.
    pub byte_size: i64,
    /// `sha256:` of its bytes.
    pub digest: String,
    /// Content type guessed from its name.
    pub declared_content_type: String,
}

/// The facts a run is submitted with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunSubmitted {
    /// Its id.
    pub run_id: Uuid,
    /// The company.
    pub company_id: Uuid,
    /// The room it runs in.
    pub chatroom_id: Uuid,
    /// The task.
    pub task_id: Uuid,
    /// The pinned published version.
    pub task_version_id: Uuid,
    /// The live grant it was submitted under (kept, never returned).
    pub share_grant_id: Option<Uuid>,
    /// `user` or `social_media_client`.
    pub principal_type: PrincipalType,
    /// Who submitted it.
    pub principal_id: Uuid,
    /// `jwt` or `api_key`.
    pub auth_method: AuthMethod,
    /// The key that submitted it, when one did (restricted keys see their own runs).
    pub api_key_id: Option<Uuid>,
    /// Where it came from.
    pub submission_source: SubmissionSource,
    /// `sha256:` of the staged inputs file.
    pub input_digest: String,
    /// The staged inputs file.
    pub input: StoredObject,
    /// Seconds from start until the work is killed.
    pub timeout_seconds: i64,
    /// `standard`, `performance`, `large` or `xlarge`.
    pub resource_profile: String,
    /// The run this one retries.
    pub retry_of_run_id: Option<Uuid>,
    /// `sha256:` of the request, for idempotent replays.
    pub request_hash: String,
    /// The secret value versions the run receives, by slot, pinned at submission
    /// (absent for a version without slots and for runs recorded before secrets).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot_sources: Option<SlotSources>,
    /// What the run holds against its company's budget (absent when the company
    /// had none, `crate::pricing`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold: Option<crate::pricing::BudgetHold>,
}

/// How a run ended and what it left.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunEnded {
    /// How it ended.
    pub terminal_class: TerminalClass,
    /// Why, for every class but `completed`.
    pub error_code: Option<String>,
    /// The work's exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The combined stdout and stderr.
    pub log: Option<StoredObject>,
    /// The output file.
    pub output: Option<StoredObject>,
    /// The artifact bundle.
    pub bundle: Option<StoredObject>,
    /// Its files.
    pub artifacts: Vec<Artifact>,
}

impl RunEnded {
    /// An end without objects.
    pub fn bare(terminal_class: TerminalClass, error_code: &str) -> Self {
        Self {
            terminal_class,
            error_code: Some(error_code.into()),
            exit_code: None,
            log: None,
            output: None,
            bundle: None,
            artifacts: Vec::new(),
        }
    }
}

/// Commands of [`Run`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunCommand {
    /// Queues the run, or replays it when it exists with the same request.
    Submit(Box<RunSubmitted>),
    /// A worker takes the queued run.
    Claim {
        /// The worker.
        worker_id: String,
    },
    /// Another worker takes over a started run whose work goes on without its
    /// first worker (a Kubernetes Job outlives the node that created it).
    Reattach {
        /// The worker taking over.
        worker_id: String,
        /// The worker it takes over from (refused when another worker took the run
        /// over first: two workers that found it lost at once never both follow it).
        from: Option<String>,
    },
    /// The container started.
    Start,
    /// Cancels a queued run at once, asks the worker to stop a started one.
    Cancel,
    /// Records the end.
    Finish(Box<RunEnded>),
    /// The retention period of an ended run's contents passed: its objects go.
    ExpireContent,
    /// The contents of an ended run expire soon: its submitter is told once.
    WarnContentExpiring {
        /// When they expire.
        expires_at: DateTime<Utc>,
    },
}

/// Events of [`Run`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum RunEvent {
    /// The run is queued.
    RunSubmitted(Box<RunSubmitted>),
    /// A worker took it (`starting`).
    RunClaimed {
        /// The worker.
        worker_id: String,
    },
    /// Another worker took over the started run (the work went on).
    RunReattached {
        /// The worker now watching it.
        worker_id: String,
    },
    /// The work is running.
    RunStarted,
    /// A cancel was asked of the worker.
    RunCancelRequested,
    /// The run ended.
    RunFinished(Box<RunEnded>),
    /// The run's contents (input, log, output, artifacts) passed their retention
    /// and are deleted; links and downloads answer 404 from now on.
    RunContentExpired,
    /// The run's contents expire within a day (`run_content_expiring`).
    RunContentExpiring {
        /// When they expire.
        expires_at: DateTime<Utc>,
    },
}

impl DomainEvent for RunEvent {
    fn event_type(&self) -> String {
        match self {
            Self::RunSubmitted(_) => "RunSubmitted",
            Self::RunClaimed { .. } => "RunClaimed",
            Self::RunReattached { .. } => "RunReattached",
            Self::RunStarted => "RunStarted",
            Self::RunCancelRequested => "RunCancelRequested",
            Self::RunFinished(_) => "RunFinished",
            Self::RunContentExpired => "RunContentExpired",
            Self::RunContentExpiring { .. } => "RunContentExpiring",
        }
        .into()
    }
    fn event_version(&self) -> String {
        "1".into()
    }
}

/// Refusals of run commands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// No such run.
    #[error("run not found")]
    NotFound,
    /// The key was used for another request.
    #[error("this Idempotency-Key was used with a different request")]
    IdempotencyConflict,
    /// The run has ended.
    #[error("the run has ended and cannot be cancelled")]
    NotCancellable,
    /// A worker step out of order (another worker or a cancel moved the run on).
    #[error("the run is {0:?}")]
    WrongState(RunStatus),
}

impl SpecError for RunError {
    fn code(&self) -> Code {
        match self {
            Self::NotFound => Code::NotFound,
            Self::IdempotencyConflict => Code::IdempotencyConflict,
            Self::NotCancellable => Code::NotCancellable,
            Self::WrongState(_) => Code::IllegalStateTransition,
        }
    }
}

/// A run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Run {
    /// Submission facts.
    pub submitted: Option<Box<RunSubmitted>>,
    /// Where it is.
    pub status: RunStatus,
    /// The worker holding it.
    pub worker_id: Option<String>,
    /// Whether its contents expired.
    pub content_expired: bool,
    /// Whether its submitter was told the contents expire soon.
    #[serde(default)]
    pub content_expiry_warned: bool,
}

impl Aggregate for Run {
    const TYPE: &'static str = "run";
    type Command = RunCommand;
    type Event = RunEvent;
    type Error = RunError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _: &(),
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        if let RunCommand::Submit(submitted) = command {
            return match &self.submitted {
                Some(existing) if existing.request_hash == submitted.request_hash => Ok(()),
                Some(_) => Err(RunError::IdempotencyConflict),
                None => {
                    sink.write(RunEvent::RunSubmitted(submitted), self).await;
                    Ok(())
                }
            };
        }
        if self.submitted.is_none() {
            return Err(RunError::NotFound);
        }
        let status = self.status;
        let event = match command {
            RunCommand::Submit(_) => unreachable!("handled above"),
            RunCommand::Claim { worker_id } if status == RunStatus::Queued => {
                RunEvent::RunClaimed { worker_id }
            }
            RunCommand::Reattach { worker_id, from }
                if matches!(
                    status,
                    RunStatus::Starting | RunStatus::Running | RunStatus::CancelRequested
                ) && self.worker_id == from =>
            {
                RunEvent::RunReattached { worker_id }
            }
            RunCommand::Start if status == RunStatus::Starting => RunEvent::RunStarted,
            RunCommand::Cancel => match status {
                RunStatus::Queued => RunEvent::RunFinished(Box::new(RunEnded::bare(
                    TerminalClass::Cancelled,
                    "cancelled",
                ))),
                RunStatus::Starting | RunStatus::Running => RunEvent::RunCancelRequested,
                RunStatus::CancelRequested => return Ok(()),
                _ => return Err(RunError::NotCancellable),
            },
            RunCommand::Finish(ended) if !status.terminal() && status != RunStatus::Queued => {
                RunEvent::RunFinished(ended)
            }
            RunCommand::ExpireContent if self.content_expired => return Ok(()),
            RunCommand::ExpireContent if status.terminal() => RunEvent::RunContentExpired,
            RunCommand::WarnContentExpiring { .. }
                if self.content_expired || self.content_expiry_warned =>
            {
                return Ok(());
            }
            RunCommand::WarnContentExpiring { expires_at } if status.terminal() => {
                RunEvent::RunContentExpiring { expires_at }
            }
            _ => return Err(RunError::WrongState(status)),
        };
        sink.write(event, self).await;
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        match event {
            RunEvent::RunSubmitted(submitted) => self.submitted = Some(submitted),
            RunEvent::RunClaimed { worker_id } => {
                self.status = RunStatus::Starting;
                self.worker_id = Some(worker_id);
            }
            RunEvent::RunReattached { worker_id } => self.worker_id = Some(worker_id),
            RunEvent::RunStarted => self.status = RunStatus::Running,
            RunEvent::RunCancelRequested => self.status = RunStatus::CancelRequested,
            RunEvent::RunFinished(ended) => self.status = ended.terminal_class.into(),
            RunEvent::RunContentExpired => self.content_expired = true,
            RunEvent::RunContentExpiring { .. } => self.content_expiry_warned = true,
        }
    }
}

impl AggregateExt for Run {}

#[cfg(test)]
mod tests;
