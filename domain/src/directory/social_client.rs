//! The social media client aggregate: an external messaging channel's identity.

use super::{DirectoryError, same_company};
use crate::AggregateExt;
use cqrs_es::event_sink::EventSink;
use cqrs_es::{Aggregate, DomainEvent};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Commands of [`SocialClient`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SocialClientCommand {
    /// Registers the client or brings its platform identity up to date.
    Define {
        /// The client's id.
        client_id: Uuid,
        /// Its company.
        company_id: Uuid,
        /// Messaging platform, e.g. `line`.
        platform: String,
        /// The platform's id for the person.
        platform_user_id: String,
        /// Display name.
        display_name: String,
    },
}

/// Events of [`SocialClient`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum SocialClientEvent {
    /// A client exists.
    SocialClientRegistered {
        /// The client's id.
        client_id: Uuid,
        /// Its company.
        company_id: Uuid,
        /// Messaging platform.
        platform: String,
        /// The platform's id for the person.
        platform_user_id: String,
        /// Display name.
        display_name: String,
    },
    /// Platform identity or display name changed.
    SocialClientUpdated {
        /// Messaging platform.
        platform: String,
        /// The platform's id for the person.
        platform_user_id: String,
        /// Display name.
        display_name: String,
    },
}

impl DomainEvent for SocialClientEvent {
    fn event_type(&self) -> String {
        match self {
            Self::SocialClientRegistered { .. } => "SocialClientRegistered",
            Self::SocialClientUpdated { .. } => "SocialClientUpdated",
        }
        .into()
    }
    fn event_version(&self) -> String {
        "1".into()
    }
}

/// An external messaging channel's client.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SocialClient {
    /// Company, once registered.
    pub company_id: Option<Uuid>,
    /// Messaging platform.
    pub platform: String,
    /// The platform's id for the person.
    pub platform_user_id: String,
    /// Display name.
    pub display_name: String,
}

impl Aggregate for SocialClient {
    const TYPE: &'static str = "social_client";
    type Command = SocialClientCommand;
    type Event = SocialClientEvent;
    type Error = DirectoryError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _: &(),
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        let SocialClientCommand::Define {
            client_id,
            company_id,
            platform,
            platform_user_id,
            display_name,
        } = command;
        same_company(self.company_id, company_id, "social client")?;
        if self.company_id.is_none() {
            let event = SocialClientEvent::SocialClientRegistered {
                client_id,
                company_id,
                platform,
                platform_user_id,
                display_name,
            };
            sink.write(event, self).await;
        } else if (&self.platform, &self.platform_user_id, &self.display_name)
            != (&platform, &platform_user_id, &display_name)
        {
            let event = SocialClientEvent::SocialClientUpdated {
                platform,
                platform_user_id,
                display_name,
            };
            sink.write(event, self).await;
        }
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        match event {
            SocialClientEvent::SocialClientRegistered {
                company_id,
                platform,
                platform_user_id,
                display_name,
                ..
            } => {
                self.company_id = Some(company_id);
                self.platform = platform;
                self.platform_user_id = platform_user_id;
                self.display_name = display_name;
            }
            SocialClientEvent::SocialClientUpdated {
                platform,
                platform_user_id,
                display_name,
            } => {
                self.platform = platform;
                self.platform_user_id = platform_user_id;
                self.display_name = display_name;
            }
        }
    }
}

impl AggregateExt for SocialClient {}
