//! The ReviewGroup aggregate: named company users who decide a template's gate.

use super::{MAX_MEMBERS, ReviewError, check_name};
use crate::AggregateExt;
use cqrs_es::event_sink::EventSink;
use cqrs_es::{Aggregate, DomainEvent};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// A group as created.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReviewGroupTerms {
    /// The group.
    pub group_id: Uuid,
    /// Its company.
    pub company_id: Uuid,
    /// Name.
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// Users of the company (checked by the route), without repeats.
    pub member_ids: Vec<Uuid>,
    /// Who created it.
    pub created_by: String,
}

impl ReviewGroupTerms {
    /// The terms checked: a name, 1..[`MAX_MEMBERS`] members, none twice.
    pub fn check(mut self) -> Result<Self, ReviewError> {
        self.name = check_name("name", &self.name)?;
        if self.member_ids.is_empty() || self.member_ids.len() > MAX_MEMBERS {
            return Err(ReviewError::Invalid(format!(
                "member_ids must name 1..{MAX_MEMBERS} users"
            )));
        }
        let mut seen = self.member_ids.clone();
        seen.sort();
        seen.dedup();
        if seen.len() != self.member_ids.len() {
            return Err(ReviewError::Invalid("member_ids names a user twice".into()));
        }
        Ok(self)
    }
}

/// Commands of [`ReviewGroup`].
#[derive(Debug, Clone, PartialEq)]
pub enum ReviewGroupCommand {
    /// Creates the group (nothing happens when it exists).
    Create(Box<ReviewGroupTerms>),
}

/// Events of [`ReviewGroup`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ReviewGroupEvent {
    /// A group was created.
    ReviewGroupCreated(Box<ReviewGroupTerms>),
}

impl DomainEvent for ReviewGroupEvent {
    fn event_type(&self) -> String {
        "ReviewGroupCreated".into()
    }
    fn event_version(&self) -> String {
        "1".into()
    }
}

/// A review group.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReviewGroup {
    /// What it was created with.
    pub terms: Option<Box<ReviewGroupTerms>>,
}

impl Aggregate for ReviewGroup {
    const TYPE: &'static str = "review_group";
    type Command = ReviewGroupCommand;
    type Event = ReviewGroupEvent;
    type Error = ReviewError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _: &(),
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        let ReviewGroupCommand::Create(terms) = command;
        if self.terms.is_none() {
            let terms = Box::new(terms.check()?);
            sink.write(ReviewGroupEvent::ReviewGroupCreated(terms), self)
                .await;
        }
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        let ReviewGroupEvent::ReviewGroupCreated(terms) = event;
        self.terms = Some(terms);
    }
}

impl AggregateExt for ReviewGroup {}
