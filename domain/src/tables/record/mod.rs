//! The Record aggregate: one per record (id = record id). Values are validated
//! against the table's schema before the command is built (see
//! [`crate::tables::values`]); the aggregate only keeps the record's lifecycle.

use crate::AggregateExt;
use crate::tables::TableError;
use cqrs_es::event_sink::EventSink;
use cqrs_es::{Aggregate, DomainEvent};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use uuid::Uuid;

/// Cells by internal column key, in canonical form (`null` clears a cell).
pub type Cells = BTreeMap<String, Value>;

/// Commands of [`Record`].
#[derive(Debug, Clone, PartialEq)]
pub enum RecordCommand {
    /// Creates the record.
    Create {
        /// The record's id.
        record_id: Uuid,
        /// Its table.
        table_id: Uuid,
        /// Its company.
        company_id: Uuid,
        /// The creator (`user:<id>` or `social_media_client:<id>`).
        created_by: String,
        /// Validated cells.
        data: Cells,
    },
    /// Changes some cells.
    Update {
        /// The table the caller addressed.
        table_id: Uuid,
        /// Validated cells to change.
        changes: Cells,
    },
    /// Deletes the record.
    Delete {
        /// The table the caller addressed.
        table_id: Uuid,
    },
}

/// Events of [`Record`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum RecordEvent {
    /// A record exists.
    RecordCreated {
        /// The record.
        record_id: Uuid,
        /// Its table.
        table_id: Uuid,
        /// Its company.
        company_id: Uuid,
        /// The creator.
        created_by: String,
        /// Its cells.
        data: Cells,
    },
    /// Cells changed.
    RecordUpdated {
        /// Its table.
        table_id: Uuid,
        /// The changed cells.
        changes: Cells,
    },
    /// The record is gone.
    RecordDeleted {
        /// Its table.
        table_id: Uuid,
    },
}

impl DomainEvent for RecordEvent {
    fn event_type(&self) -> String {
        match self {
            Self::RecordCreated { .. } => "RecordCreated",
            Self::RecordUpdated { .. } => "RecordUpdated",
            Self::RecordDeleted { .. } => "RecordDeleted",
        }
        .into()
    }
    fn event_version(&self) -> String {
        "1".into()
    }
}

impl RecordEvent {
    /// The record's table.
    pub fn table_id(&self) -> Uuid {
        match self {
            Self::RecordCreated { table_id, .. }
            | Self::RecordUpdated { table_id, .. }
            | Self::RecordDeleted { table_id } => *table_id,
        }
    }
}

/// A record's lifecycle.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Its table, once created.
    pub table_id: Option<Uuid>,
    /// Its company.
    pub company_id: Uuid,
    /// The creator.
    pub created_by: String,
    /// Whether it was deleted.
    pub deleted: bool,
}

impl Record {
    fn live_in(&self, table_id: Uuid) -> Result<(), TableError> {
        if self.table_id == Some(table_id) && !self.deleted {
            Ok(())
        } else {
            Err(TableError::NotFound("record"))
        }
    }
}

impl Aggregate for Record {
    const TYPE: &'static str = "custom_table_record";
    type Command = RecordCommand;
    type Event = RecordEvent;
    type Error = TableError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _: &(),
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        let event = match command {
            RecordCommand::Create {
                record_id,
                table_id,
                company_id,
                created_by,
                data,
            } => {
                if self.table_id.is_some() {
                    return Err(TableError::InvalidQuery("record id already used".into()));
                }
                RecordEvent::RecordCreated {
                    record_id,
                    table_id,
                    company_id,
                    created_by,
                    data,
                }
            }
            RecordCommand::Update { table_id, changes } => {
                self.live_in(table_id)?;
                if changes.is_empty() {
                    return Ok(());
                }
                RecordEvent::RecordUpdated { table_id, changes }
            }
            RecordCommand::Delete { table_id } => {
                self.live_in(table_id)?;
                RecordEvent::RecordDeleted { table_id }
            }
        };
        sink.write(event, self).await;
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        match event {
            RecordEvent::RecordCreated {
                table_id,
                company_id,
                created_by,
                ..
            } => {
                self.table_id = Some(table_id);
                self.company_id = company_id;
                self.created_by = created_by;
            }
            RecordEvent::RecordUpdated { .. } => {}
            RecordEvent::RecordDeleted { .. } => self.deleted = true,
        }
    }
}

impl AggregateExt for Record {}

#[cfg(test)]
mod tests {
    use super::*;
    use cqrs_es::test::TestFramework;

    const TABLE: Uuid = Uuid::from_u128(1);

    fn created() -> RecordEvent {
        RecordEvent::RecordCreated {
            record_id: Uuid::from_u128(2),
            table_id: TABLE,
            company_id: Uuid::nil(),
            created_by: "user:x".into(),
            data: Cells::new(),
        }
    }

    #[test]
    fn a_record_is_only_reached_through_its_table() {
        TestFramework::<Record>::with(())
            .given(vec![created()])
            .when(RecordCommand::Delete {
                table_id: Uuid::from_u128(9),
            })
            .then_expect_error(TableError::NotFound("record"));
        TestFramework::<Record>::with(())
            .given(vec![
                created(),
                RecordEvent::RecordDeleted { table_id: TABLE },
            ])
            .when(RecordCommand::Update {
                table_id: TABLE,
                changes: [("col_1".to_string(), Value::Null)].into(),
            })
            .then_expect_error(TableError::NotFound("record"));
    }
}
