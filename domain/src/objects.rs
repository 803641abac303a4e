//! Owned objects: bytes the service keeps in its object store on a tenant's behalf
//! (context archives, run inputs, outputs, logs, artifact bundles, build reports,
//! scripts, table attachments).
//!
//! The bytes live in the object store; the log records that they exist, whose they
//! are, their digest and size, and their deletion state.

use crate::AggregateExt;
use crate::error::{Code, SpecError};
use cqrs_es::event_sink::EventSink;
use cqrs_es::{Aggregate, DomainEvent};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// What an object holds (spec "object kinds").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ObjectKind {
    /// A build context archive.
    Context,
    /// A run's input file.
    Input,
    /// A run's output file.
    Output,
    /// A run's combined log.
    Log,
    /// A run's artifact bundle.
    ArtifactBundle,
    /// A build report.
    Report,
    /// A task script uploaded by file (a handle usable for 24 hours).
    Script,
    /// A file of a custom table's attachment cells (content-addressed per table).
    Attachment,
    /// A task bundle uploaded for a draft (a handle usable for 24 hours; the
    /// versions naming it keep it).
    TaskBundle,
}

impl ObjectKind {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Context => "context",
            Self::Input => "input",
            Self::Output => "output",
            Self::Log => "log",
            Self::ArtifactBundle => "artifact_bundle",
            Self::Report => "report",
            Self::Script => "script",
            Self::Attachment => "attachment",
            Self::TaskBundle => "task_bundle",
        }
    }
}

/// Deletion state (spec `deletion_state`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeletionState {
    /// Readable.
    #[default]
    Active,
    /// Deletion decided, bytes not yet removed.
    DeletePending,
    /// Bytes removed.
    Deleted,
    /// Record kept, bytes gone for good.
    Tombstoned,
}

/// Facts of a stored object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredObject {
    /// The object's id (`owned_object_id`).
    pub object_id: Uuid,
    /// Owning company; `None` for operator-owned (curated) objects.
    pub company_id: Option<Uuid>,
    /// What it holds.
    pub kind: ObjectKind,
    /// `sha256:<hex>` of the bytes.
    pub digest: String,
    /// Size in bytes.
    pub byte_size: u64,
    /// Location in the object store.
    pub key: String,
}

/// Commands of [`OwnedObject`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ObjectCommand {
    /// Records bytes already written to the store.
    Record(StoredObject),
    /// Marks the object for deletion (retention).
    RequestDeletion,
    /// Records that the bytes are gone.
    ConfirmDeletion,
}

/// Events of [`OwnedObject`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ObjectEvent {
    /// Bytes are stored.
    ObjectStored(StoredObject),
    /// Deletion was decided.
    ObjectDeletionRequested,
    /// The bytes were removed.
    ObjectDeleted,
}

impl DomainEvent for ObjectEvent {
    fn event_type(&self) -> String {
        match self {
            Self::ObjectStored(_) => "ObjectStored",
            Self::ObjectDeletionRequested => "ObjectDeletionRequested",
            Self::ObjectDeleted => "ObjectDeleted",
        }
        .into()
    }
    fn event_version(&self) -> String {
        "1".into()
    }
}

/// Refusals of object commands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ObjectError {
    /// The object was already recorded with other facts.
    #[error("the object is already recorded")]
    AlreadyRecorded,
    /// No such object.
    #[error("no such object")]
    Unknown,
}

impl SpecError for ObjectError {
    fn code(&self) -> Code {
        match self {
            Self::AlreadyRecorded => Code::ObjectAlreadyRecorded,
            Self::Unknown => Code::NotFound,
        }
    }
}

/// An owned object.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnedObject {
    /// Its facts, once recorded.
    pub stored: Option<StoredObject>,
    /// Deletion state.
    pub deletion_state: DeletionState,
}

impl Aggregate for OwnedObject {
    const TYPE: &'static str = "owned_object";
    type Command = ObjectCommand;
    type Event = ObjectEvent;
    type Error = ObjectError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _: &(),
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        match command {
            ObjectCommand::Record(stored) => match &self.stored {
                None => sink.write(ObjectEvent::ObjectStored(stored), self).await,
                Some(existing) if *existing == stored => {}
                Some(_) => return Err(ObjectError::AlreadyRecorded),
            },
            ObjectCommand::RequestDeletion => {
                self.stored.as_ref().ok_or(ObjectError::Unknown)?;
                if self.deletion_state == DeletionState::Active {
                    sink.write(ObjectEvent::ObjectDeletionRequested, self).await;
                }
            }
            ObjectCommand::ConfirmDeletion => {
                self.stored.as_ref().ok_or(ObjectError::Unknown)?;
                if self.deletion_state != DeletionState::Deleted {
                    sink.write(ObjectEvent::ObjectDeleted, self).await;
                }
            }
        }
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        match event {
            ObjectEvent::ObjectStored(stored) => self.stored = Some(stored),
            ObjectEvent::ObjectDeletionRequested => {
                self.deletion_state = DeletionState::DeletePending
            }
            ObjectEvent::ObjectDeleted => self.deletion_state = DeletionState::Deleted,
        }
    }
}

impl AggregateExt for OwnedObject {}
