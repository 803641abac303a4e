//! The Task aggregate: a catalog task's identity, owner and lifecycle, and the
//! numbering of its versions.

use crate::AggregateExt;
use crate::environments::environment::{Lifecycle, OwnerScope};
use crate::error::{Code, SpecError};
use cqrs_es::event_sink::EventSink;
use cqrs_es::{Aggregate, DomainEvent};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The facts a task is created with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskCreated {
    /// Its id.
    pub task_id: Uuid,
    /// The owning company.
    pub company_id: Uuid,
    /// Company or department.
    pub owner_scope: OwnerScope,
    /// The company or department id.
    pub owner_id: Uuid,
    /// Name, 1..256 characters.
    pub name: String,
    /// Description, up to 2048 characters.
    pub description: String,
    /// Legacy flag; it does not put the task in the agent catalog.
    pub agent_enabled: bool,
    /// A Quick Run parent task: never listed.
    pub hidden: bool,
}

/// Commands of [`Task`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskCommand {
    /// Creates the task.
    Create(TaskCreated),
    /// Changes name, description or the legacy flag.
    Update {
        /// New name.
        name: Option<String>,
        /// New description.
        description: Option<String>,
        /// New flag.
        agent_enabled: Option<bool>,
    },
    /// Retires the task (its versions are archived by the caller).
    Archive,
    /// Gives the next version number to a new version.
    AllocateVersion {
        /// The new version.
        version_id: Uuid,
    },
}

/// Events of [`Task`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum TaskEvent {
    /// The task exists.
    TaskCreated(TaskCreated),
    /// Name, description or flag changed.
    TaskUpdated {
        /// Name after the change.
        name: String,
        /// Description after the change.
        description: String,
        /// Flag after the change.
        agent_enabled: bool,
    },
    /// The task is archived.
    TaskArchived,
    /// A version number was given to a new version.
    TaskVersionNumberAllocated {
        /// The version.
        version_id: Uuid,
        /// Its number, from 1.
        version_number: i64,
    },
}

impl DomainEvent for TaskEvent {
    fn event_type(&self) -> String {
        match self {
            Self::TaskCreated(_) => "TaskCreated",
            Self::TaskUpdated { .. } => "TaskUpdated",
            Self::TaskArchived => "TaskArchived",
            Self::TaskVersionNumberAllocated { .. } => "TaskVersionNumberAllocated",
        }
        .into()
    }
    fn event_version(&self) -> String {
        "1".into()
    }
}

/// Refusals of task commands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TaskError {
    /// No such task.
    #[error("task not found")]
    NotFound,
    /// The id is taken.
    #[error("the task already exists")]
    AlreadyExists,
    /// A change to an archived task.
    #[error("the task is archived")]
    Archived,
    /// A second archive.
    #[error("the task is already archived")]
    AlreadyArchived,
}

impl SpecError for TaskError {
    fn code(&self) -> Code {
        match self {
            Self::NotFound => Code::NotFound,
            Self::AlreadyExists => Code::AlreadyExists,
            Self::Archived => Code::TaskArchived,
            Self::AlreadyArchived => Code::AlreadyArchived,
        }
    }
}

/// A catalog task.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    /// Creation facts, kept current.
    pub created: Option<TaskCreated>,
    /// Lifecycle.
    pub lifecycle: Lifecycle,
    /// Versions allocated so far.
    pub version_count: i64,
    /// The version allocated last: allocating it again changes nothing, so two
    /// requests racing to allocate one version id allocate it once.
    #[serde(default)]
    pub last_version_id: Option<Uuid>,
}

impl Aggregate for Task {
    const TYPE: &'static str = "task";
    type Command = TaskCommand;
    type Event = TaskEvent;
    type Error = TaskError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _: &(),
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        if let TaskCommand::Create(created) = command {
            if self.created.is_some() {
                return Err(TaskError::AlreadyExists);
            }
            sink.write(TaskEvent::TaskCreated(created), self).await;
            return Ok(());
        }
        let current = self.created.clone().ok_or(TaskError::NotFound)?;
        let archived = self.lifecycle == Lifecycle::Archived;
        match command {
            TaskCommand::Create(_) => unreachable!("handled above"),
            TaskCommand::Update {
                name,
                description,
                agent_enabled,
            } => {
                if archived {
                    return Err(TaskError::Archived);
                }
                let name = name.unwrap_or(current.name.clone());
                let description = description.unwrap_or(current.description.clone());
                let agent_enabled = agent_enabled.unwrap_or(current.agent_enabled);
                if (&name, &description, agent_enabled)
                    != (&current.name, &current.description, current.agent_enabled)
                {
                    let event = TaskEvent::TaskUpdated {
                        name,
                        description,
                        agent_enabled,
                    };
                    sink.write(event, self).await;
                }
            }
            TaskCommand::Archive => {
                if archived {
                    return Err(TaskError::AlreadyArchived);
                }
                sink.write(TaskEvent::TaskArchived, self).await;
            }
            TaskCommand::AllocateVersion { version_id } => {
                if archived {
                    return Err(TaskError::Archived);
                }
                if self.last_version_id == Some(version_id) {
                    return Ok(());
                }
                let event = TaskEvent::TaskVersionNumberAllocated {
                    version_id,
                    version_number: self.version_count + 1,
                };
                sink.write(event, self).await;
            }
        }
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        match event {
            TaskEvent::TaskCreated(created) => self.created = Some(created),
            TaskEvent::TaskUpdated {
                name,
                description,
                agent_enabled,
            } => {
                if let Some(created) = &mut self.created {
                    created.name = name;
                    created.description = description;
                    created.agent_enabled = agent_enabled;
                }
            }
            TaskEvent::TaskArchived => self.lifecycle = Lifecycle::Archived,
            TaskEvent::TaskVersionNumberAllocated {
                version_id,
                version_number,
            } => {
                self.version_count = version_number;
                self.last_version_id = Some(version_id);
            }
        }
    }
}

impl AggregateExt for Task {}

#[cfg(test)]
mod tests {
    use super::*;
    use cqrs_es::test::TestFramework;

    fn created() -> TaskCreated {
        TaskCreated {
            task_id: Uuid::from_u128(1),
            company_id: Uuid::from_u128(2),
            owner_scope: OwnerScope::Company,
            owner_id: Uuid::from_u128(2),
            name: "report".into(),
            description: String::new(),
            agent_enabled: false,
            hidden: false,
        }
    }

    #[test]
    fn an_unchanged_update_records_nothing() {
        TestFramework::<Task>::with(())
            .given(vec![TaskEvent::TaskCreated(created())])
            .when(TaskCommand::Update {
                name: Some("report".into()),
                description: None,
                agent_enabled: Some(false),
            })
            .then_expect_events(vec![]);
    }

    #[test]
    fn archived_tasks_refuse_changes_versions_and_a_second_archive() {
        let given = vec![TaskEvent::TaskCreated(created()), TaskEvent::TaskArchived];
        for (command, error) in [
            (TaskCommand::Archive, TaskError::AlreadyArchived),
            (
                TaskCommand::Update {
                    name: Some("x".into()),
                    description: None,
                    agent_enabled: None,
                },
                TaskError::Archived,
            ),
            (
                TaskCommand::AllocateVersion {
                    version_id: Uuid::from_u128(9),
                },
                TaskError::Archived,
            ),
        ] {
            TestFramework::<Task>::with(())
                .given(given.clone())
                .when(command)
                .then_expect_error(error);
        }
    }

    #[test]
    fn versions_are_numbered_from_one() {
        TestFramework::<Task>::with(())
            .given(vec![TaskEvent::TaskCreated(created())])
            .when(TaskCommand::AllocateVersion {
                version_id: Uuid::from_u128(5),
            })
            .then_expect_events(vec![TaskEvent::TaskVersionNumberAllocated {
                version_id: Uuid::from_u128(5),
                version_number: 1,
            }]);
    }
}
