//! The user aggregate: username and integer role.

use super::{DirectoryError, same_company};
use crate::AggregateExt;
use cqrs_es::event_sink::EventSink;
use cqrs_es::{Aggregate, DomainEvent};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Commands of [`User`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UserCommand {
    /// Registers the user or brings name and role up to date.
    Define {
        /// The user's id.
        user_id: Uuid,
        /// Its company.
        company_id: Uuid,
        /// Login name.
        username: String,
        /// Integer role; 3 or higher is a company manager.
        role: i32,
    },
}

/// Events of [`User`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum UserEvent {
    /// A user exists.
    UserRegistered {
        /// The user's id.
        user_id: Uuid,
        /// Its company.
        company_id: Uuid,
        /// Login name.
        username: String,
        /// Integer role.
        role: i32,
    },
    /// The login name changed.
    UserRenamed {
        /// The new name.
        username: String,
    },
    /// The role changed.
    UserRoleChanged {
        /// The new role.
        role: i32,
    },
}

impl DomainEvent for UserEvent {
    fn event_type(&self) -> String {
        match self {
            Self::UserRegistered { .. } => "UserRegistered",
            Self::UserRenamed { .. } => "UserRenamed",
            Self::UserRoleChanged { .. } => "UserRoleChanged",
        }
        .into()
    }
    fn event_version(&self) -> String {
        "1".into()
    }
}

/// A person with a login.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    /// Company, once registered.
    pub company_id: Option<Uuid>,
    /// Login name.
    pub username: String,
    /// Integer role.
    pub role: i32,
}

impl Aggregate for User {
    const TYPE: &'static str = "user";
    type Command = UserCommand;
    type Event = UserEvent;
    type Error = DirectoryError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _: &(),
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        let UserCommand::Define {
            user_id,
            company_id,
            username,
            role,
        } = command;
        same_company(self.company_id, company_id, "user")?;
        if self.company_id.is_none() {
            let event = UserEvent::UserRegistered {
                user_id,
                company_id,
                username,
                role,
            };
            sink.write(event, self).await;
            return Ok(());
        }
        if self.username != username {
            sink.write(UserEvent::UserRenamed { username }, self).await;
        }
        if self.role != role {
            sink.write(UserEvent::UserRoleChanged { role }, self).await;
        }
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        match event {
            UserEvent::UserRegistered {
                company_id,
                username,
                role,
                ..
            } => {
                self.company_id = Some(company_id);
                self.username = username;
                self.role = role;
            }
            UserEvent::UserRenamed { username } => self.username = username,
            UserEvent::UserRoleChanged { role } => self.role = role,
        }
    }
}

impl AggregateExt for User {}

#[cfg(test)]
mod tests {
    use super::*;
    use cqrs_es::test::TestFramework;

    #[test]
    fn role_change_is_recorded() {
        let (user_id, company_id) = (Uuid::from_u128(5), Uuid::from_u128(1));
        TestFramework::<User>::with(())
            .given(vec![UserEvent::UserRegistered {
                user_id,
                company_id,
                username: "u".into(),
                role: 1,
            }])
            .when(UserCommand::Define {
                user_id,
                company_id,
                username: "u".into(),
                role: 3,
            })
            .then_expect_events(vec![UserEvent::UserRoleChanged { role: 3 }]);
    }
}
