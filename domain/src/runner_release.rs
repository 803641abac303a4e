//! Runner releases: the platform code a run's image carries (`runner_release` of an
//! environment version). The operator approves or withdraws a release
//! (`sandboxctl runner approve|withdraw`); a task bundle runs only on an environment
//! version whose release is approved (409 `task_bundle_runner_unsupported`). The
//! release this service builds with counts as approved until withdrawn. One
//! aggregate per release (its name is the id); each change names the operator and
//! the reason.

use crate::AggregateExt;
use crate::error::{Code, SpecError};
use crate::switch::reason_ok;
use cqrs_es::event_sink::EventSink;
use cqrs_es::{Aggregate, DomainEvent};
use serde::{Deserialize, Serialize};

/// The runner release this service builds images with.
pub const BUILT_IN: &str = "5.21.0";

/// Commands of [`RunnerRelease`].
#[derive(Debug, Clone, PartialEq)]
pub enum ReleaseCommand {
    /// Approves the release (nothing happens when it is approved).
    Approve {
        /// The release.
        release: String,
        /// Why.
        reason: String,
    },
    /// Withdraws the approval (nothing happens when it is withdrawn).
    Withdraw {
        /// The release.
        release: String,
        /// Why.
        reason: String,
    },
}

/// Events of [`RunnerRelease`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ReleaseEvent {
    /// The release is approved.
    RunnerReleaseApproved {
        /// The release.
        release: String,
        /// Why.
        reason: String,
    },
    /// The release's approval is withdrawn.
    RunnerReleaseWithdrawn {
        /// The release.
        release: String,
        /// Why.
        reason: String,
    },
}

impl DomainEvent for ReleaseEvent {
    fn event_type(&self) -> String {
        match self {
            Self::RunnerReleaseApproved { .. } => "RunnerReleaseApproved",
            Self::RunnerReleaseWithdrawn { .. } => "RunnerReleaseWithdrawn",
        }
        .into()
    }
    fn event_version(&self) -> String {
        "1".into()
    }
}

/// Refusals of release commands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReleaseError {
    /// No release name or no reason (or one too long).
    #[error(
        "a runner release change needs a release name of 1..64 characters and a reason of 1..500"
    )]
    Invalid,
}

impl SpecError for ReleaseError {
    fn code(&self) -> Code {
        Code::InvalidBody
    }
}

/// One runner release: approved, withdrawn, or never decided (`None`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunnerRelease {
    /// The operator's last decision.
    pub approved: Option<bool>,
}

impl Aggregate for RunnerRelease {
    const TYPE: &'static str = "runner_release";
    type Command = ReleaseCommand;
    type Event = ReleaseEvent;
    type Error = ReleaseError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _: &(),
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        let (approve, release, reason) = match command {
            ReleaseCommand::Approve { release, reason } => (true, release, reason),
            ReleaseCommand::Withdraw { release, reason } => (false, release, reason),
        };
        let named = !release.is_empty() && release.chars().count() <= 64;
        if !named || !reason_ok(&reason) {
            return Err(ReleaseError::Invalid);
        }
        let reason = reason.trim().to_string();
        if self.approved == Some(approve) {
            return Ok(());
        }
        let event = if approve {
            ReleaseEvent::RunnerReleaseApproved { release, reason }
        } else {
            ReleaseEvent::RunnerReleaseWithdrawn { release, reason }
        };
        sink.write(event, self).await;
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        self.approved = Some(matches!(event, ReleaseEvent::RunnerReleaseApproved { .. }));
    }
}

impl AggregateExt for RunnerRelease {}

#[cfg(test)]
mod tests {
    use super::*;
    use cqrs_es::test::TestFramework;

    fn withdraw() -> ReleaseCommand {
        ReleaseCommand::Withdraw {
            release: "5.21.0".into(),
            reason: "a sandbox escape in the runner".into(),
        }
    }

    #[test]
    fn a_decision_is_recorded_once_and_needs_a_reason() {
        let withdrawn = ReleaseEvent::RunnerReleaseWithdrawn {
            release: "5.21.0".into(),
            reason: "a sandbox escape in the runner".into(),
        };
        TestFramework::<RunnerRelease>::with(())
            .given_no_previous_events()
            .when(withdraw())
            .then_expect_events(vec![withdrawn.clone()]);
        TestFramework::<RunnerRelease>::with(())
            .given(vec![withdrawn])
            .when(withdraw())
            .then_expect_events(vec![]);
        TestFramework::<RunnerRelease>::with(())
            .given_no_previous_events()
            .when(ReleaseCommand::Approve {
                release: "5.21.0".into(),
                reason: " ".into(),
            })
            .then_expect_error(ReleaseError::Invalid);
    }
}
