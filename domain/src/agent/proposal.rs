//! An agent's submission proposal (spec section 3, "Agent proposal states"): a run
//! an agent asked for that a human must confirm in a strictly later turn. A
//! proposal is `prepared`; a newer proposal of the same principal supersedes it;
//! the principal cancels it; after [`PROPOSAL_TTL_SECONDS`] it expires. A commit
//! moves it to `committing` while its run is admitted, then to `committed` with the
//! run, or back to `prepared` when the admission failed transiently (the agent may
//! commit again), or to `failed` when the admission refused for good.
//!
//! The aggregate decides every rule that needs the proposal's own history: the
//! state, the expiry, and the turn order (the confirming message must be strictly
//! later than the one that prepared it; the winning turn may resend its commit and
//! gets the same run back).

use crate::AggregateExt;
use crate::directory::PrincipalRef;
use crate::error::{Code, SpecError};
use crate::runs::run::StoredObject;
use chrono::{DateTime, Utc};
use cqrs_es::event_sink::EventSink;
use cqrs_es::{Aggregate, DomainEvent};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// How long a proposal stays committable.
pub const PROPOSAL_TTL_SECONDS: i64 = 1800;

/// A proposal's state (spec `Agent proposal states`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProposalState {
    /// Waiting for a human's confirmation.
    #[default]
    Prepared,
    /// A commit is admitting its run.
    Committing,
    /// The run exists.
    Committed,
    /// A newer proposal of the same principal replaced it.
    Superseded,
    /// The principal cancelled it.
    Cancelled,
    /// Its time ran out before a commit.
    Expired,
    /// The commit's admission refused for good.
    Failed,
}

/// A chat turn: one message of a room, in the room's order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Turn {
    /// The message.
    pub message_id: String,
    /// Its position in the room (strictly increasing).
    pub message_seq: i64,
}

/// What a proposal asks to run, fixed when it is prepared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProposalTerms {
    /// The proposal.
    pub proposal_id: Uuid,
    /// Its company.
    pub company_id: Uuid,
    /// The room the run would be in.
    pub chatroom_id: Uuid,
    /// Who asked (the agent's principal).
    pub principal: PrincipalRef,
    /// The task.
    pub task_id: Uuid,
    /// The exact version.
    pub task_version_id: Uuid,
    /// The staged inputs file (its bytes are what the run gets).
    pub input: StoredObject,
    /// The run's timeout.
    pub timeout_seconds: i64,
    /// The turn that prepared it.
    pub origin: Turn,
    /// One line for the human who confirms.
    pub summary: String,
    /// Whether the version itself requires confirmation (else its writeback policy
    /// does).
    pub requires_confirmation: bool,
    /// Until when it may be committed.
    pub expires_at: DateTime<Utc>,
}

/// Why a proposal command was refused; each maps to an agent tool error code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProposalError {
    /// The proposal id is taken.
    #[error("the proposal exists")]
    Exists,
    /// No such proposal, or it expired.
    #[error("no such pending proposal")]
    NotFound,
    /// It already became a run (in another turn).
    #[error("the proposal already became a run")]
    AlreadyCommitted,
    /// It is not prepared.
    #[error("the proposal is not pending")]
    NotPending,
    /// The confirming message is the one that prepared it.
    #[error("a proposal cannot be confirmed in the turn that prepared it")]
    SameTurn,
    /// The confirming message is older than the one that prepared it.
    #[error("the confirming message is not later than the one that prepared the proposal")]
    NotLater,
}

impl SpecError for ProposalError {
    fn code(&self) -> Code {
        match self {
            Self::Exists => Code::AlreadyExists,
            Self::NotFound => Code::NotFound,
            Self::AlreadyCommitted => Code::AlreadyCommitted,
            Self::NotPending => Code::ProposalNotPending,
            Self::SameTurn => Code::SameTurn,
            Self::NotLater => Code::NotLater,
        }
    }
}

/// Commands of [`AgentProposal`].
#[derive(Debug, Clone, PartialEq)]
pub enum ProposalCommand {
    /// Prepares the proposal.
    Prepare(Box<ProposalTerms>),
    /// Starts a commit in `turn` at `now`, naming the run it will create. A commit
    /// resent by the turn that is committing (or committed) it passes again.
    BeginCommit {
        /// The run's id.
        run_id: Uuid,
        /// The confirming turn.
        turn: Turn,
        /// The time of the commit.
        now: DateTime<Utc>,
    },
    /// The run exists.
    CompleteCommit,
    /// The admission failed; `failed: false` returns the proposal to `prepared`.
    AbandonCommit {
        /// Whether the refusal is final.
        failed: bool,
        /// The agent error code the commit answered.
        error: String,
    },
    /// Replaced by a newer proposal of the same principal.
    Supersede {
        /// The newer proposal.
        by: Uuid,
    },
    /// Cancelled by its principal.
    Cancel,
    /// Marks a prepared proposal whose time ran out (no-op otherwise).
    Expire {
        /// The time of the check.
        now: DateTime<Utc>,
    },
}

/// Events of [`AgentProposal`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProposalEvent {
    /// A proposal waits for confirmation.
    ProposalPrepared(Box<ProposalTerms>),
    /// A commit began in a turn; its run is being admitted.
    ProposalCommitStarted {
        /// The run's id.
        run_id: Uuid,
        /// The confirming turn.
        turn: Turn,
    },
    /// The run exists.
    ProposalCommitted {
        /// The run.
        run_id: Uuid,
    },
    /// The admission refused: the proposal is `prepared` again, or `failed`.
    ProposalCommitAbandoned {
        /// Whether the proposal failed for good.
        failed: bool,
        /// The agent error code the commit answered.
        error: String,
    },
    /// A newer proposal replaced it.
    ProposalSuperseded {
        /// The newer proposal.
        by: Uuid,
    },
    /// Its principal cancelled it.
    ProposalCancelled,
    /// Its time ran out.
    ProposalExpired,
}

impl DomainEvent for ProposalEvent {
    fn event_type(&self) -> String {
        match self {
            Self::ProposalPrepared(_) => "ProposalPrepared",
            Self::ProposalCommitStarted { .. } => "ProposalCommitStarted",
            Self::ProposalCommitted { .. } => "ProposalCommitted",
            Self::ProposalCommitAbandoned { .. } => "ProposalCommitAbandoned",
            Self::ProposalSuperseded { .. } => "ProposalSuperseded",
            Self::ProposalCancelled => "ProposalCancelled",
            Self::ProposalExpired => "ProposalExpired",
        }
        .into()
    }
    fn event_version(&self) -> String {
        "1".into()
    }
}

/// One proposal's lifecycle.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentProposal {
    /// What it asks, once prepared.
    pub terms: Option<ProposalTerms>,
    /// Its state.
    pub state: ProposalState,
    /// The run a commit named.
    pub run_id: Option<Uuid>,
    /// The turn that began the commit.
    pub commit_turn: Option<Turn>,
}

impl AgentProposal {
    /// Whether `turn` is the one that began the current (or finished) commit.
    fn winning(&self, turn: &Turn) -> bool {
        self.commit_turn.as_ref() == Some(turn)
    }

    fn begin_commit(&self, turn: &Turn, now: DateTime<Utc>) -> Result<bool, ProposalError> {
        let terms = self.terms.as_ref().ok_or(ProposalError::NotFound)?;
        match self.state {
            ProposalState::Committing | ProposalState::Committed if self.winning(turn) => {
                return Ok(false);
            }
            ProposalState::Committing | ProposalState::Committed => {
                return Err(ProposalError::AlreadyCommitted);
            }
            ProposalState::Expired => return Err(ProposalError::NotFound),
            ProposalState::Prepared if now >= terms.expires_at => {
                return Err(ProposalError::NotFound);
            }
            ProposalState::Prepared => {}
            _ => return Err(ProposalError::NotPending),
        }
        match turn.message_seq.cmp(&terms.origin.message_seq) {
            std::cmp::Ordering::Equal => Err(ProposalError::SameTurn),
            std::cmp::Ordering::Less => Err(ProposalError::NotLater),
            std::cmp::Ordering::Greater => Ok(true),
        }
    }
}

impl Aggregate for AgentProposal {
    const TYPE: &'static str = "agent_proposal";
    type Command = ProposalCommand;
    type Event = ProposalEvent;
    type Error = ProposalError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _: &(),
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        use ProposalState::*;
        let event = match command {
            ProposalCommand::Prepare(terms) => {
                if self.terms.is_some() {
                    return Err(ProposalError::Exists);
                }
                ProposalEvent::ProposalPrepared(terms)
            }
            ProposalCommand::BeginCommit { run_id, turn, now } => {
                if !self.begin_commit(&turn, now)? {
                    return Ok(());
                }
                ProposalEvent::ProposalCommitStarted { run_id, turn }
            }
            ProposalCommand::CompleteCommit => match self.state {
                Committing => ProposalEvent::ProposalCommitted {
                    run_id: self.run_id.ok_or(ProposalError::NotPending)?,
                },
                Committed => return Ok(()),
                _ => return Err(ProposalError::NotPending),
            },
            ProposalCommand::AbandonCommit { failed, error } => {
                if self.state != Committing {
                    return Err(ProposalError::NotPending);
                }
                ProposalEvent::ProposalCommitAbandoned { failed, error }
            }
            ProposalCommand::Supersede { by } => {
                if self.state != Prepared {
                    return Ok(());
                }
                ProposalEvent::ProposalSuperseded { by }
            }
            ProposalCommand::Cancel => {
                if self.terms.is_none() {
                    return Err(ProposalError::NotFound);
                }
                match self.state {
                    Prepared => ProposalEvent::ProposalCancelled,
                    Cancelled => return Ok(()),
                    Committing | Committed => return Err(ProposalError::AlreadyCommitted),
                    _ => return Err(ProposalError::NotPending),
                }
            }
            ProposalCommand::Expire { now } => match &self.terms {
                Some(terms) if self.state == Prepared && now >= terms.expires_at => {
                    ProposalEvent::ProposalExpired
                }
                _ => return Ok(()),
            },
        };
        sink.write(event, self).await;
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        use ProposalState::*;
        match event {
            ProposalEvent::ProposalPrepared(terms) => {
                self.terms = Some(*terms);
                self.state = Prepared;
            }
            ProposalEvent::ProposalCommitStarted { run_id, turn } => {
                self.state = Committing;
                self.run_id = Some(run_id);
                self.commit_turn = Some(turn);
            }
            ProposalEvent::ProposalCommitted { .. } => self.state = Committed,
            ProposalEvent::ProposalCommitAbandoned { failed, .. } => {
                self.state = if failed { Failed } else { Prepared };
                self.run_id = None;
                self.commit_turn = None;
            }
            ProposalEvent::ProposalSuperseded { .. } => self.state = Superseded,
            ProposalEvent::ProposalCancelled => self.state = Cancelled,
            ProposalEvent::ProposalExpired => self.state = Expired,
        }
    }
}

impl AggregateExt for AgentProposal {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::principal::PrincipalType;
    use cqrs_es::test::TestFramework;

    fn turn(seq: i64) -> Turn {
        Turn {
            message_id: format!("m{seq}"),
            message_seq: seq,
        }
    }

    fn prepared() -> ProposalEvent {
        ProposalEvent::ProposalPrepared(Box::new(ProposalTerms {
            proposal_id: Uuid::from_u128(1),
            company_id: Uuid::from_u128(2),
            chatroom_id: Uuid::from_u128(3),
            principal: PrincipalRef {
                kind: PrincipalType::User,
                id: Uuid::from_u128(4),
            },
            task_id: Uuid::from_u128(5),
            task_version_id: Uuid::from_u128(6),
            input: StoredObject {
                key: "k".into(),
                byte_size: 2,
                digest: "sha256:00".into(),
            },
            timeout_seconds: 60,
            origin: turn(5),
            summary: "run".into(),
            requires_confirmation: true,
            expires_at: DateTime::from_timestamp(10_000, 0).unwrap(),
        }))
    }

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(seconds, 0).unwrap()
    }

    fn commit(seq: i64, now: i64) -> ProposalCommand {
        ProposalCommand::BeginCommit {
            run_id: Uuid::from_u128(9),
            turn: turn(seq),
            now: at(now),
        }
    }

    fn started(seq: i64) -> ProposalEvent {
        ProposalEvent::ProposalCommitStarted {
            run_id: Uuid::from_u128(9),
            turn: turn(seq),
        }
    }

    #[test]
    fn a_commit_needs_a_strictly_later_turn_before_expiry() {
        let given = || TestFramework::<AgentProposal>::with(()).given(vec![prepared()]);
        given()
            .when(commit(5, 100))
            .then_expect_error(ProposalError::SameTurn);
        given()
            .when(commit(4, 100))
            .then_expect_error(ProposalError::NotLater);
        given()
            .when(commit(6, 10_000))
            .then_expect_error(ProposalError::NotFound);
        given()
            .when(commit(6, 100))
            .then_expect_events(vec![started(6)]);
    }

    #[test]
    fn the_winning_turn_may_resend_and_any_other_turn_is_refused() {
        let committed = || {
            TestFramework::<AgentProposal>::with(()).given(vec![
                prepared(),
                started(6),
                ProposalEvent::ProposalCommitted {
                    run_id: Uuid::from_u128(9),
                },
            ])
        };
        committed().when(commit(6, 100)).then_expect_events(vec![]);
        committed()
            .when(commit(7, 100))
            .then_expect_error(ProposalError::AlreadyCommitted);
        committed()
            .when(ProposalCommand::Cancel)
            .then_expect_error(ProposalError::AlreadyCommitted);
    }

    #[test]
    fn a_transient_failure_returns_the_proposal_to_prepared() {
        let abandoned = ProposalEvent::ProposalCommitAbandoned {
            failed: false,
            error: "retryable".into(),
        };
        TestFramework::<AgentProposal>::with(())
            .given(vec![prepared(), started(6), abandoned])
            .when(commit(7, 100))
            .then_expect_events(vec![started(7)]);
    }

    #[test]
    fn superseded_cancelled_and_expired_proposals_are_not_pending() {
        for event in [
            ProposalEvent::ProposalSuperseded {
                by: Uuid::from_u128(8),
            },
            ProposalEvent::ProposalCancelled,
        ] {
            TestFramework::<AgentProposal>::with(())
                .given(vec![prepared(), event])
                .when(commit(6, 100))
                .then_expect_error(ProposalError::NotPending);
        }
        TestFramework::<AgentProposal>::with(())
            .given(vec![prepared()])
            .when(ProposalCommand::Expire { now: at(10_000) })
            .then_expect_events(vec![ProposalEvent::ProposalExpired]);
        TestFramework::<AgentProposal>::with(())
            .given(vec![prepared()])
            .when(ProposalCommand::Expire { now: at(100) })
            .then_expect_events(vec![]);
    }
}
