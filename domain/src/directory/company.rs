//! The company (tenant) aggregate.

use super::{DirectoryError, same_company};
use crate::AggregateExt;
use cqrs_es::event_sink::EventSink;
use cqrs_es::{Aggregate, DomainEvent};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Commands of [`Company`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompanyCommand {
    /// Registers the company or renames it.
    Define {
        /// The company's id.
        company_id: Uuid,
        /// Its display name.
        name: String,
    },
}

/// Events of [`Company`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum CompanyEvent {
    /// A new tenant exists.
    CompanyRegistered {
        /// The company's id.
        company_id: Uuid,
        /// Its display name.
        name: String,
    },
    /// The tenant's display name changed.
    CompanyRenamed {
        /// The new name.
        name: String,
    },
}

impl DomainEvent for CompanyEvent {
    fn event_type(&self) -> String {
        match self {
            Self::CompanyRegistered { .. } => "CompanyRegistered",
            Self::CompanyRenamed { .. } => "CompanyRenamed",
        }
        .into()
    }
    fn event_version(&self) -> String {
        "1".into()
    }
}

/// A tenant.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Company {
    /// Set once registered.
    pub id: Option<Uuid>,
    /// Display name.
    pub name: String,
}

impl Aggregate for Company {
    const TYPE: &'static str = "company";
    type Command = CompanyCommand;
    type Event = CompanyEvent;
    type Error = DirectoryError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _: &(),
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        match command {
            CompanyCommand::Define { company_id, name } => {
                same_company(self.id, company_id, "company")?;
                if self.id.is_none() {
                    sink.write(CompanyEvent::CompanyRegistered { company_id, name }, self)
                        .await;
                } else if self.name != name {
                    sink.write(CompanyEvent::CompanyRenamed { name }, self)
                        .await;
                }
                Ok(())
            }
        }
    }

    fn apply(&mut self, event: Self::Event) {
        match event {
            CompanyEvent::CompanyRegistered { company_id, name } => {
                self.id = Some(company_id);
                self.name = name;
            }
            CompanyEvent::CompanyRenamed { name } => self.name = name,
        }
    }
}

impl AggregateExt for Company {}

#[cfg(test)]
mod tests {
    use super::*;
    use cqrs_es::test::TestFramework;

    fn define(name: &str) -> CompanyCommand {
        CompanyCommand::Define {
            company_id: Uuid::nil(),
            name: name.into(),
        }
    }

    #[test]
    fn define_registers_then_renames_then_is_idempotent() {
        let registered = CompanyEvent::CompanyRegistered {
            company_id: Uuid::nil(),
            name: "Acme".into(),
        };
        TestFramework::<Company>::with(())
            .given_no_previous_events()
            .when(define("Acme"))
            .then_expect_events(vec![registered.clone()]);
        TestFramework::<Company>::with(())
            .given(vec![registered.clone()])
            .when(define("Acme"))
            .then_expect_events(vec![]);
        TestFramework::<Company>::with(())
            .given(vec![registered])
            .when(define("Acme Corp"))
            .then_expect_events(vec![CompanyEvent::CompanyRenamed {
                name: "Acme Corp".into(),
            }]);
    }
}
