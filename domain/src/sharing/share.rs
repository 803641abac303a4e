//! The Share aggregate: the grants of one task to one target, one generation at a
//! time. Its id is derived from (task, target kind, target), so two concurrent
//! grants of the same target meet at the optimistic lock and the second sees the
//! first as live (`share_already_live`).

use super::generation_id;
use super::policy::SlotPolicies;
use crate::AggregateExt;
use crate::error::{Code, SpecError};
use cqrs_es::event_sink::EventSink;
use cqrs_es::{Aggregate, DomainEvent};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Where a task is shared (spec `ShareTargetKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShareTargetKind {
    /// One chatroom.
    Chatroom,
    /// Every room of a department.
    Department,
    /// Every room of the company.
    Company,
}

impl ShareTargetKind {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Chatroom => "chatroom",
            Self::Department => "department",
            Self::Company => "company",
        }
    }
}

/// A grant's state (spec section 3).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShareState {
    /// It reaches its target.
    #[default]
    Active,
    /// Revoked (or its task archived).
    Revoked,
}

/// The aggregate id of the grants of `task_id` to one target.
pub fn share_id(task_id: Uuid, kind: ShareTargetKind, target_id: Uuid) -> Uuid {
    crate::ids::derive(
        "share",
        &[&task_id.to_string(), kind.as_str(), &target_id.to_string()],
    )
}

/// A new grant's facts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShareGranted {
    /// The grant's id (one per generation).
    pub grant_id: Uuid,
    /// 1 for the first grant of this target, then one more per reshare.
    pub generation: i64,
    /// The shared task.
    pub task_id: Uuid,
    /// The task's company.
    pub company_id: Uuid,
    /// Room, department or company.
    pub target_kind: ShareTargetKind,
    /// The room, department or company id.
    pub target_id: Uuid,
    /// Who fills each listed secret slot; absent slots are `borrower`.
    pub secret_slot_policies: SlotPolicies,
}

/// Commands of [`Share`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShareCommand {
    /// Starts a new generation unless one is live.
    Grant {
        /// The task.
        task_id: Uuid,
        /// Its company.
        company_id: Uuid,
        /// Target kind.
        target_kind: ShareTargetKind,
        /// Target id.
        target_id: Uuid,
        /// Slot policies, fixed for the grant's life.
        secret_slot_policies: SlotPolicies,
    },
    /// Ends the live generation.
    Revoke {
        /// The grant the caller means.
        grant_id: Uuid,
        /// Why, up to 512 characters.
        reason: String,
    },
}

/// Events of [`Share`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ShareEvent {
    /// A grant is live.
    ShareGranted(ShareGranted),
    /// The grant is revoked; the bindings it carried no longer apply.
    ShareRevoked {
        /// The grant.
        grant_id: Uuid,
        /// Why.
        reason: String,
    },
}

impl DomainEvent for ShareEvent {
    fn event_type(&self) -> String {
        match self {
            Self::ShareGranted(_) => "ShareGranted",
            Self::ShareRevoked { .. } => "ShareRevoked",
        }
        .into()
    }
    fn event_version(&self) -> String {
        "1".into()
    }
}

/// Refusals of share commands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShareError {
    /// A grant of this task to this target is live.
    #[error("a live share of this task to this target exists")]
    AlreadyLive,
    /// The grant is not of this target.
    #[error("share grant not found")]
    NotFound,
    /// The grant is already revoked.
    #[error("the share grant is already revoked")]
    NotLive,
}

impl SpecError for ShareError {
    fn code(&self) -> Code {
        match self {
            Self::AlreadyLive => Code::ShareAlreadyLive,
            Self::NotFound => Code::NotFound,
            Self::NotLive => Code::IllegalStateTransition,
        }
    }
}

/// The grants of one task to one target.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Share {
    /// Generations so far.
    pub generation: i64,
    /// The live grant, if any.
    pub live: Option<Uuid>,
    /// Every grant id ever issued here.
    pub grants: Vec<Uuid>,
}

impl Aggregate for Share {
    const TYPE: &'static str = "share";
    type Command = ShareCommand;
    type Event = ShareEvent;
    type Error = ShareError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _: &(),
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        match command {
            ShareCommand::Grant {
                task_id,
                company_id,
                target_kind,
                target_id,
                secret_slot_policies,
            } => {
                if self.live.is_some() {
                    return Err(ShareError::AlreadyLive);
                }
                let generation = self.generation + 1;
                let aggregate = share_id(task_id, target_kind, target_id);
                let event = ShareEvent::ShareGranted(ShareGranted {
                    grant_id: generation_id("share_grant", aggregate, generation),
                    generation,
                    task_id,
                    company_id,
                    target_kind,
                    target_id,
                    secret_slot_policies,
                });
                sink.write(event, self).await;
            }
            ShareCommand::Revoke { grant_id, reason } => {
                if !self.grants.contains(&grant_id) {
                    return Err(ShareError::NotFound);
                }
                if self.live != Some(grant_id) {
                    return Err(ShareError::NotLive);
                }
                sink.write(ShareEvent::ShareRevoked { grant_id, reason }, self)
                    .await;
            }
        }
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        match event {
            ShareEvent::ShareGranted(granted) => {
                self.generation = granted.generation;
                self.live = Some(granted.grant_id);
                self.grants.push(granted.grant_id);
            }
            ShareEvent::ShareRevoked { .. } => self.live = None,
        }
    }
}

impl AggregateExt for Share {}

#[cfg(test)]
mod tests {
    use super::*;
    use cqrs_es::test::TestFramework;

    const TASK: Uuid = Uuid::from_u128(1);
    const COMPANY: Uuid = Uuid::from_u128(2);
    const ROOM: Uuid = Uuid::from_u128(3);

    fn grant() -> ShareCommand {
        ShareCommand::Grant {
            task_id: TASK,
            company_id: COMPANY,
            target_kind: ShareTargetKind::Chatroom,
            target_id: ROOM,
            secret_slot_policies: SlotPolicies::new(),
        }
    }

    fn granted(generation: i64) -> ShareEvent {
        let aggregate = share_id(TASK, ShareTargetKind::Chatroom, ROOM);
        ShareEvent::ShareGranted(ShareGranted {
            grant_id: generation_id("share_grant", aggregate, generation),
            generation,
            task_id: TASK,
            company_id: COMPANY,
            target_kind: ShareTargetKind::Chatroom,
            target_id: ROOM,
            secret_slot_policies: SlotPolicies::new(),
        })
    }

    fn grant_id(generation: i64) -> Uuid {
        match granted(generation) {
            ShareEvent::ShareGranted(g) => g.grant_id,
            _ => unreachable!(),
        }
    }

    #[test]
    fn one_live_grant_per_target_and_a_reshare_is_a_new_generation() {
        TestFramework::<Share>::with(())
            .given(vec![granted(1)])
            .when(grant())
            .then_expect_error(ShareError::AlreadyLive);
        TestFramework::<Share>::with(())
            .given(vec![
                granted(1),
                ShareEvent::ShareRevoked {
                    grant_id: grant_id(1),
                    reason: String::new(),
                },
            ])
            .when(grant())
            .then_expect_events(vec![granted(2)]);
        assert_ne!(grant_id(1), grant_id(2));
    }

    #[test]
    fn only_the_live_grant_can_be_revoked() {
        let revoked = ShareEvent::ShareRevoked {
            grant_id: grant_id(1),
            reason: "done".into(),
        };
        TestFramework::<Share>::with(())
            .given(vec![granted(1), revoked.clone()])
            .when(ShareCommand::Revoke {
                grant_id: grant_id(1),
                reason: String::new(),
            })
            .then_expect_error(ShareError::NotLive);
        TestFramework::<Share>::with(())
            .given(vec![granted(1)])
            .when(ShareCommand::Revoke {
                grant_id: Uuid::nil(),
                reason: String::new(),
            })
            .then_expect_error(ShareError::NotFound);
        TestFramework::<Share>::with(())
            .given(vec![granted(1)])
            .when(ShareCommand::Revoke {
                grant_id: grant_id(1),
                reason: "done".into(),
            })
            .then_expect_events(vec![revoked]);
    }
}
