//! The Binding aggregate: a task's enablement in one room, pinned to an exact
//! published version (spec "Binding (granted-job enablement)"). Its id is derived
//! from (room, task), so a room has at most one live binding per task; each
//! enablement after a revoke is a new generation with its own binding id.
//!
//! A binding applies only while the grant it was enabled under is live and the task
//! is active. Revoking the grant or archiving the task does not write binding events:
//! the `sharing` projection derives the bindings' state from those events, so no
//! binding can outlive its authority, even one enabled concurrently with the revoke.

use super::generation_id;
use super::policy::{SlotPolicies, SlotPolicy, policy_of};
use crate::AggregateExt;
use crate::error::{Code, SpecError};
use cqrs_es::event_sink::EventSink;
use cqrs_es::{Aggregate, DomainEvent};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

/// A binding's state (spec section 3).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BindingState {
    /// The room's pin applies.
    #[default]
    Enabled,
    /// Revoked (directly, or with its grant or task).
    Revoked,
}

/// The aggregate id of the bindings of `task_id` in `chatroom_id`.
pub fn binding_aggregate_id(chatroom_id: Uuid, task_id: Uuid) -> Uuid {
    crate::ids::derive("binding", &[&chatroom_id.to_string(), &task_id.to_string()])
}

/// One secret slot of the pinned version and who fills it under the grant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlotAssignment {
    /// Slot name.
    pub name: String,
    /// The grant's policy for it.
    pub policy: SlotPolicy,
}

impl SlotAssignment {
    /// Each named slot with the policy the grant gives it (`borrower` when the
    /// grant's map leaves it out).
    pub fn all(names: impl IntoIterator<Item = String>, policies: &SlotPolicies) -> Vec<Self> {
        names
            .into_iter()
            .map(|name| Self {
                policy: policy_of(policies, &name),
                name,
            })
            .collect()
    }
}

/// What a binding pins: the exact version (with the facts the menu shows, copied
/// from the immutable published version) and the grant that allows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pin {
    /// The pinned published version.
    pub task_version_id: Uuid,
    /// Its number.
    pub version_number: i64,
    /// Its canonical digest (`sha256:`).
    pub task_version_digest: String,
    /// Its input schema, if any.
    pub input_schema: Option<Value>,
    /// Its secret slots with the grant's policies.
    pub secret_slots: Vec<SlotAssignment>,
    /// The live grant the room resolved (room, then department, then company).
    pub share_grant_id: Uuid,
}

/// Commands of [`Binding`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BindingCommand {
    /// Enables the task in the room: a new generation, or a re-pin of the live one.
    Enable {
        /// The room.
        chatroom_id: Uuid,
        /// The task.
        task_id: Uuid,
        /// Their company.
        company_id: Uuid,
        /// The pin.
        pin: Pin,
        /// Start a new generation even if the aggregate holds a live one (the read
        /// model shows it revoked by its grant or task).
        restart: bool,
        /// Refuse instead of re-pinning a live binding (`POST /bindings`).
        exclusive: bool,
    },
    /// Re-pins the live binding.
    AcceptVersion {
        /// The binding the caller means.
        binding_id: Uuid,
        /// The new pin.
        pin: Pin,
    },
    /// Ends the live binding (disable or revoke); the share stays.
    Revoke {
        /// The binding the caller means.
        binding_id: Uuid,
        /// Why.
        reason: String,
    },
}

/// Events of [`Binding`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum BindingEvent {
    /// The task is enabled in the room.
    BindingEnabled {
        /// The binding's id (one per generation).
        binding_id: Uuid,
        /// 1, then one more per re-enablement.
        generation: i64,
        /// The room.
        chatroom_id: Uuid,
        /// The task.
        task_id: Uuid,
        /// Their company.
        company_id: Uuid,
        /// The pin.
        pin: Pin,
    },
    /// The live binding now pins another version (or the same one under another
    /// grant).
    BindingVersionAccepted {
        /// The binding.
        binding_id: Uuid,
        /// The new pin.
        pin: Pin,
    },
    /// The binding is revoked.
    BindingRevoked {
        /// The binding.
        binding_id: Uuid,
        /// Why (`disabled` for a granted-job disable).
        reason: String,
    },
}

impl DomainEvent for BindingEvent {
    fn event_type(&self) -> String {
        match self {
            Self::BindingEnabled { .. } => "BindingEnabled",
            Self::BindingVersionAccepted { .. } => "BindingVersionAccepted",
            Self::BindingRevoked { .. } => "BindingRevoked",
        }
        .into()
    }
    fn event_version(&self) -> String {
        "1".into()
    }
}

/// Refusals of binding commands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BindingError {
    /// `POST /bindings` while a binding of the task in the room is live.
    #[error("the task is already enabled in this room")]
    AlreadyLive,
    /// The binding is not the live one.
    #[error("the binding is revoked")]
    NotLive,
}

impl SpecError for BindingError {
    fn code(&self) -> Code {
        match self {
            Self::AlreadyLive => Code::BindingAlreadyLive,
            Self::NotLive => Code::IllegalStateTransition,
        }
    }
}

/// The bindings of one task in one room.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Binding {
    /// Generations so far.
    pub generation: i64,
    /// The live binding and its pin.
    pub live: Option<(Uuid, Pin)>,
}

impl Aggregate for Binding {
    const TYPE: &'static str = "binding";
    type Command = BindingCommand;
    type Event = BindingEvent;
    type Error = BindingError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _: &(),
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        let event = match command {
            BindingCommand::Enable {
                chatroom_id,
                task_id,
                company_id,
                pin,
                restart,
                exclusive,
            } => match &self.live {
                Some(_) if !restart && exclusive => return Err(BindingError::AlreadyLive),
                Some((binding_id, _)) if !restart => self.repin(*binding_id, pin),
                _ => {
                    let generation = self.generation + 1;
                    let aggregate = binding_aggregate_id(chatroom_id, task_id);
                    Some(BindingEvent::BindingEnabled {
                        binding_id: generation_id("binding", aggregate, generation),
                        generation,
                        chatroom_id,
                        task_id,
                        company_id,
                        pin,
                    })
                }
            },
            BindingCommand::AcceptVersion { binding_id, pin } => {
                self.require_live(binding_id)?;
                self.repin(binding_id, pin)
            }
            BindingCommand::Revoke { binding_id, reason } => {
                self.require_live(binding_id)?;
                Some(BindingEvent::BindingRevoked { binding_id, reason })
            }
        };
        if let Some(event) = event {
            sink.write(event, self).await;
        }
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        match event {
            BindingEvent::BindingEnabled {
                binding_id,
                generation,
                pin,
                ..
            } => {
                self.generation = generation;
                self.live = Some((binding_id, pin));
            }
            BindingEvent::BindingVersionAccepted { binding_id, pin } => {
                self.live = Some((binding_id, pin))
            }
            BindingEvent::BindingRevoked { .. } => self.live = None,
        }
    }
}

impl Binding {
    fn require_live(&self, binding_id: Uuid) -> Result<(), BindingError> {
        match &self.live {
            Some((live, _)) if *live == binding_id => Ok(()),
            _ => Err(BindingError::NotLive),
        }
    }

    /// The re-pin event, or nothing when the pin is unchanged.
    fn repin(&self, binding_id: Uuid, pin: Pin) -> Option<BindingEvent> {
        match &self.live {
            Some((_, current)) if *current == pin => None,
            _ => Some(BindingEvent::BindingVersionAccepted { binding_id, pin }),
        }
    }
}

impl AggregateExt for Binding {}

#[cfg(test)]
mod tests {
    use super::*;
    use cqrs_es::test::TestFramework;

    const ROOM: Uuid = Uuid::from_u128(1);
    const TASK: Uuid = Uuid::from_u128(2);
    const COMPANY: Uuid = Uuid::from_u128(3);

    fn pin(version: u128) -> Pin {
        Pin {
            task_version_id: Uuid::from_u128(version),
            version_number: version as i64,
            task_version_digest: format!("sha256:{version}"),
            input_schema: None,
            secret_slots: vec![],
            share_grant_id: Uuid::from_u128(9),
        }
    }

    fn enable(version: u128, restart: bool, exclusive: bool) -> BindingCommand {
        BindingCommand::Enable {
            chatroom_id: ROOM,
            task_id: TASK,
            company_id: COMPANY,
            pin: pin(version),
            restart,
            exclusive,
        }
    }

    fn enabled(generation: i64, version: u128) -> BindingEvent {
        BindingEvent::BindingEnabled {
            binding_id: generation_id("binding", binding_aggregate_id(ROOM, TASK), generation),
            generation,
            chatroom_id: ROOM,
            task_id: TASK,
            company_id: COMPANY,
            pin: pin(version),
        }
    }

    fn id(generation: i64) -> Uuid {
        generation_id("binding", binding_aggregate_id(ROOM, TASK), generation)
    }

    #[test]
    fn enabling_a_live_binding_repins_it_or_changes_nothing() {
        TestFramework::<Binding>::with(())
            .given(vec![enabled(1, 1)])
            .when(enable(1, false, false))
            .then_expect_events(vec![]);
        TestFramework::<Binding>::with(())
            .given(vec![enabled(1, 1)])
            .when(enable(2, false, false))
            .then_expect_events(vec![BindingEvent::BindingVersionAccepted {
                binding_id: id(1),
                pin: pin(2),
            }]);
        TestFramework::<Binding>::with(())
            .given(vec![enabled(1, 1)])
            .when(enable(2, false, true))
            .then_expect_error(BindingError::AlreadyLive);
    }

    #[test]
    fn a_restart_or_a_revoked_binding_starts_a_new_generation() {
        TestFramework::<Binding>::with(())
            .given(vec![enabled(1, 1)])
            .when(enable(1, true, true))
            .then_expect_events(vec![enabled(2, 1)]);
        TestFramework::<Binding>::with(())
            .given(vec![
                enabled(1, 1),
                BindingEvent::BindingRevoked {
                    binding_id: id(1),
                    reason: "disabled".into(),
                },
            ])
            .when(enable(1, false, true))
            .then_expect_events(vec![enabled(2, 1)]);
    }

    #[test]
    fn only_the_live_binding_accepts_versions_or_is_revoked() {
        TestFramework::<Binding>::with(())
            .given(vec![enabled(1, 1), enabled(2, 1)])
            .when(BindingCommand::Revoke {
                binding_id: id(1),
                reason: String::new(),
            })
            .then_expect_error(BindingError::NotLive);
        TestFramework::<Binding>::with(())
            .given(vec![])
            .when(BindingCommand::AcceptVersion {
                binding_id: id(1),
                pin: pin(2),
            })
            .then_expect_error(BindingError::NotLive);
    }
}
