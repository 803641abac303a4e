//! The TaskVersion aggregate: a draft that can be edited, published (then
//! immutable) and archived.

use super::contents::VersionContents;
use crate::AggregateExt;
use crate::error::{Code, SpecError};
use cqrs_es::event_sink::EventSink;
use cqrs_es::{Aggregate, DomainEvent};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Task version states (spec section 3).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskVersionState {
    /// Editable.
    #[default]
    Draft,
    /// Immutable and usable.
    Published,
    /// Retired.
    Archived,
}

/// Whether a version's contents are still held (spec `content_state`); a scrubbed
/// version is never runnable again.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContentState {
    /// The contents are held.
    #[default]
    Active,
    /// The contents were removed.
    Scrubbed,
}

/// The facts a version is drafted with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskVersionDrafted {
    /// Its id.
    pub version_id: Uuid,
    /// Its task.
    pub task_id: Uuid,
    /// Its company.
    pub company_id: Uuid,
    /// Number within the task, from 1.
    pub version_number: i64,
    /// What it holds.
    pub contents: VersionContents,
}

/// Commands of [`TaskVersion`].
#[derive(Debug, Clone, PartialEq)]
pub enum TaskVersionCommand {
    /// Creates the draft.
    Draft(TaskVersionDrafted),
    /// Replaces a draft's contents.
    Edit(VersionContents),
    /// Publishes the draft (the caller checked the environment and the ceiling).
    Publish,
    /// Retires the version.
    Archive,
    /// The operator removes the owner-only content for good (the log's copy is
    /// removed beside it, [`crate::tasks::scrub`]).
    Scrub {
        /// Why, for the audit trail.
        reason: String,
    },
}

/// Events of [`TaskVersion`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum TaskVersionEvent {
    /// A draft exists.
    TaskVersionDrafted(TaskVersionDrafted),
    /// The draft's contents changed.
    TaskVersionEdited {
        /// The contents after the change.
        contents: VersionContents,
    },
    /// The version is published and immutable.
    TaskVersionPublished {
        /// `sha256:` of its canonical contents.
        canonical_digest: String,
        /// `sha256:` of its owner-only content.
        content_hash: String,
    },
    /// The version is archived.
    TaskVersionArchived,
    /// The owner-only content (scripts, work command, ordinary env) is removed for
    /// good: `content_state` is `scrubbed` and the version never runs again.
    TaskVersionScrubbed {
        /// The version's digest, kept now that its content is gone.
        canonical_digest: String,
        /// The digest of what was removed.
        content_hash: String,
        /// Why.
        reason: String,
    },
}

impl DomainEvent for TaskVersionEvent {
    fn event_type(&self) -> String {
        match self {
            Self::TaskVersionDrafted(_) => "TaskVersionDrafted",
            Self::TaskVersionEdited { .. } => "TaskVersionEdited",
            Self::TaskVersionPublished { .. } => "TaskVersionPublished",
            Self::TaskVersionArchived => "TaskVersionArchived",
            Self::TaskVersionScrubbed { .. } => "TaskVersionScrubbed",
        }
        .into()
    }
    fn event_version(&self) -> String {
        "1".into()
    }
}

/// Refusals of task-version commands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TaskVersionError {
    /// No such version.
    #[error("task version not found")]
    NotFound,
    /// The id is taken.
    #[error("the task version already exists")]
    AlreadyExists,
    /// The state does not allow the change (editing or publishing a non-draft,
    /// archiving an archived version).
    #[error("a {0} task version cannot be {1}")]
    IllegalTransition(&'static str, &'static str),
}

impl SpecError for TaskVersionError {
    fn code(&self) -> Code {
        match self {
            Self::NotFound => Code::NotFound,
            Self::AlreadyExists => Code::AlreadyExists,
            Self::IllegalTransition(..) => Code::IllegalStateTransition,
        }
    }
}

/// A task version.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskVersion {
    /// Draft facts with the current contents.
    pub drafted: Option<TaskVersionDrafted>,
    /// State.
    pub state: TaskVersionState,
    /// Whether the owner-only content is still held.
    #[serde(default)]
    pub content_state: ContentState,
}

fn state_name(state: TaskVersionState) -> &'static str {
    match state {
        TaskVersionState::Draft => "draft",
        TaskVersionState::Published => "published",
        TaskVersionState::Archived => "archived",
    }
}

impl Aggregate for TaskVersion {
    const TYPE: &'static str = "task_version";
    type Command = TaskVersionCommand;
    type Event = TaskVersionEvent;
    type Error = TaskVersionError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _: &(),
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        if let TaskVersionCommand::Draft(drafted) = command {
            if self.drafted.is_some() {
                return Err(TaskVersionError::AlreadyExists);
            }
            sink.write(TaskVersionEvent::TaskVersionDrafted(drafted), self)
                .await;
            return Ok(());
        }
        let drafted = self.drafted.clone().ok_or(TaskVersionError::NotFound)?;
        let scrubbed = self.content_state == ContentState::Scrubbed;
        let state = if scrubbed {
            "scrubbed"
        } else {
            state_name(self.state)
        };
        match command {
            TaskVersionCommand::Draft(_) => unreachable!("handled above"),
            TaskVersionCommand::Edit(contents) => {
                if self.state != TaskVersionState::Draft || scrubbed {
                    return Err(TaskVersionError::IllegalTransition(state, "edited"));
                }
                if contents != drafted.contents {
                    sink.write(TaskVersionEvent::TaskVersionEdited { contents }, self)
                        .await;
                }
            }
            TaskVersionCommand::Publish => {
                if self.state != TaskVersionState::Draft || scrubbed {
                    return Err(TaskVersionError::IllegalTransition(state, "published"));
                }
                let event = TaskVersionEvent::TaskVersionPublished {
                    canonical_digest: drafted.contents.canonical_digest(),
                    content_hash: drafted.contents.content_hash(),
                };
                sink.write(event, self).await;
            }
            TaskVersionCommand::Archive => {
                if self.state == TaskVersionState::Archived {
                    return Err(TaskVersionError::IllegalTransition(state, "archived"));
                }
                sink.write(TaskVersionEvent::TaskVersionArchived, self)
                    .await;
            }
            TaskVersionCommand::Scrub { .. } if scrubbed => {}
            TaskVersionCommand::Scrub { reason } => {
                let event = TaskVersionEvent::TaskVersionScrubbed {
                    canonical_digest: drafted.contents.canonical_digest(),
                    content_hash: drafted.contents.content_hash(),
                    reason,
                };
                sink.write(event, self).await;
            }
        }
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        match event {
            TaskVersionEvent::TaskVersionDrafted(drafted) => self.drafted = Some(drafted),
            TaskVersionEvent::TaskVersionEdited { contents } => {
                if let Some(drafted) = &mut self.drafted {
                    drafted.contents = contents;
                }
            }
            TaskVersionEvent::TaskVersionPublished { .. } => {
                self.state = TaskVersionState::Published
            }
            TaskVersionEvent::TaskVersionArchived => self.state = TaskVersionState::Archived,
            TaskVersionEvent::TaskVersionScrubbed { .. } => {
                self.content_state = ContentState::Scrubbed;
                if let Some(drafted) = &mut self.drafted {
                    drafted.contents.scrub();
                }
            }
        }
    }
}

impl AggregateExt for TaskVersion {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::contents::{DEFAULT_TIMEOUT_SECONDS, VersionContents};
    use cqrs_es::test::TestFramework;

    fn drafted() -> TaskVersionDrafted {
        TaskVersionDrafted {
            version_id: Uuid::from_u128(1),
            task_id: Uuid::from_u128(2),
            company_id: Uuid::from_u128(3),
            version_number: 1,
            contents: VersionContents {
                environment_version_id: Uuid::from_u128(4),
                startup_script: String::new(),
                work_script: "echo hi".into(),
                ordinary_env: Default::default(),
                input_instructions: None,
                input_example: None,
                input_schema: None,
                work_command: None,
                timeout_seconds: DEFAULT_TIMEOUT_SECONDS,
                secret_slot_declarations: Vec::new(),
                requires_confirmation: false,
                output_policy: None,
                bundle: None,
            },
        }
    }

    #[test]
    fn publishing_records_the_digests_of_the_contents() {
        let contents = drafted().contents;
        TestFramework::<TaskVersion>::with(())
            .given(vec![TaskVersionEvent::TaskVersionDrafted(drafted())])
            .when(TaskVersionCommand::Publish)
            .then_expect_events(vec![TaskVersionEvent::TaskVersionPublished {
                canonical_digest: contents.canonical_digest(),
                content_hash: contents.content_hash(),
            }]);
    }

    #[test]
    fn a_scrub_keeps_the_digests_empties_the_content_and_ends_every_change() {
        let contents = drafted().contents;
        let scrubbed = TaskVersionEvent::TaskVersionScrubbed {
            canonical_digest: contents.canonical_digest(),
            content_hash: contents.content_hash(),
            reason: "leak".into(),
        };
        TestFramework::<TaskVersion>::with(())
            .given(vec![TaskVersionEvent::TaskVersionDrafted(drafted())])
            .when(TaskVersionCommand::Scrub {
                reason: "leak".into(),
            })
            .then_expect_events(vec![scrubbed.clone()]);
        let given = vec![TaskVersionEvent::TaskVersionDrafted(drafted()), scrubbed];
        TestFramework::<TaskVersion>::with(())
            .given(given.clone())
            .when(TaskVersionCommand::Scrub {
                reason: "again".into(),
            })
            .then_expect_events(vec![]);
        TestFramework::<TaskVersion>::with(())
            .given(given.clone())
            .when(TaskVersionCommand::Publish)
            .then_expect_error(TaskVersionError::IllegalTransition("scrubbed", "published"));
        let mut version = TaskVersion::default();
        for event in given {
            version.apply(event);
        }
        let held = version.drafted.unwrap().contents;
        assert_eq!((held.work_script.as_str(), held.work_command), ("", None));
        assert_eq!(version.content_state, ContentState::Scrubbed);
    }

    #[test]
    fn a_published_version_is_immutable() {
        let given = vec![
            TaskVersionEvent::TaskVersionDrafted(drafted()),
            TaskVersionEvent::TaskVersionPublished {
                canonical_digest: "sha256:x".into(),
                content_hash: "sha256:y".into(),
            },
        ];
        let mut changed = drafted().contents;
        changed.work_script = "echo bye".into();
        TestFramework::<TaskVersion>::with(())
            .given(given.clone())
            .when(TaskVersionCommand::Edit(changed))
            .then_expect_error(TaskVersionError::IllegalTransition("published", "edited"));
        TestFramework::<TaskVersion>::with(())
            .given(given)
            .when(TaskVersionCommand::Publish)
            .then_expect_error(TaskVersionError::IllegalTransition(
                "published",
                "published",
            ));
    }

    #[test]
    fn archiving_twice_is_refused() {
        TestFramework::<TaskVersion>::with(())
            .given(vec![
                TaskVersionEvent::TaskVersionDrafted(drafted()),
                TaskVersionEvent::TaskVersionArchived,
            ])
            .when(TaskVersionCommand::Archive)
            .then_expect_error(TaskVersionError::IllegalTransition("archived", "archived"));
    }
}
