//! The SecretBinding aggregate: the value of one slot of one task for one consumer
//! scope. Its id is derived from (scope, consumer, task, slot), so two writes of the
//! same slot meet at the optimistic lock; each binding after a revoke is a new
//! generation with its own id (the id `GET /secrets/{id}` takes).
//!
//! Revoking ends the binding and names every value version it held: the secret
//! store destroys their data keys (crypto-shredding).

use super::ConsumerScope;
use crate::AggregateExt;
use crate::error::{Code, SpecError};
use crate::sharing::generation_id;
use cqrs_es::event_sink::EventSink;
use cqrs_es::{Aggregate, DomainEvent};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The aggregate id of the bindings of one slot of one task for one consumer.
pub fn secret_binding_aggregate_id(
    scope: ConsumerScope,
    consumer_id: Uuid,
    task_id: Uuid,
    slot_name: &str,
) -> Uuid {
    crate::ids::derive(
        "secret_binding",
        &[
            scope.as_str(),
            &consumer_id.to_string(),
            &task_id.to_string(),
            slot_name,
        ],
    )
}

/// Which slot of which task, for which consumer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlotTarget {
    /// The company of the task and the consumer.
    pub company_id: Uuid,
    /// `chatroom`, `department` or `company`.
    pub consumer_scope: ConsumerScope,
    /// The room, department or company id.
    pub consumer_id: Uuid,
    /// The task.
    pub task_id: Uuid,
    /// The slot.
    pub slot_name: String,
}

/// One encrypted value version, as the log knows it (never the value).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValueVersion {
    /// The secret store's key of the encrypted value.
    pub value_version_id: Uuid,
    /// HMAC-SHA256 of the value under the deployment's pepper, keyed per binding
    /// (hex): tells two writes apart without revealing either.
    pub value_hmac_sha256: String,
    /// Length of the value in bytes (its environment cost).
    pub byte_size: i64,
}

/// Commands of [`SecretBinding`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretBindingCommand {
    /// Binds a value: a new binding, or a new version of the live one.
    Write {
        /// The slot.
        target: SlotTarget,
        /// The operation that writes it.
        operation_id: Uuid,
        /// The value version.
        version: ValueVersion,
        /// `POST /secrets/rotate`: refuse when nothing is bound.
        rotate: bool,
    },
    /// Ends the live binding.
    Revoke {
        /// The operation that revokes it.
        operation_id: Uuid,
    },
}

/// Events of [`SecretBinding`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum SecretBindingEvent {
    /// A value is bound to the slot (a new binding).
    SecretBound {
        /// The binding (one per generation).
        binding_id: Uuid,
        /// 1, then one more per binding after a revoke.
        generation: i64,
        /// The operation.
        operation_id: Uuid,
        /// The slot.
        target: SlotTarget,
        /// The value version.
        version: ValueVersion,
    },
    /// The live binding holds a new value version.
    SecretRotated {
        /// The binding.
        binding_id: Uuid,
        /// The operation.
        operation_id: Uuid,
        /// The new value version.
        version: ValueVersion,
    },
    /// The binding is revoked; its value versions are shredded.
    SecretRevoked {
        /// The binding.
        binding_id: Uuid,
        /// The operation.
        operation_id: Uuid,
        /// Every value version it held.
        shredded_version_ids: Vec<Uuid>,
    },
}

impl DomainEvent for SecretBindingEvent {
    fn event_type(&self) -> String {
        match self {
            Self::SecretBound { .. } => "SecretBound",
            Self::SecretRotated { .. } => "SecretRotated",
            Self::SecretRevoked { .. } => "SecretRevoked",
        }
        .into()
    }
    fn event_version(&self) -> String {
        "1".into()
    }
}

/// Refusals of secret binding commands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretBindingError {
    /// Rotate or revoke without a live binding.
    #[error("no secret is bound to this slot for this consumer")]
    NotBound,
}

impl SpecError for SecretBindingError {
    fn code(&self) -> Code {
        Code::NotFound
    }
}

/// The live binding of a slot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveBinding {
    /// Its id.
    pub binding_id: Uuid,
    /// The value versions it holds, oldest first.
    pub version_ids: Vec<Uuid>,
}

/// The bindings of one slot for one consumer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecretBinding {
    /// Generations so far.
    pub generation: i64,
    /// The live binding.
    pub live: Option<LiveBinding>,
}

impl Aggregate for SecretBinding {
    const TYPE: &'static str = "secret_binding";
    type Command = SecretBindingCommand;
    type Event = SecretBindingEvent;
    type Error = SecretBindingError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _: &(),
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        let event = match (command, &self.live) {
            (
                SecretBindingCommand::Write {
                    operation_id,
                    version,
                    ..
                },
                Some(live),
            ) => SecretBindingEvent::SecretRotated {
                binding_id: live.binding_id,
                operation_id,
                version,
            },
            (SecretBindingCommand::Write { rotate: true, .. }, None) => {
                return Err(SecretBindingError::NotBound);
            }
            (
                SecretBindingCommand::Write {
                    target,
                    operation_id,
                    version,
                    ..
                },
                None,
            ) => {
                let generation = self.generation + 1;
                let aggregate = secret_binding_aggregate_id(
                    target.consumer_scope,
                    target.consumer_id,
                    target.task_id,
                    &target.slot_name,
                );
                SecretBindingEvent::SecretBound {
                    binding_id: generation_id("secret_binding", aggregate, generation),
                    generation,
                    operation_id,
                    target,
                    version,
                }
            }
            (SecretBindingCommand::Revoke { operation_id }, Some(live)) => {
                SecretBindingEvent::SecretRevoked {
                    binding_id: live.binding_id,
                    operation_id,
                    shredded_version_ids: live.version_ids.clone(),
                }
            }
            (SecretBindingCommand::Revoke { .. }, None) => {
                return Err(SecretBindingError::NotBound);
            }
        };
        sink.write(event, self).await;
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        match event {
            SecretBindingEvent::SecretBound {
                binding_id,
                generation,
                version,
                ..
            } => {
                self.generation = generation;
                self.live = Some(LiveBinding {
                    binding_id,
                    version_ids: vec![version.value_version_id],
                });
            }
            SecretBindingEvent::SecretRotated { version, .. } => {
                if let Some(live) = &mut self.live {
                    live.version_ids.push(version.value_version_id);
                }
            }
            SecretBindingEvent::SecretRevoked { .. } => self.live = None,
        }
    }
}

impl AggregateExt for SecretBinding {}

#[cfg(test)]
mod tests {
    use super::*;
    use cqrs_es::test::TestFramework;

    fn target() -> SlotTarget {
        SlotTarget {
            company_id: Uuid::from_u128(1),
            consumer_scope: ConsumerScope::Chatroom,
            consumer_id: Uuid::from_u128(2),
            task_id: Uuid::from_u128(3),
            slot_name: "API_TOKEN".into(),
        }
    }

    fn version(n: u128) -> ValueVersion {
        ValueVersion {
            value_version_id: Uuid::from_u128(n),
            value_hmac_sha256: "ab".repeat(32),
            byte_size: 8,
        }
    }

    fn write(n: u128, rotate: bool) -> SecretBindingCommand {
        SecretBindingCommand::Write {
            target: target(),
            operation_id: Uuid::from_u128(100 + n),
            version: version(n),
            rotate,
        }
    }

    fn bound(generation: i64, n: u128) -> SecretBindingEvent {
        let aggregate = secret_binding_aggregate_id(
            ConsumerScope::Chatroom,
            Uuid::from_u128(2),
            Uuid::from_u128(3),
            "API_TOKEN",
        );
        SecretBindingEvent::SecretBound {
            binding_id: generation_id("secret_binding", aggregate, generation),
            generation,
            operation_id: Uuid::from_u128(100 + n),
            target: target(),
            version: version(n),
        }
    }

    #[test]
    fn a_write_binds_and_a_second_write_rotates() {
        TestFramework::<SecretBinding>::with(())
            .given_no_previous_events()
            .when(write(1, false))
            .then_expect_events(vec![bound(1, 1)]);
        let SecretBindingEvent::SecretBound { binding_id, .. } = bound(1, 1) else {
            unreachable!()
        };
        TestFramework::<SecretBinding>::with(())
            .given(vec![bound(1, 1)])
            .when(write(2, true))
            .then_expect_events(vec![SecretBindingEvent::SecretRotated {
                binding_id,
                operation_id: Uuid::from_u128(102),
                version: version(2),
            }]);
    }

    #[test]
    fn rotate_and_revoke_need_a_live_binding_and_revoke_names_every_version() {
        TestFramework::<SecretBinding>::with(())
            .given_no_previous_events()
            .when(write(1, true))
            .then_expect_error(SecretBindingError::NotBound);
        let SecretBindingEvent::SecretBound { binding_id, .. } = bound(1, 1) else {
            unreachable!()
        };
        let rotated = SecretBindingEvent::SecretRotated {
            binding_id,
            operation_id: Uuid::from_u128(102),
            version: version(2),
        };
        TestFramework::<SecretBinding>::with(())
            .given(vec![bound(1, 1), rotated.clone()])
            .when(SecretBindingCommand::Revoke {
                operation_id: Uuid::from_u128(9),
            })
            .then_expect_events(vec![SecretBindingEvent::SecretRevoked {
                binding_id,
                operation_id: Uuid::from_u128(9),
                shredded_version_ids: vec![Uuid::from_u128(1), Uuid::from_u128(2)],
            }]);
        let revoked = SecretBindingEvent::SecretRevoked {
            binding_id,
            operation_id: Uuid::from_u128(9),
            shredded_version_ids: vec![],
        };
        TestFramework::<SecretBinding>::with(())
            .given(vec![bound(1, 1), revoked.clone()])
            .when(SecretBindingCommand::Revoke {
                operation_id: Uuid::from_u128(10),
            })
            .then_expect_error(SecretBindingError::NotBound);
        TestFramework::<SecretBinding>::with(())
            .given(vec![bound(1, 1), revoked])
            .when(write(3, false))
            .then_expect_events(vec![bound(2, 3)]);
    }
}
