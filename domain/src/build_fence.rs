//! The build admission fence (spec section 7, `build_admission_fenced`): while the
//! platform rolls out a new stage image, the operator fences build admission; every
//! build submission and retry then answers 503 with `retry_after_seconds` (and the
//! same `Retry-After`) and nothing is queued. One fence for the deployment
//! (aggregate id [`FENCE`]); each raise and lift is an event with the operator and
//! the reason.

use crate::AggregateExt;
use crate::error::{Code, SpecError};
use crate::switch::reason_ok;
use cqrs_es::event_sink::EventSink;
use cqrs_es::{Aggregate, DomainEvent};
use serde::{Deserialize, Serialize};

/// The aggregate id of the deployment's fence.
pub const FENCE: &str = "builds";

/// `retry_after_seconds`, at least and at most.
pub const RETRY_AFTER: (i64, i64) = (1, 86_400);

/// Commands of [`BuildFence`].
#[derive(Debug, Clone, PartialEq)]
pub enum FenceCommand {
    /// Fences build admission (or changes the advice of a raised fence).
    Raise {
        /// What the refusals tell clients to wait.
        retry_after_seconds: i64,
        /// Why (1..500 characters).
        reason: String,
    },
    /// Lifts the fence (nothing happens when none is raised).
    Lift {
        /// Why.
        reason: String,
    },
}

/// Events of [`BuildFence`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum FenceEvent {
    /// Build admission is fenced.
    BuildFenceRaised {
        /// What the refusals tell clients to wait.
        retry_after_seconds: i64,
        /// Why.
        reason: String,
    },
    /// Build admission is open again.
    BuildFenceLifted {
        /// Why.
        reason: String,
    },
}

impl DomainEvent for FenceEvent {
    fn event_type(&self) -> String {
        match self {
            Self::BuildFenceRaised { .. } => "BuildFenceRaised",
            Self::BuildFenceLifted { .. } => "BuildFenceLifted",
        }
        .into()
    }
    fn event_version(&self) -> String {
        "1".into()
    }
}

/// Refusals of fence commands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FenceError {
    /// No reason, one too long, or a wait out of range.
    #[error(
        "a fence change needs a reason of 1..500 characters and retry_after_seconds of 1..86400"
    )]
    Invalid,
}

impl SpecError for FenceError {
    fn code(&self) -> Code {
        Code::InvalidBody
    }
}

/// The fence: raised with its advice, or not.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BuildFence {
    /// The advised wait while raised.
    pub raised: Option<i64>,
}

impl Aggregate for BuildFence {
    const TYPE: &'static str = "build_fence";
    type Command = FenceCommand;
    type Event = FenceEvent;
    type Error = FenceError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _: &(),
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        let event = match command {
            FenceCommand::Raise {
                retry_after_seconds,
                reason,
            } => {
                let range = RETRY_AFTER.0..=RETRY_AFTER.1;
                if !reason_ok(&reason) || !range.contains(&retry_after_seconds) {
                    return Err(FenceError::Invalid);
                }
                if self.raised == Some(retry_after_seconds) {
                    return Ok(());
                }
                FenceEvent::BuildFenceRaised {
                    retry_after_seconds,
                    reason: reason.trim().into(),
                }
            }
            FenceCommand::Lift { reason } => {
                if !reason_ok(&reason) {
                    return Err(FenceError::Invalid);
                }
                if self.raised.is_none() {
                    return Ok(());
                }
                FenceEvent::BuildFenceLifted {
                    reason: reason.trim().into(),
                }
            }
        };
        sink.write(event, self).await;
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        self.raised = match event {
            FenceEvent::BuildFenceRaised {
                retry_after_seconds,
                ..
            } => Some(retry_after_seconds),
            FenceEvent::BuildFenceLifted { .. } => None,
        };
    }
}

impl AggregateExt for BuildFence {}
