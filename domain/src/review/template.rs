//! The ReviewTemplate aggregate: the gates a held write passes before it applies.
//! Each gate is decided by one review group (`mode: any`: one member's approval
//! passes it); `require_signature` makes every approval carry a signature.

use super::{MAX_GATES, ReviewError, check_name};
use crate::AggregateExt;
use cqrs_es::event_sink::EventSink;
use cqrs_es::{Aggregate, DomainEvent};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Who decides a gate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GateCondition {
    /// Always `group`.
    #[serde(rename = "type")]
    pub condition_type: String,
    /// The review group.
    pub group_id: Uuid,
    /// Always `any`: one member's approval passes the gate.
    pub mode: String,
}

/// One gate of a template.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gate {
    /// Name.
    pub name: String,
    /// Who decides it.
    pub condition: GateCondition,
}

/// A template as created.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReviewTemplateTerms {
    /// The template.
    pub template_id: Uuid,
    /// Its company.
    pub company_id: Uuid,
    /// Name.
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// 1..[`MAX_GATES`] gates; all must pass.
    pub gates: Vec<Gate>,
    /// Whether an approval must carry a signature.
    pub require_signature: bool,
    /// Who created it.
    pub created_by: String,
}

impl ReviewTemplateTerms {
    /// The terms checked (the groups' existence is the route's to check).
    pub fn check(mut self) -> Result<Self, ReviewError> {
        self.name = check_name("name", &self.name)?;
        if self.gates.is_empty() || self.gates.len() > MAX_GATES {
            return Err(ReviewError::Invalid(format!(
                "gates must hold 1..{MAX_GATES} gates"
            )));
        }
        for gate in &mut self.gates {
            gate.name = check_name("gate name", &gate.name)?;
            if gate.condition.condition_type != "group" || gate.condition.mode != "any" {
                return Err(ReviewError::Invalid(format!(
                    "gate '{}': condition must be {{type: group, group_id, mode: any}}",
                    gate.name
                )));
            }
        }
        Ok(self)
    }
}

/// Commands of [`ReviewTemplate`].
#[derive(Debug, Clone, PartialEq)]
pub enum ReviewTemplateCommand {
    /// Creates the template (nothing happens when it exists).
    Create(Box<ReviewTemplateTerms>),
}

/// Events of [`ReviewTemplate`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ReviewTemplateEvent {
    /// A template was created.
    ReviewTemplateCreated(Box<ReviewTemplateTerms>),
}

impl DomainEvent for ReviewTemplateEvent {
    fn event_type(&self) -> String {
        "ReviewTemplateCreated".into()
    }
    fn event_version(&self) -> String {
        "1".into()
    }
}

/// A review template.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReviewTemplate {
    /// What it was created with.
    pub terms: Option<Box<ReviewTemplateTerms>>,
}

impl Aggregate for ReviewTemplate {
    const TYPE: &'static str = "review_template";
    type Command = ReviewTemplateCommand;
    type Event = ReviewTemplateEvent;
    type Error = ReviewError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _: &(),
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        let ReviewTemplateCommand::Create(terms) = command;
        if self.terms.is_none() {
            let terms = Box::new(terms.check()?);
            sink.write(ReviewTemplateEvent::ReviewTemplateCreated(terms), self)
                .await;
        }
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        let ReviewTemplateEvent::ReviewTemplateCreated(terms) = event;
        self.terms = Some(terms);
    }
}

impl AggregateExt for ReviewTemplate {}
