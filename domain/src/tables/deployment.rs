//! The Deployment aggregate: what a declarative deployment (`.../tables/iac/apply`)
//! manages in one scope under one `system` name, by the document's `ref`s.
//!
//! A re-apply finds its resources by these rows (a renamed table stays the same
//! table), deletes the managed resources its document no longer holds, and
//! `GET .../tables/iac/state?system=` lists them. Its event is appended in the same
//! statement as the table events of the apply, so the state never disagrees with
//! the tables.

use super::TableError;
use super::scope::ScopeRef;
use super::trigger::is_trigger_id;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// One managed resource.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct DeployedResource {
    /// Row kind of the document (`table`, `column`, `view`, ...).
    pub resource_type: String,
    /// The document's ref.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The resource's id: a table or view id, a column's internal key, a trigger's
    /// or rule's id, a grant's subject.
    pub resource_id: String,
    /// The table it belongs to (the table itself for a `table` row).
    pub table_id: Uuid,
}

/// Commands of [`Deployment`].
#[derive(Debug, Clone, PartialEq)]
pub enum DeploymentCommand {
    /// Records what an apply left managed (nothing happens when it is unchanged).
    Record {
        /// The company.
        company_id: Uuid,
        /// The scope.
        scope: ScopeRef,
        /// The system name.
        system: String,
        /// Every managed resource.
        resources: Vec<DeployedResource>,
    },
}

/// Events of [`Deployment`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum DeploymentEvent {
    /// An apply left these resources managed (the whole set).
    DeploymentApplied {
        /// The company.
        company_id: Uuid,
        /// The scope.
        scope: ScopeRef,
        /// The system name.
        system: String,
        /// Every managed resource, sorted.
        resources: Vec<DeployedResource>,
    },
}

impl cqrs_es::DomainEvent for DeploymentEvent {
    fn event_type(&self) -> String {
        "DeploymentApplied".into()
    }
    fn event_version(&self) -> String {
        "1".into()
    }
}

/// The resources one system manages in one scope.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Deployment {
    /// Every managed resource, sorted.
    pub resources: Vec<DeployedResource>,
}

/// The aggregate id of a system's deployment in a scope.
pub fn deployment_id(scope: ScopeRef, system: &str) -> String {
    format!("{}:{}:{system}", scope.kind.as_str(), scope.id)
}

/// Whether a system name is valid: like a trigger id, `^[a-z0-9][a-z0-9_-]{0,63}$`.
pub fn is_system_name(system: &str) -> bool {
    is_trigger_id(system)
}

impl Deployment {
    /// The ref of a managed resource of a table (the system tag's table is nil).
    pub fn reference_of(
        &self,
        resource_type: &str,
        table_id: Uuid,
        resource_id: &str,
    ) -> Option<&str> {
        self.resources
            .iter()
            .find(|r| {
                r.resource_type == resource_type
                    && r.table_id == table_id
                    && r.resource_id == resource_id
            })
            .map(|r| r.reference.as_str())
    }

    /// The managed resource of a kind with a ref.
    pub fn find(&self, resource_type: &str, reference: &str) -> Option<&DeployedResource> {
        self.resources
            .iter()
            .find(|r| r.resource_type == resource_type && r.reference == reference)
    }
}

impl cqrs_es::Aggregate for Deployment {
    const TYPE: &'static str = "table_deployment";
    type Command = DeploymentCommand;
    type Event = DeploymentEvent;
    type Error = TableError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _: &(),
        sink: &cqrs_es::event_sink::EventSink<Self>,
    ) -> Result<(), Self::Error> {
        let DeploymentCommand::Record {
            company_id,
            scope,
            system,
            mut resources,
        } = command;
        if !is_system_name(&system) {
            return Err(TableError::TableConfig(
                "system must match ^[a-z0-9][a-z0-9_-]{0,63}$".into(),
            ));
        }
        resources.sort();
        resources.dedup();
        if resources != self.resources {
            sink.write(
                DeploymentEvent::DeploymentApplied {
                    company_id,
                    scope,
                    system,
                    resources,
                },
                self,
            )
            .await;
        }
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        let DeploymentEvent::DeploymentApplied { resources, .. } = event;
        self.resources = resources;
    }
}

impl crate::AggregateExt for Deployment {}
