//! The environment version aggregate, with its build attempts.

use super::events::{RETRY_WINDOW_DAYS, VersionCommand, VersionEvent};
use super::model::{Attempt, BuildStatus, TerminalClass, VersionCreated, VersionState};
use super::transitions::{attempt_status_after, version_state_after};
use crate::AggregateExt;
use crate::error::{Code, SpecError};
use chrono::{DateTime, Utc};
use cqrs_es::Aggregate;
use cqrs_es::event_sink::EventSink;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Refusals of version commands (codes from spec section 7).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VersionError {
    /// No such version or attempt.
    #[error("not found")]
    NotFound,
    /// The version's state cannot start a build.
    #[error("the version cannot start a build in state {0:?}")]
    BuildNotEligible(VersionState),
    /// An attempt is still running.
    #[error("a non-terminal build attempt already exists")]
    NonterminalExists,
    /// Cancel of a finished attempt.
    #[error("the build attempt has ended and cannot be cancelled")]
    NotCancellable,
    /// Retry after the 7-day window.
    #[error("the retry window of this version has expired")]
    RetryWindowExpired,
    /// Retry of a version that is not `retryable_failed`.
    #[error("the version is not retryable")]
    RetryNotEligible,
    /// A second archive.
    #[error("the version is already archived")]
    AlreadyArchived,
    /// A worker step that no longer applies (the attempt moved on, e.g. cancelled).
    #[error("the build attempt is no longer in a state for this step")]
    StaleStep,
    /// Image removal of a version that is not archived or holds no image.
    #[error("only an archived version's image can be removed")]
    ImageNotRemovable,
}

impl SpecError for VersionError {
    fn code(&self) -> Code {
        match self {
            Self::NotFound => Code::NotFound,
            Self::BuildNotEligible(_) => Code::BuildNotEligible,
            Self::NonterminalExists => Code::NonterminalExists,
            Self::NotCancellable => Code::NotCancellable,
            Self::RetryWindowExpired => Code::RetryWindowExpired,
            Self::RetryNotEligible => Code::RetryNotEligible,
            Self::AlreadyArchived => Code::AlreadyArchived,
            Self::StaleStep => Code::BuildStepStale,
            Self::ImageNotRemovable => Code::IllegalStateTransition,
        }
    }
}

/// An environment version and its build attempts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvironmentVersion {
    /// Creation facts.
    pub created: Option<VersionCreated>,
    /// State.
    pub state: VersionState,
    /// When it became ready.
    pub ready_at: Option<DateTime<Utc>>,
    /// The built image, once ready.
    pub image: Option<String>,
    /// Every attempt, oldest first.
    pub attempts: Vec<Attempt>,
}

impl EnvironmentVersion {
    /// The attempt with this id.
    pub fn attempt(&self, id: Uuid) -> Option<&Attempt> {
        self.attempts.iter().find(|a| a.id == id)
    }

    fn attempt_mut(&mut self, id: Uuid) -> Option<&mut Attempt> {
        self.attempts.iter_mut().find(|a| a.id == id)
    }

    /// Whether the version still occupies capacity (not archived).
    pub fn capacity_retained(&self) -> bool {
        self.created.is_some() && self.state != VersionState::Archived
    }

    fn nonterminal(&self) -> bool {
        self.attempts.iter().any(|a| !a.status.is_terminal())
    }

    /// The live attempt a worker step applies to, if it is in one of `statuses`.
    fn step(&self, attempt_id: Uuid, statuses: &[BuildStatus]) -> Result<&Attempt, VersionError> {
        let attempt = self.attempt(attempt_id).ok_or(VersionError::NotFound)?;
        if statuses.contains(&attempt.status) {
            Ok(attempt)
        } else {
            Err(VersionError::StaleStep)
        }
    }
}

const RUNNING: &[BuildStatus] = &[
    BuildStatus::Validating,
    BuildStatus::BuildQueued,
    BuildStatus::Building,
    BuildStatus::Verifying,
];

impl Aggregate for EnvironmentVersion {
    const TYPE: &'static str = "environment_version";
    type Command = VersionCommand;
    type Event = VersionEvent;
    type Error = VersionError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _: &(),
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        use VersionEvent::*;
        if let VersionCommand::Create(created) = command {
            if self.created.is_none() {
                sink.write(VersionCreated(created), self).await;
            }
            return Ok(());
        }
        if self.created.is_none() {
            return Err(VersionError::NotFound);
        }
        let number = self.attempts.len() as i64 + 1;
        match command {
            VersionCommand::Create(_) => unreachable!("handled above"),
            VersionCommand::QueueBuild {
                attempt_id,
                region,
                profile,
                now,
            } => {
                if self.nonterminal() {
                    return Err(VersionError::NonterminalExists);
                }
                if self.state != VersionState::Draft {
                    return Err(VersionError::BuildNotEligible(self.state));
                }
                sink.write(
                    BuildQueued {
                        attempt_id,
                        attempt_number: number,
                        region,
                        profile,
                        at: now,
                    },
                    self,
                )
                .await;
            }
            VersionCommand::RetryBuild {
                attempt_id,
                region,
                profile,
                now,
            } => {
                if self.state != VersionState::RetryableFailed {
                    return Err(VersionError::RetryNotEligible);
                }
                let until = self.attempts.last().and_then(|a| a.retryable_until);
                if until.is_none_or(|until| now > until) {
                    return Err(VersionError::RetryWindowExpired);
                }
                sink.write(
                    BuildQueued {
                        attempt_id,
                        attempt_number: number,
                        region,
                        profile,
                        at: now,
                    },
                    self,
                )
                .await;
            }
            VersionCommand::Claim {
                attempt_id,
                worker_id,
                now,
            } => {
                self.step(attempt_id, &[BuildStatus::ValidationQueued])?;
                sink.write(
                    BuildClaimed {
                        attempt_id,
                        worker_id,
                        at: now,
                    },
                    self,
                )
                .await;
            }
            VersionCommand::Advance {
                attempt_id,
                status,
                now,
            } => {
                self.step(attempt_id, RUNNING)?;
                sink.write(
                    BuildAdvanced {
                        attempt_id,
                        status,
                        at: now,
                    },
                    self,
                )
                .await;
            }
            VersionCommand::Complete {
                attempt_id,
                image,
                report,
                now,
            } => {
                self.step(attempt_id, RUNNING)?;
                sink.write(
                    BuildCompleted {
                        attempt_id,
                        image,
                        report,
                        at: now,
                    },
                    self,
                )
                .await;
            }
            VersionCommand::Fail {
                attempt_id,
                failure,
                report,
                now,
            } => {
                let attempt = self.attempt(attempt_id).ok_or(VersionError::NotFound)?;
                if attempt.status.is_terminal() {
                    return Err(VersionError::StaleStep);
                }
                let retryable_until = (failure.terminal_class == TerminalClass::PlatformFailed)
                    .then(|| now + chrono::Duration::days(RETRY_WINDOW_DAYS));
                sink.write(
                    BuildFailed {
                        attempt_id,
                        failure,
                        report,
                        retryable_until,
                        at: now,
                    },
                    self,
                )
                .await;
            }
            VersionCommand::RequestCancel { attempt_id, now } => {
                let attempt = self.attempt(attempt_id).ok_or(VersionError::NotFound)?;
                match attempt.status {
                    status if status.is_terminal() => return Err(VersionError::NotCancellable),
                    BuildStatus::CancelRequested | BuildStatus::Cancelling => {}
                    _ => {
                        sink.write(
                            BuildCancelRequested {
                                attempt_id,
                                at: now,
                            },
                            self,
                        )
                        .await
                    }
                }
            }
            VersionCommand::BeginCancel { attempt_id, now } => {
                self.step(attempt_id, &[BuildStatus::CancelRequested])?;
                sink.write(
                    BuildCancelling {
                        attempt_id,
                        at: now,
                    },
                    self,
                )
                .await;
            }
            VersionCommand::FinishCancel {
                attempt_id,
                report,
                now,
            } => {
                self.step(
                    attempt_id,
                    &[BuildStatus::CancelRequested, BuildStatus::Cancelling],
                )?;
                // A cancelled retry leaves the version as its failure did: retryable
                // within the same window, never a draft that builds at any time.
                let retried = self.attempts.iter().position(|a| a.id == attempt_id);
                let retryable_until = retried
                    .and_then(|at| at.checked_sub(1))
                    .and_then(|before| self.attempts[before].retryable_until);
                sink.write(
                    BuildCancelled {
                        attempt_id,
                        report,
                        at: now,
                        retryable_until,
                    },
                    self,
                )
                .await;
            }
            VersionCommand::Archive => {
                if self.state == VersionState::Archived {
                    return Err(VersionError::AlreadyArchived);
                }
                if self.nonterminal() {
                    return Err(VersionError::NonterminalExists);
                }
                sink.write(VersionArchived, self).await;
            }
            VersionCommand::RemoveImage { now } => {
                let image = match (&self.state, &self.image) {
                    (VersionState::Archived, Some(image)) => image.clone(),
                    _ => return Err(VersionError::ImageNotRemovable),
                };
                sink.write(ImageRemoved { image, at: now }, self).await;
            }
        }
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        use VersionEvent::*;
        self.state = version_state_after(&event, self.state);
        if let Some((attempt_id, status)) = attempt_status_after(&event)
            && let Some(attempt) = self.attempt_mut(attempt_id)
        {
            attempt.status = status;
        }
        match event {
            VersionCreated(created) => self.created = Some(created),
            BuildQueued {
                attempt_id,
                attempt_number,
                region,
                profile,
                ..
            } => self.attempts.push(Attempt {
                id: attempt_id,
                number: attempt_number,
                status: BuildStatus::ValidationQueued,
                failure: None,
                region,
                profile,
                report: None,
                worker_id: None,
                retryable_until: None,
            }),
            BuildClaimed {
                attempt_id,
                worker_id,
                ..
            } => {
                if let Some(a) = self.attempt_mut(attempt_id) {
                    a.worker_id = Some(worker_id);
                }
            }
            BuildCompleted {
                attempt_id,
                image,
                report,
                at,
            } => {
                self.ready_at = Some(at);
                self.image = Some(image);
                if let Some(a) = self.attempt_mut(attempt_id) {
                    a.report = report;
                }
            }
            BuildFailed {
                attempt_id,
                failure,
                report,
                retryable_until,
                ..
            } => {
                if let Some(a) = self.attempt_mut(attempt_id) {
                    a.failure = Some(failure);
                    a.report = report;
                    a.retryable_until = retryable_until;
                }
            }
            BuildCancelled {
                attempt_id,
                report,
                retryable_until,
                ..
            } => {
                if let Some(a) = self.attempt_mut(attempt_id) {
                    a.report = report;
                    a.retryable_until = retryable_until;
                }
            }
            ImageRemoved { .. } => self.image = None,
            BuildAdvanced { .. }
            | BuildCancelRequested { .. }
            | BuildCancelling { .. }
            | VersionArchived => {}
        }
    }
}

impl AggregateExt for EnvironmentVersion {}
