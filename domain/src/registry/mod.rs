//! Every aggregate of the service and every event type it records, in one registry.
//!
//! Tools that must cover every event type read it: the event catalogue check
//! (`docs/events.md`), the recorded-log coverage of the replay tests and the secrets
//! check. An aggregate is registered once, in [`aggregates`], with one representative
//! example of each of its events ([`Catalogued`]); its event types themselves come
//! from the event enum ([`variant_names`]), so a new variant without an example, a
//! catalogue entry or a recorded log fails a test rather than passing unnoticed.

mod agent_examples;
mod environment_examples;
mod examples;
mod review_examples;
mod run_examples;
mod secret_examples;
mod sharing_examples;
mod table_examples;
mod task_examples;
mod variants;

pub use variants::variant_names;

use cqrs_es::{Aggregate, DomainEvent};
use serde_json::Value;

/// An aggregate whose events the registry can show.
pub trait Catalogued: Aggregate {
    /// One representative event of each event type (realistic values, no secrets).
    fn examples() -> Vec<Self::Event>;
}

/// One example event as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Example {
    /// Event type.
    pub event_type: String,
    /// Its current version.
    pub event_version: String,
    /// The stored payload.
    pub payload: Value,
}

/// One registered aggregate.
#[derive(Debug, Clone)]
pub struct AggregateEntry {
    /// `Aggregate::TYPE`.
    pub aggregate_type: &'static str,
    /// Every event type of the aggregate (the event enum's variants).
    pub event_types: Vec<&'static str>,
    /// One example per event type.
    pub examples: Vec<Example>,
}

/// The entry of one aggregate.
pub fn entry<A: Catalogued>() -> AggregateEntry {
    AggregateEntry {
        aggregate_type: A::TYPE,
        event_types: variant_names::<A::Event>(),
        examples: A::examples()
            .into_iter()
            .map(|event| Example {
                event_type: event.event_type(),
                event_version: event.event_version(),
                payload: serde_json::to_value(&event).unwrap_or(Value::Null),
            })
            .collect(),
    }
}

/// Every aggregate of the service. A new aggregate is added here (and gets its
/// examples in `examples.rs`).
pub fn aggregates() -> Vec<AggregateEntry> {
    use crate::directory::{api_key, chatroom, company, department, social_client, user};
    vec![
        entry::<company::Company>(),
        entry::<department::Department>(),
        entry::<chatroom::Chatroom>(),
        entry::<user::User>(),
        entry::<api_key::ApiKey>(),
        entry::<social_client::SocialClient>(),
        entry::<crate::settings::CompanySettings>(),
        entry::<crate::switch::SandboxSwitch>(),
        entry::<crate::build_fence::BuildFence>(),
        entry::<crate::runner_release::RunnerRelease>(),
        entry::<crate::pricing::Pricing>(),
        entry::<crate::notifications::NotificationInbox>(),
        entry::<crate::environments::environment::Environment>(),
        entry::<crate::environments::version::EnvironmentVersion>(),
        entry::<crate::environments::upload::ContextUpload>(),
        entry::<crate::objects::OwnedObject>(),
        entry::<crate::tables::table::CustomTable>(),
        entry::<crate::tables::record::Record>(),
        entry::<crate::tables::public_token::PublicReadToken>(),
        entry::<crate::tables::callback_token::CallbackToken>(),
        entry::<crate::tables::callback_delivery::CallbackDelivery>(),
        entry::<crate::tables::command::TableOperation>(),
        entry::<crate::tables::agent_delivery::AgentDelivery>(),
        entry::<crate::tables::trigger::run::TriggerRun>(),
        entry::<crate::tables::staged_change::StagedChange>(),
        entry::<crate::tables::deployment::Deployment>(),
        entry::<crate::tables::tag::TableTag>(),
        entry::<crate::tables::import::ImportSession>(),
        entry::<crate::review::ReviewGroup>(),
        entry::<crate::review::ReviewTemplate>(),
        entry::<crate::tasks::task::Task>(),
        entry::<crate::tasks::version::TaskVersion>(),
        entry::<crate::sharing::share::Share>(),
        entry::<crate::sharing::binding::Binding>(),
        entry::<crate::runs::run::Run>(),
        entry::<crate::runs::link::PublicLink>(),
        entry::<crate::secrets::binding::SecretBinding>(),
        entry::<crate::secrets::operation::SecretOperation>(),
        entry::<crate::secrets::approval::SecretApproval>(),
        entry::<crate::agent::proposal::AgentProposal>(),
    ]
}

#[cfg(test)]
mod tests {
    use super::aggregates;

    #[test]
    fn every_event_type_has_exactly_one_example_named_like_its_variant() {
        for aggregate in aggregates() {
            let mut examples: Vec<&str> = aggregate
                .examples
                .iter()
                .map(|e| e.event_type.as_str())
                .collect();
            examples.sort();
            let mut variants = aggregate.event_types.clone();
            variants.sort();
            assert_eq!(examples, variants, "{}", aggregate.aggregate_type);
            for example in &aggregate.examples {
                let tag = match &example.payload {
                    serde_json::Value::String(unit) => unit.clone(),
                    serde_json::Value::Object(map) => {
                        map.keys().next().cloned().unwrap_or_default()
                    }
                    other => panic!("unexpected payload {other}"),
                };
                assert_eq!(tag, example.event_type, "{}", aggregate.aggregate_type);
            }
        }
    }
}
