//! The environment aggregate: an owner's named container environment, whose
//! versions are built from uploaded contexts.

use crate::AggregateExt;
use crate::error::{Code, SpecError};
use cqrs_es::event_sink::EventSink;
use cqrs_es::{Aggregate, DomainEvent};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Who owns an environment (spec `SandboxEnvironmentOwnerKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OwnerKind {
    /// Operator-owned, readable by every company, no tenant write path.
    SystemCurated,
    /// Owned by a company or one of its departments.
    Company,
}

/// The scope a tenant resource is owned by (`SandboxOwnerScope` without chatroom).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OwnerScope {
    /// The whole company.
    Company,
    /// One department.
    Department,
}

impl OwnerScope {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Company => "company",
            Self::Department => "department",
        }
    }
}

/// Lifecycle of environments, tasks and shares.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Lifecycle {
    /// In use.
    #[default]
    Active,
    /// Retired.
    Archived,
}

/// The facts an environment is created with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvironmentCreated {
    /// Its id.
    pub environment_id: Uuid,
    /// The owning company; `None` for curated environments.
    pub company_id: Option<Uuid>,
    /// Curated or company-owned.
    pub owner_kind: OwnerKind,
    /// Company or department.
    pub owner_scope: OwnerScope,
    /// The company or department id; `None` for curated environments.
    pub owner_id: Option<Uuid>,
    /// Name, 1..256 characters.
    pub name: String,
    /// Description, up to 2048 characters.
    pub description: String,
}

/// Commands of [`Environment`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvironmentCommand {
    /// Creates the environment.
    Create(EnvironmentCreated),
    /// Changes name or description.
    Update {
        /// New name.
        name: Option<String>,
        /// New description.
        description: Option<String>,
    },
    /// Retires the environment.
    Archive,
    /// Allocates the next version number to a new version.
    AllocateVersion {
        /// The new version's id.
        version_id: Uuid,
    },
}

/// Events of [`Environment`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum EnvironmentEvent {
    /// The environment exists.
    EnvironmentCreated(EnvironmentCreated),
    /// Name or description changed.
    EnvironmentUpdated {
        /// The name after the change.
        name: String,
        /// The description after the change.
        description: String,
    },
    /// The environment is archived.
    EnvironmentArchived,
    /// A version number was given to a new version.
    VersionNumberAllocated {
        /// The version.
        version_id: Uuid,
        /// Its number, from 1.
        version_number: i64,
    },
}

impl DomainEvent for EnvironmentEvent {
    fn event_type(&self) -> String {
        match self {
            Self::EnvironmentCreated(_) => "EnvironmentCreated",
            Self::EnvironmentUpdated { .. } => "EnvironmentUpdated",
            Self::EnvironmentArchived => "EnvironmentArchived",
            Self::VersionNumberAllocated { .. } => "VersionNumberAllocated",
        }
        .into()
    }
    fn event_version(&self) -> String {
        "1".into()
    }
}

/// The number `AllocateVersion` gave the new version, found among the events it
/// committed: how every creator of a version (the tenant route and curated
/// publishing) learns the number to create it under.
pub fn allocated_number(events: &[EnvironmentEvent]) -> Option<i64> {
    events.iter().find_map(|e| match e {
        EnvironmentEvent::VersionNumberAllocated { version_number, .. } => Some(*version_number),
        _ => None,
    })
}

/// Refusals of environment commands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvironmentError {
    /// No such environment.
    #[error("environment not found")]
    NotFound,
    /// The id is taken.
    #[error("the environment already exists")]
    AlreadyExists,
    /// Changes to an archived environment.
    #[error("the environment is archived")]
    Archived,
    /// A second archive.
    #[error("the environment is already archived")]
    AlreadyArchived,
}

impl SpecError for EnvironmentError {
    fn code(&self) -> Code {
        match self {
            Self::NotFound => Code::NotFound,
            Self::AlreadyExists => Code::AlreadyExists,
            Self::Archived => Code::EnvironmentArchived,
            Self::AlreadyArchived => Code::AlreadyArchived,
        }
    }
}

/// An environment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Environment {
    /// Creation facts (name and description kept current).
    pub created: Option<EnvironmentCreated>,
    /// Lifecycle.
    pub lifecycle: Lifecycle,
    /// Versions allocated so far.
    pub version_count: i64,
}

impl Aggregate for Environment {
    const TYPE: &'static str = "environment";
    type Command = EnvironmentCommand;
    type Event = EnvironmentEvent;
    type Error = EnvironmentError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _: &(),
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        if let EnvironmentCommand::Create(created) = command {
            if self.created.is_some() {
                return Err(EnvironmentError::AlreadyExists);
            }
            sink.write(EnvironmentEvent::EnvironmentCreated(created), self)
                .await;
            return Ok(());
        }
        let current = self.created.clone().ok_or(EnvironmentError::NotFound)?;
        match command {
            EnvironmentCommand::Create(_) => unreachable!("handled above"),
            EnvironmentCommand::Update { name, description } => {
                if self.lifecycle == Lifecycle::Archived {
                    return Err(EnvironmentError::Archived);
                }
                let name = name.unwrap_or(current.name.clone());
                let description = description.unwrap_or(current.description.clone());
                if (&name, &description) != (&current.name, &current.description) {
                    sink.write(
                        EnvironmentEvent::EnvironmentUpdated { name, description },
                        self,
                    )
                    .await;
                }
            }
            EnvironmentCommand::Archive => {
                if self.lifecycle == Lifecycle::Archived {
                    return Err(EnvironmentError::AlreadyArchived);
                }
                sink.write(EnvironmentEvent::EnvironmentArchived, self)
                    .await;
            }
            EnvironmentCommand::AllocateVersion { version_id } => {
                if self.lifecycle == Lifecycle::Archived {
                    return Err(EnvironmentError::Archived);
                }
                let version_number = self.version_count + 1;
                sink.write(
                    EnvironmentEvent::VersionNumberAllocated {
                        version_id,
                        version_number,
                    },
                    self,
                )
                .await;
            }
        }
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        match event {
            EnvironmentEvent::EnvironmentCreated(created) => self.created = Some(created),
            EnvironmentEvent::EnvironmentUpdated { name, description } => {
                if let Some(created) = &mut self.created {
                    created.name = name;
                    created.description = description;
                }
            }
            EnvironmentEvent::EnvironmentArchived => self.lifecycle = Lifecycle::Archived,
            EnvironmentEvent::VersionNumberAllocated { version_number, .. } => {
                self.version_count = version_number
            }
        }
    }
}

impl AggregateExt for Environment {}

#[cfg(test)]
mod tests {
    use super::*;
    use cqrs_es::test::TestFramework;

    fn created() -> EnvironmentCreated {
        EnvironmentCreated {
            environment_id: Uuid::from_u128(1),
            company_id: Some(Uuid::from_u128(2)),
            owner_kind: OwnerKind::Company,
            owner_scope: OwnerScope::Company,
            owner_id: Some(Uuid::from_u128(2)),
            name: "py".into(),
            description: String::new(),
        }
    }

    #[test]
    fn versions_are_numbered_from_one() {
        TestFramework::<Environment>::with(())
            .given(vec![
                EnvironmentEvent::EnvironmentCreated(created()),
                EnvironmentEvent::VersionNumberAllocated {
                    version_id: Uuid::from_u128(5),
                    version_number: 1,
                },
            ])
            .when(EnvironmentCommand::AllocateVersion {
                version_id: Uuid::from_u128(6),
            })
            .then_expect_events(vec![EnvironmentEvent::VersionNumberAllocated {
                version_id: Uuid::from_u128(6),
                version_number: 2,
            }]);
    }

    #[test]
    fn archived_environments_refuse_changes_and_a_second_archive() {
        let given = vec![
            EnvironmentEvent::EnvironmentCreated(created()),
            EnvironmentEvent::EnvironmentArchived,
        ];
        TestFramework::<Environment>::with(())
            .given(given.clone())
            .when(EnvironmentCommand::Archive)
            .then_expect_error(EnvironmentError::AlreadyArchived);
        TestFramework::<Environment>::with(())
            .given(given)
            .when(EnvironmentCommand::Update {
                name: Some("x".into()),
                description: None,
            })
            .then_expect_error(EnvironmentError::Archived);
    }

    #[test]
    fn unknown_environments_are_not_found() {
        TestFramework::<Environment>::with(())
            .given_no_previous_events()
            .when(EnvironmentCommand::Archive)
            .then_expect_error(EnvironmentError::NotFound);
    }
}
