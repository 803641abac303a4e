//! The operator's kill switches beyond `SANDBOX_ENABLED` (issue 24): one for the
//! whole deployment and one per company, each change an event saying who switched,
//! when and why. A switched-off scope answers every non-GET sandbox change with 503
//! `sandbox_disabled` (the spec's exceptions, cancel and download, still pass), and
//! trigger actions that would submit a run fail the same way.

use crate::AggregateExt;
use crate::error::{Code, SpecError};
use cqrs_es::event_sink::EventSink;
use cqrs_es::{Aggregate, DomainEvent};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The aggregate id of the deployment-wide switch.
pub const GLOBAL: &str = "global";

/// Whether an operator's reason is given and not too long (the switch, the build
/// fence and runner release decisions all ask for one).
pub fn reason_ok(reason: &str) -> bool {
    let reason = reason.trim();
    !reason.is_empty() && reason.chars().count() <= MAX_REASON
}

/// Longest reason.
pub const MAX_REASON: usize = 500;

/// The aggregate id of a switch: a company's id, or [`GLOBAL`].
pub fn switch_id(company_id: Option<Uuid>) -> String {
    company_id.map_or_else(|| GLOBAL.to_string(), |id| id.to_string())
}

/// A switch change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwitchChange {
    /// The company it covers; `None`: the whole deployment.
    pub company_id: Option<Uuid>,
    /// Whether the sandbox is on.
    pub enabled: bool,
    /// Why (1..500 characters).
    pub reason: String,
}

/// Commands of [`SandboxSwitch`].
#[derive(Debug, Clone, PartialEq)]
pub enum SwitchCommand {
    /// Sets the switch (nothing happens when it already stands so).
    Set(SwitchChange),
}

/// Events of [`SandboxSwitch`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum SwitchEvent {
    /// The switch was turned on or off.
    SandboxSwitchSet(SwitchChange),
}

impl DomainEvent for SwitchEvent {
    fn event_type(&self) -> String {
        "SandboxSwitchSet".into()
    }
    fn event_version(&self) -> String {
        "1".into()
    }
}

/// Refusals of switch commands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SwitchError {
    /// No reason, or one too long.
    #[error("a switch change needs a reason of 1..500 characters")]
    Reason,
}

impl SpecError for SwitchError {
    fn code(&self) -> Code {
        Code::InvalidBody
    }
}

/// A kill switch; on until switched off.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SandboxSwitch {
    /// Whether it is off.
    pub off: bool,
}

impl Aggregate for SandboxSwitch {
    const TYPE: &'static str = "sandbox_switch";
    type Command = SwitchCommand;
    type Event = SwitchEvent;
    type Error = SwitchError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _: &(),
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        let SwitchCommand::Set(mut change) = command;
        change.reason = change.reason.trim().to_string();
        if !reason_ok(&change.reason) {
            return Err(SwitchError::Reason);
        }
        if change.enabled == self.off {
            sink.write(SwitchEvent::SandboxSwitchSet(change), self)
                .await;
        }
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        let SwitchEvent::SandboxSwitchSet(change) = event;
        self.off = !change.enabled;
    }
}

impl AggregateExt for SandboxSwitch {}

#[cfg(test)]
mod tests {
    use super::*;
    use cqrs_es::test::TestFramework;

    fn set(enabled: bool, reason: &str) -> SwitchCommand {
        SwitchCommand::Set(SwitchChange {
            company_id: None,
            enabled,
            reason: reason.into(),
        })
    }

    #[test]
    fn only_a_change_with_a_reason_is_recorded() {
        let off = SwitchEvent::SandboxSwitchSet(SwitchChange {
            company_id: None,
            enabled: false,
            reason: "incident".into(),
        });
        TestFramework::<SandboxSwitch>::with(())
            .given_no_previous_events()
            .when(set(false, " incident "))
            .then_expect_events(vec![off.clone()]);
        TestFramework::<SandboxSwitch>::with(())
            .given(vec![off.clone()])
            .when(set(false, "again"))
            .then_expect_events(vec![]);
        TestFramework::<SandboxSwitch>::with(())
            .given_no_previous_events()
            .when(set(true, "already on"))
            .then_expect_events(vec![]);
        TestFramework::<SandboxSwitch>::with(())
            .given(vec![off])
            .when(set(true, " "))
            .then_expect_error(SwitchError::Reason);
    }
}
