//! The ImportSession aggregate: a CSV or XLSX file uploaded to a department
//! (`POST .../department/{department_id}/import/extract`), its columns with the
//! types their values suggest and a preview, then (`POST .../import/{sid}/map`) the
//! table its rows went into. The parsed rows themselves sit in the object store
//! under `rows_key`; the session records where and how many.

use super::TableError;
use super::column::ColumnType;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

/// A column of the uploaded file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportColumn {
    /// Position in the file (0-based).
    pub index: usize,
    /// Its header cell.
    pub header: String,
    /// The type every non-empty value of it fits.
    pub inferred_type: ColumnType,
}

/// An uploaded file, parsed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Extracted {
    /// The session.
    pub sid: Uuid,
    /// The company.
    pub company_id: Uuid,
    /// The department it was uploaded to.
    pub department_id: Uuid,
    /// Who uploaded it (only they read the session).
    pub uploaded_by: String,
    /// The file's name.
    pub file_name: String,
    /// `csv` or `xlsx`.
    pub format: String,
    /// The worksheet read (XLSX: the first one).
    pub sheet: Option<String>,
    /// Its columns.
    pub columns: Vec<ImportColumn>,
    /// The first rows (cells as JSON values).
    pub preview: Vec<Vec<Value>>,
    /// Data rows in the file.
    pub total_rows: usize,
    /// Object-store key of every parsed row.
    pub rows_key: String,
}

/// Commands of [`ImportSession`].
#[derive(Debug, Clone, PartialEq)]
pub enum ImportCommand {
    /// Records an uploaded file (nothing happens when the session exists).
    Extract(Box<Extracted>),
    /// Records that the rows went into a table (once).
    Complete {
        /// The table.
        table_id: Uuid,
        /// Records created.
        imported: usize,
        /// Whether the import created the table.
        created_table: bool,
    },
}

/// Events of [`ImportSession`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ImportEvent {
    /// A file was uploaded and parsed.
    ImportExtracted(Box<Extracted>),
    /// Its rows went into a table, in the same statement as their records.
    ImportCompleted {
        /// The table.
        table_id: Uuid,
        /// Records created.
        imported: usize,
        /// Whether the import created the table.
        created_table: bool,
    },
}

impl cqrs_es::DomainEvent for ImportEvent {
    fn event_type(&self) -> String {
        match self {
            Self::ImportExtracted(_) => "ImportExtracted",
            Self::ImportCompleted { .. } => "ImportCompleted",
        }
        .into()
    }
    fn event_version(&self) -> String {
        "1".into()
    }
}

/// Where an import went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Completed {
    /// The table.
    pub table_id: Uuid,
    /// Records created.
    pub imported: usize,
    /// Whether the import created the table.
    pub created_table: bool,
}

/// An import session.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ImportSession {
    /// The parsed file.
    pub extracted: Option<Box<Extracted>>,
    /// The import, once done.
    pub completed: Option<Completed>,
}

impl cqrs_es::Aggregate for ImportSession {
    const TYPE: &'static str = "custom_table_import";
    type Command = ImportCommand;
    type Event = ImportEvent;
    type Error = TableError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _: &(),
        sink: &cqrs_es::event_sink::EventSink<Self>,
    ) -> Result<(), Self::Error> {
        let event = match (command, &self.extracted, &self.completed) {
            (ImportCommand::Extract(extracted), None, _) => ImportEvent::ImportExtracted(extracted),
            (ImportCommand::Extract(_), Some(_), _) => return Ok(()),
            (ImportCommand::Complete { .. }, None, _) => {
                return Err(TableError::NotFound("import"));
            }
            (ImportCommand::Complete { .. }, Some(_), Some(_)) => {
                return Err(TableError::TableConfig(
                    "this file was imported already; upload it again to import it again".into(),
                ));
            }
            (
                ImportCommand::Complete {
                    table_id,
                    imported,
                    created_table,
                },
                Some(_),
                None,
            ) => ImportEvent::ImportCompleted {
                table_id,
                imported,
                created_table,
            },
        };
        sink.write(event, self).await;
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        match event {
            ImportEvent::ImportExtracted(extracted) => self.extracted = Some(extracted),
            ImportEvent::ImportCompleted {
                table_id,
                imported,
                created_table,
            } => {
                self.completed = Some(Completed {
                    table_id,
                    imported,
                    created_table,
                })
            }
        }
    }
}

impl crate::AggregateExt for ImportSession {}
