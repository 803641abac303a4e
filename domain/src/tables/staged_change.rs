//! The StagedChange aggregate: a callback write an approval rule held
//! (`held_for_approval`). It waits, frozen with the gates of the rule's template,
//! until reviewers pass every gate (then it is applied through the table write
//! path, as the token's minting moderator) or one rejects it (then it is dropped).
//! Its review process id is derived from it.

use super::callback_delivery::CallbackOp;
use crate::AggregateExt;
use crate::error::{Code, SpecError};
use crate::review::Gate;
use cqrs_es::event_sink::EventSink;
use cqrs_es::{Aggregate, DomainEvent};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use uuid::Uuid;

/// Namespace of review process ids.
const PROCESSES: Uuid = Uuid::from_u128(0x3b0e_51c4_97a2_4d18_8f6e_2a7c_0d94_e513);

/// The review process of a staged change.
pub fn process_id(staged_change_id: Uuid) -> Uuid {
    Uuid::new_v5(&PROCESSES, staged_change_id.as_bytes())
}

/// A held write.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Held {
    /// The staged change.
    pub staged_change_id: Uuid,
    /// Its review process.
    pub process_id: Uuid,
    /// The company.
    pub company_id: Uuid,
    /// The table.
    pub table_id: Uuid,
    /// The callback token that wrote it.
    pub token_id: Uuid,
    /// `create` or `update`.
    pub op: CallbackOp,
    /// The record it updates, or the id the created record will take.
    pub record_id: Uuid,
    /// The cells as sent.
    pub data: Map<String, Value>,
    /// The rule that held it.
    pub rule_id: String,
    /// The rule's label.
    pub rule_label: String,
    /// The rule's template.
    pub template_id: Uuid,
    /// The template's gates when it was held.
    pub gates: Vec<Gate>,
    /// Whether approvals carry a signature.
    pub require_signature: bool,
    /// The token's minting moderator, or the Command's actor (`user:<id>`): the
    /// write applies as them.
    pub author: String,
    /// Who wrote it: a callback token (`token_id` is the token's id) or a Command
    /// (`token_id` is the Command's id).
    #[serde(default)]
    pub source: HoldSource,
}

/// The kind of writer a held write came from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HoldSource {
    /// A callback token's write.
    #[default]
    CallbackToken,
    /// A write Command's.
    Command,
}

/// Where a staged change is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeStatus {
    /// Waiting for its gates.
    #[default]
    Pending,
    /// Every gate passed; the write applied.
    Applied,
    /// A reviewer rejected it; nothing was written.
    Rejected,
}

impl ChangeStatus {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Applied => "applied",
            Self::Rejected => "rejected",
        }
    }
}

/// Commands of [`StagedChange`].
#[derive(Debug, Clone, PartialEq)]
pub enum StagedChangeCommand {
    /// Holds the write (nothing happens when it exists).
    Hold(Box<Held>),
    /// A reviewer passes gates; `applied` when the write was applied because
    /// every gate has now passed.
    Approve {
        /// The reviewer (`user:<id>`).
        by: String,
        /// The gates (by position) their groups decide.
        gates: Vec<usize>,
        /// Their signature, when the template asks for one.
        signature: Option<String>,
        /// Whether the write applied.
        applied: bool,
    },
    /// A reviewer drops the write.
    Reject {
        /// The reviewer.
        by: String,
        /// Why.
        reason: Option<String>,
    },
}

/// Events of [`StagedChange`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum StagedChangeEvent {
    /// A rule held a write.
    ChangeHeld(Box<Held>),
    /// A reviewer passed gates.
    ChangeApproved {
        /// The reviewer.
        by: String,
        /// The gates they passed.
        gates: Vec<usize>,
        /// Their signature.
        signature: Option<String>,
    },
    /// Every gate passed and the write applied.
    ChangeApplied,
    /// A reviewer rejected the write.
    ChangeRejected {
        /// The reviewer.
        by: String,
        /// Why.
        reason: Option<String>,
    },
}

impl DomainEvent for StagedChangeEvent {
    fn event_type(&self) -> String {
        match self {
            Self::ChangeHeld(_) => "ChangeHeld",
            Self::ChangeApproved { .. } => "ChangeApproved",
            Self::ChangeApplied => "ChangeApplied",
            Self::ChangeRejected { .. } => "ChangeRejected",
        }
        .into()
    }
    fn event_version(&self) -> String {
        "1".into()
    }
}

/// Refusals of staged change commands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StagedChangeError {
    /// No such change.
    #[error("not found")]
    NotFound,
    /// It was applied or rejected already.
    #[error("the change was already decided")]
    NotPending,
}

impl SpecError for StagedChangeError {
    fn code(&self) -> Code {
        match self {
            Self::NotFound => Code::NotFound,
            Self::NotPending => Code::StagedChangeNotPending,
        }
    }
}

/// A staged change.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StagedChange {
    /// The held write.
    pub held: Option<Box<Held>>,
    /// Gates passed so far (by position).
    pub passed: Vec<usize>,
    /// Where it is.
    pub status: ChangeStatus,
}

impl StagedChange {
    /// The gates still to pass.
    pub fn open_gates(&self) -> Vec<usize> {
        let count = self.held.as_ref().map_or(0, |h| h.gates.len());
        (0..count).filter(|g| !self.passed.contains(g)).collect()
    }

    fn pending(&self) -> Result<(), StagedChangeError> {
        self.held.as_ref().ok_or(StagedChangeError::NotFound)?;
        match self.status {
            ChangeStatus::Pending => Ok(()),
            _ => Err(StagedChangeError::NotPending),
        }
    }
}

impl Aggregate for StagedChange {
    const TYPE: &'static str = "custom_table_staged_change";
    type Command = StagedChangeCommand;
    type Event = StagedChangeEvent;
    type Error = StagedChangeError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _: &(),
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        match command {
            StagedChangeCommand::Hold(held) => {
                if self.held.is_none() {
                    sink.write(StagedChangeEvent::ChangeHeld(held), self).await;
                }
            }
            StagedChangeCommand::Approve {
                by,
                gates,
                signature,
                applied,
            } => {
                self.pending()?;
                let event = StagedChangeEvent::ChangeApproved {
                    by,
                    gates,
                    signature,
                };
                sink.write(event, self).await;
                if applied {
                    sink.write(StagedChangeEvent::ChangeApplied, self).await;
                }
            }
            StagedChangeCommand::Reject { by, reason } => {
                self.pending()?;
                sink.write(StagedChangeEvent::ChangeRejected { by, reason }, self)
                    .await;
            }
        }
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        match event {
            StagedChangeEvent::ChangeHeld(held) => self.held = Some(held),
            StagedChangeEvent::ChangeApproved { gates, .. } => {
                self.passed.extend(gates);
                self.passed.sort();
                self.passed.dedup();
            }
            StagedChangeEvent::ChangeApplied => self.status = ChangeStatus::Applied,
            StagedChangeEvent::ChangeRejected { .. } => self.status = ChangeStatus::Rejected,
        }
    }
}

impl AggregateExt for StagedChange {}
