//! The SecretApproval aggregate: a consumer scope's consent that one exact task
//! version may read the scope's own values for the named slots (spec
//! `SandboxSecretApprovalCreateRequest`). Its id is derived from (scope, consumer,
//! version), so a scope holds at most one live approval per version; approving again
//! with another slot set starts a new generation, which supersedes the old one.
//!
//! Approvals come from the approval routes and, for scopes the enabling operator
//! manages, from enabling, binding and accepting a version.

use super::ConsumerScope;
use crate::AggregateExt;
use crate::error::{Code, SpecError};
use crate::sharing::generation_id;
use cqrs_es::event_sink::EventSink;
use cqrs_es::{Aggregate, DomainEvent};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The aggregate id of the approvals of one version by one consumer.
pub fn approval_aggregate_id(
    scope: ConsumerScope,
    consumer_id: Uuid,
    task_version_id: Uuid,
) -> Uuid {
    crate::ids::derive(
        "secret_approval",
        &[
            scope.as_str(),
            &consumer_id.to_string(),
            &task_version_id.to_string(),
        ],
    )
}

/// How an approval was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalSource {
    /// `POST /secret-approvals` (or its alias).
    Explicit,
    /// Recorded by enabling, binding or accepting a version.
    Enablement,
}

/// What an approval covers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalTerms {
    /// The company.
    pub company_id: Uuid,
    /// The approving scope.
    pub consumer_scope: ConsumerScope,
    /// Its room, department or company id.
    pub consumer_id: Uuid,
    /// The task.
    pub task_id: Uuid,
    /// The exact version.
    pub task_version_id: Uuid,
    /// Its canonical digest (`sha256:`).
    pub task_version_digest: String,
    /// The slots whose values the version may read, sorted and unique.
    pub slot_names: Vec<String>,
    /// How it was given.
    pub source: ApprovalSource,
}

/// Commands of [`SecretApproval`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretApprovalCommand {
    /// Approves; the same terms again change nothing.
    Grant(ApprovalTerms),
    /// Revokes the live approval.
    Revoke {
        /// The approval the caller means.
        approval_id: Uuid,
        /// Why.
        reason: String,
    },
}

/// Events of [`SecretApproval`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum SecretApprovalEvent {
    /// An approval is live (superseding the previous generation, if any).
    SecretApprovalGranted {
        /// Its id (one per generation).
        approval_id: Uuid,
        /// 1, then one more per new slot set or re-approval.
        generation: i64,
        /// What it covers.
        terms: ApprovalTerms,
    },
    /// The approval is revoked.
    SecretApprovalRevoked {
        /// The approval.
        approval_id: Uuid,
        /// Why.
        reason: String,
    },
}

impl DomainEvent for SecretApprovalEvent {
    fn event_type(&self) -> String {
        match self {
            Self::SecretApprovalGranted { .. } => "SecretApprovalGranted",
            Self::SecretApprovalRevoked { .. } => "SecretApprovalRevoked",
        }
        .into()
    }
    fn event_version(&self) -> String {
        "1".into()
    }
}

/// Refusals of approval commands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretApprovalError {
    /// The approval is not the live one.
    #[error("the approval is revoked")]
    NotLive,
}

impl SpecError for SecretApprovalError {
    fn code(&self) -> Code {
        Code::IllegalStateTransition
    }
}

/// The approvals of one version by one consumer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecretApproval {
    /// Generations so far.
    pub generation: i64,
    /// The live approval and its slots.
    pub live: Option<(Uuid, Vec<String>)>,
}

impl Aggregate for SecretApproval {
    const TYPE: &'static str = "secret_approval";
    type Command = SecretApprovalCommand;
    type Event = SecretApprovalEvent;
    type Error = SecretApprovalError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _: &(),
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        let event = match command {
            SecretApprovalCommand::Grant(terms) => {
                if self
                    .live
                    .as_ref()
                    .is_some_and(|(_, slots)| *slots == terms.slot_names)
                {
                    return Ok(());
                }
                let generation = self.generation + 1;
                let aggregate = approval_aggregate_id(
                    terms.consumer_scope,
                    terms.consumer_id,
                    terms.task_version_id,
                );
                SecretApprovalEvent::SecretApprovalGranted {
                    approval_id: generation_id("secret_approval", aggregate, generation),
                    generation,
                    terms,
                }
            }
            SecretApprovalCommand::Revoke {
                approval_id,
                reason,
            } => match &self.live {
                Some((live, _)) if *live == approval_id => {
                    SecretApprovalEvent::SecretApprovalRevoked {
                        approval_id,
                        reason,
                    }
                }
                _ => return Err(SecretApprovalError::NotLive),
            },
        };
        sink.write(event, self).await;
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        match event {
            SecretApprovalEvent::SecretApprovalGranted {
                approval_id,
                generation,
                terms,
            } => {
                self.generation = generation;
                self.live = Some((approval_id, terms.slot_names));
            }
            SecretApprovalEvent::SecretApprovalRevoked { .. } => self.live = None,
        }
    }
}

impl AggregateExt for SecretApproval {}

#[cfg(test)]
mod tests {
    use super::*;
    use cqrs_es::test::TestFramework;

    fn terms(slots: &[&str]) -> ApprovalTerms {
        ApprovalTerms {
            company_id: Uuid::from_u128(1),
            consumer_scope: ConsumerScope::Department,
            consumer_id: Uuid::from_u128(2),
            task_id: Uuid::from_u128(3),
            task_version_id: Uuid::from_u128(4),
            task_version_digest: format!("sha256:{}", "ab".repeat(32)),
            slot_names: slots.iter().map(|s| s.to_string()).collect(),
            source: ApprovalSource::Explicit,
        }
    }

    fn granted(generation: i64, slots: &[&str]) -> SecretApprovalEvent {
        let aggregate = approval_aggregate_id(
            ConsumerScope::Department,
            Uuid::from_u128(2),
            Uuid::from_u128(4),
        );
        SecretApprovalEvent::SecretApprovalGranted {
            approval_id: generation_id("secret_approval", aggregate, generation),
            generation,
            terms: terms(slots),
        }
    }

    #[test]
    fn the_same_terms_change_nothing_and_new_slots_supersede() {
        TestFramework::<SecretApproval>::with(())
            .given(vec![granted(1, &["A"])])
            .when(SecretApprovalCommand::Grant(terms(&["A"])))
            .then_expect_events(vec![]);
        TestFramework::<SecretApproval>::with(())
            .given(vec![granted(1, &["A"])])
            .when(SecretApprovalCommand::Grant(terms(&["A", "B"])))
            .then_expect_events(vec![granted(2, &["A", "B"])]);
    }

    #[test]
    fn only_the_live_approval_is_revoked() {
        let SecretApprovalEvent::SecretApprovalGranted { approval_id, .. } = granted(1, &["A"])
        else {
            unreachable!()
        };
        let revoke = SecretApprovalCommand::Revoke {
            approval_id,
            reason: "done".into(),
        };
        TestFramework::<SecretApproval>::with(())
            .given(vec![granted(1, &["A"])])
            .when(revoke.clone())
            .then_expect_events(vec![SecretApprovalEvent::SecretApprovalRevoked {
                approval_id,
                reason: "done".into(),
            }]);
        TestFramework::<SecretApproval>::with(())
            .given(vec![granted(1, &["A"]), granted(2, &["B"])])
            .when(revoke)
            .then_expect_error(SecretApprovalError::NotLive);
    }
}
