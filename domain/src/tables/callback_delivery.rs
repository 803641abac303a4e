//! The CallbackDelivery aggregate: one `idempotency_key` of one callback token
//! (spec `custom-tables.md` section 8: the same key returns the original result
//! with `replayed: true` for 24 hours). Its id is derived from the token and the
//! key, so every request carrying the key reaches the same aggregate and the event
//! store's optimistic lock lets exactly one of several concurrent first requests
//! receive it.
//!
//! A receipt names the record the write targets before the write happens (a new id
//! for a creation), so a request that finds the receipt unanswered (its first
//! request still writing, or gone) can finish the same write without a second
//! record. A write that fails releases the key.

use crate::AggregateExt;
use crate::error::{Code, SpecError};
use chrono::{DateTime, Duration, Utc};
use cqrs_es::event_sink::EventSink;
use cqrs_es::{Aggregate, DomainEvent};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// How long a key is remembered.
pub const RETENTION: Duration = Duration::hours(24);

/// A callback write's operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallbackOp {
    /// Creates a record.
    Create,
    /// Updates a record.
    Update,
}

impl CallbackOp {
    /// The wire form.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Update => "update",
        }
    }

    /// The result status of a write that applied.
    pub fn applied_status(self) -> &'static str {
        match self {
            Self::Create => "created",
            Self::Update => "updated",
        }
    }
}

/// A received request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Receipt {
    /// Digest of the request body (canonical JSON).
    pub request_hash: String,
    /// When it was received.
    pub received_at: DateTime<Utc>,
    /// Its operation.
    pub op: CallbackOp,
    /// The record it writes.
    pub record_id: Uuid,
    /// Whether its write applied.
    pub answered: bool,
}

/// Commands of [`CallbackDelivery`].
#[derive(Debug, Clone, PartialEq)]
pub enum DeliveryCommand {
    /// Receives a request: records it unless a live receipt exists (then changes
    /// nothing when the body is the same, and refuses a different body).
    Receive {
        /// The token.
        token_id: Uuid,
        /// The idempotency key.
        key: String,
        /// Digest of the body.
        request_hash: String,
        /// Operation.
        op: CallbackOp,
        /// The record it writes.
        record_id: Uuid,
        /// Now.
        at: DateTime<Utc>,
    },
    /// The write applied.
    Answer,
    /// The write failed: the key is free again.
    Release,
}

/// Events of [`CallbackDelivery`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum DeliveryEvent {
    /// A request with a key arrived first.
    CallbackReceived {
        /// The token.
        token_id: Uuid,
        /// The idempotency key.
        key: String,
        /// Digest of the body.
        request_hash: String,
        /// Operation.
        op: CallbackOp,
        /// The record it writes.
        record_id: Uuid,
        /// When.
        received_at: DateTime<Utc>,
    },
    /// Its write applied.
    CallbackAnswered {
        /// The record written.
        record_id: Uuid,
    },
    /// Its write failed; the key was released.
    CallbackReleased,
}

impl DomainEvent for DeliveryEvent {
    fn event_type(&self) -> String {
        match self {
            Self::CallbackReceived { .. } => "CallbackReceived",
            Self::CallbackAnswered { .. } => "CallbackAnswered",
            Self::CallbackReleased => "CallbackReleased",
        }
        .into()
    }
    fn event_version(&self) -> String {
        "1".into()
    }
}

/// Refusals of delivery commands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeliveryError {
    /// The key was used with another body within the retention.
    #[error("idempotency_key was already used with a different body")]
    KeyReused,
}

impl SpecError for DeliveryError {
    fn code(&self) -> Code {
        Code::IdempotencyConflict
    }
}

/// One key's latest request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CallbackDelivery {
    /// The latest receipt (none before the first, or after a release).
    pub receipt: Option<Receipt>,
}

impl CallbackDelivery {
    /// The receipt if it is still remembered at `now`.
    pub fn live(&self, now: DateTime<Utc>) -> Option<&Receipt> {
        self.receipt
            .as_ref()
            .filter(|r| now < r.received_at + RETENTION)
    }
}

impl Aggregate for CallbackDelivery {
    const TYPE: &'static str = "callback_delivery";
    type Command = DeliveryCommand;
    type Event = DeliveryEvent;
    type Error = DeliveryError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _: &(),
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        let event = match command {
            DeliveryCommand::Receive {
                token_id,
                key,
                request_hash,
                op,
                record_id,
                at,
            } => match self.live(at) {
                Some(receipt) if receipt.request_hash == request_hash => return Ok(()),
                Some(_) => return Err(DeliveryError::KeyReused),
                None => DeliveryEvent::CallbackReceived {
                    token_id,
                    key,
                    request_hash,
                    op,
                    record_id,
                    received_at: at,
                },
            },
            DeliveryCommand::Answer => match &self.receipt {
                Some(receipt) if !receipt.answered => DeliveryEvent::CallbackAnswered {
                    record_id: receipt.record_id,
                },
                _ => return Ok(()),
            },
            DeliveryCommand::Release => match &self.receipt {
                Some(receipt) if !receipt.answered => DeliveryEvent::CallbackReleased,
                _ => return Ok(()),
            },
        };
        sink.write(event, self).await;
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        match event {
            DeliveryEvent::CallbackReceived {
                request_hash,
                op,
                record_id,
                received_at,
                ..
            } => {
                self.receipt = Some(Receipt {
                    request_hash,
                    received_at,
                    op,
                    record_id,
                    answered: false,
                });
            }
            DeliveryEvent::CallbackAnswered { .. } => {
                if let Some(receipt) = &mut self.receipt {
                    receipt.answered = true;
                }
            }
            DeliveryEvent::CallbackReleased => self.receipt = None,
        }
    }
}

impl AggregateExt for CallbackDelivery {}

#[cfg(test)]
mod tests {
    use super::*;
    use cqrs_es::test::TestFramework;

    fn at(hours: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000, 0).unwrap() + Duration::hours(hours)
    }

    fn receive(hash: &str, hours: i64) -> DeliveryCommand {
        DeliveryCommand::Receive {
            token_id: Uuid::from_u128(1),
            key: "k".into(),
            request_hash: hash.into(),
            op: CallbackOp::Create,
            record_id: Uuid::from_u128(2),
            at: at(hours),
        }
    }

    fn received(hash: &str, hours: i64) -> DeliveryEvent {
        DeliveryEvent::CallbackReceived {
            token_id: Uuid::from_u128(1),
            key: "k".into(),
            request_hash: hash.into(),
            op: CallbackOp::Create,
            record_id: Uuid::from_u128(2),
            received_at: at(hours),
        }
    }

    #[test]
    fn a_key_is_received_once_within_its_retention() {
        TestFramework::<CallbackDelivery>::with(())
            .given_no_previous_events()
            .when(receive("a", 0))
            .then_expect_events(vec![received("a", 0)]);
        TestFramework::<CallbackDelivery>::with(())
            .given(vec![received("a", 0)])
            .when(receive("a", 23))
            .then_expect_events(vec![]);
        TestFramework::<CallbackDelivery>::with(())
            .given(vec![received("a", 0)])
            .when(receive("b", 23))
            .then_expect_error(DeliveryError::KeyReused);
        TestFramework::<CallbackDelivery>::with(())
            .given(vec![received("a", 0)])
            .when(receive("b", 24))
            .then_expect_events(vec![received("b", 24)]);
    }

    #[test]
    fn a_released_key_is_free_and_an_answered_one_stays() {
        TestFramework::<CallbackDelivery>::with(())
            .given(vec![received("a", 0), DeliveryEvent::CallbackReleased])
            .when(receive("b", 1))
            .then_expect_events(vec![received("b", 1)]);
        let answered = DeliveryEvent::CallbackAnswered {
            record_id: Uuid::from_u128(2),
        };
        TestFramework::<CallbackDelivery>::with(())
            .given(vec![received("a", 0), answered.clone()])
            .when(DeliveryCommand::Release)
            .then_expect_events(vec![]);
        TestFramework::<CallbackDelivery>::with(())
            .given(vec![received("a", 0), answered])
            .when(DeliveryCommand::Answer)
            .then_expect_events(vec![]);
    }
}
