//! The SecretOperation aggregate: one secret write, rotation or revocation, keyed
//! by its `Idempotency-Key` (see the API's `idempotency` module). It is recorded
//! once the binding changed, so a repeated request finds it and replays the same
//! answer, and the same key with another request answers `idempotency_conflict`.

use crate::AggregateExt;
use crate::error::{Code, SpecError};
use cqrs_es::event_sink::EventSink;
use cqrs_es::{Aggregate, DomainEvent};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// What an operation did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OperationKind {
    /// `POST /secrets`.
    Write,
    /// `POST /secrets/rotate`.
    Rotate,
    /// `POST /secrets/revoke`.
    Revoke,
}

impl OperationKind {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Write => "write",
            Self::Rotate => "rotate",
            Self::Revoke => "revoke",
        }
    }
}

/// A finished operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperationRecord {
    /// The operation (the aggregate's id).
    pub operation_id: Uuid,
    /// What it did.
    pub kind: OperationKind,
    /// The binding it changed.
    pub binding_id: Uuid,
    /// The binding aggregate it changed.
    pub binding_aggregate_id: Uuid,
    /// `sha256:` of the request (without the value's ciphertext, which differs
    /// between two encryptions of one value).
    pub request_hash: String,
}

/// Commands of [`SecretOperation`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretOperationCommand {
    /// Records the finished operation.
    Record(OperationRecord),
}

/// Events of [`SecretOperation`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum SecretOperationEvent {
    /// The operation was applied.
    SecretOperationApplied(OperationRecord),
}

impl DomainEvent for SecretOperationEvent {
    fn event_type(&self) -> String {
        "SecretOperationApplied".into()
    }
    fn event_version(&self) -> String {
        "1".into()
    }
}

/// Refusals of operation commands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretOperationError {
    /// The key was used for another request.
    #[error("this Idempotency-Key was used for a different request")]
    IdempotencyConflict,
}

impl SpecError for SecretOperationError {
    fn code(&self) -> Code {
        Code::IdempotencyConflict
    }
}

/// One operation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecretOperation {
    /// What it did, once recorded.
    pub record: Option<OperationRecord>,
}

impl SecretOperation {
    /// The recorded operation if `request_hash` repeats it; `idempotency_conflict`
    /// if the key was used for another request; `None` for a new key.
    pub fn replay(
        &self,
        request_hash: &str,
    ) -> Result<Option<&OperationRecord>, SecretOperationError> {
        match &self.record {
            Some(record) if record.request_hash == request_hash => Ok(Some(record)),
            Some(_) => Err(SecretOperationError::IdempotencyConflict),
            None => Ok(None),
        }
    }
}

impl Aggregate for SecretOperation {
    const TYPE: &'static str = "secret_operation";
    type Command = SecretOperationCommand;
    type Event = SecretOperationEvent;
    type Error = SecretOperationError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _: &(),
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        let SecretOperationCommand::Record(record) = command;
        if self.replay(&record.request_hash)?.is_some() {
            return Ok(());
        }
        sink.write(SecretOperationEvent::SecretOperationApplied(record), self)
            .await;
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        let SecretOperationEvent::SecretOperationApplied(record) = event;
        self.record = Some(record);
    }
}

impl AggregateExt for SecretOperation {}

#[cfg(test)]
mod tests {
    use super::*;
    use cqrs_es::test::TestFramework;

    fn record(hash: &str) -> OperationRecord {
        OperationRecord {
            operation_id: Uuid::from_u128(1),
            kind: OperationKind::Write,
            binding_id: Uuid::from_u128(2),
            binding_aggregate_id: Uuid::from_u128(3),
            request_hash: hash.into(),
        }
    }

    #[test]
    fn a_key_records_once_and_refuses_another_request() {
        let applied = SecretOperationEvent::SecretOperationApplied(record("a"));
        TestFramework::<SecretOperation>::with(())
            .given(vec![applied.clone()])
            .when(SecretOperationCommand::Record(record("a")))
            .then_expect_events(vec![]);
        TestFramework::<SecretOperation>::with(())
            .given(vec![applied])
            .when(SecretOperationCommand::Record(record("b")))
            .then_expect_error(SecretOperationError::IdempotencyConflict);
    }
}
