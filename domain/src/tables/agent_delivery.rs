//! Agent delivery markers (spec `custom-tables.md` 5.8.4: the Command option
//! `delivery_reconciliation_ttl_seconds`, 16 markers per reconciliation, and the
//! operator's hotfix routes). An agent (a social media client) that delivers a
//! write Command's execution under an `Idempotency-Key` leaves a marker naming the
//! record it wrote; a re-delivery with the same key while the marker is valid (for
//! the Command's TTL) is reconciled to that record instead of writing again. One
//! reconciliation (a Command and an agent) keeps at most
//! [`RECONCILIATION_CAPACITY`] valid markers: a new one retires the oldest.
//! Operators acknowledge markers (retire them early) with the hotfix routes.

use crate::AggregateExt;
use crate::error::{Code, SpecError};
use chrono::{DateTime, Utc};
use cqrs_es::event_sink::EventSink;
use cqrs_es::{Aggregate, DomainEvent};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Valid markers one reconciliation (a Command and an agent) keeps.
pub const RECONCILIATION_CAPACITY: usize = 16;

/// A delivery marker as left.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeliveryMarker {
    /// The marker.
    pub marker_id: Uuid,
    /// The company.
    pub company_id: Uuid,
    /// The Command delivered.
    pub command_id: Uuid,
    /// The agent (`social_media_client:<id>`).
    pub agent: String,
    /// The delivery's `Idempotency-Key`.
    pub key: String,
    /// The record the delivery wrote.
    pub record_id: Uuid,
    /// What the delivery did to it: `created` or `updated`.
    pub op: String,
    /// Until when a re-delivery is reconciled to it.
    pub expires_at: DateTime<Utc>,
}

/// Why a marker command was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DeliveryError {
    /// The marker id is taken.
    #[error("the marker exists")]
    Exists,
    /// No such marker.
    #[error("no such marker")]
    NotFound,
}

impl SpecError for DeliveryError {
    fn code(&self) -> Code {
        match self {
            Self::Exists => Code::AlreadyExists,
            Self::NotFound => Code::NotFound,
        }
    }
}

/// Commands of [`AgentDelivery`].
#[derive(Debug, Clone, PartialEq)]
pub enum DeliveryCommand {
    /// Leaves the marker.
    Mark(Box<DeliveryMarker>),
    /// Retires it; retiring a retired marker changes nothing.
    Acknowledge {
        /// Why: `operator` (the hotfix route) or `capacity` (a newer marker of the
        /// same reconciliation took its place).
        reason: String,
    },
}

/// Events of [`AgentDelivery`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum DeliveryEvent {
    /// A delivery left its marker.
    DeliveryMarked(Box<DeliveryMarker>),
    /// A marker was retired before or after its expiry.
    DeliveryAcknowledged {
        /// The marker.
        marker_id: Uuid,
        /// `operator` or `capacity`.
        reason: String,
    },
}

impl DomainEvent for DeliveryEvent {
    fn event_type(&self) -> String {
        match self {
            Self::DeliveryMarked(_) => "DeliveryMarked",
            Self::DeliveryAcknowledged { .. } => "DeliveryAcknowledged",
        }
        .into()
    }
    fn event_version(&self) -> String {
        "1".into()
    }
}

/// One marker's lifecycle.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentDelivery {
    /// The marker, once left.
    pub marker_id: Option<Uuid>,
    /// Whether it was acknowledged.
    pub acknowledged: bool,
}

impl Aggregate for AgentDelivery {
    const TYPE: &'static str = "custom_table_agent_delivery";
    type Command = DeliveryCommand;
    type Event = DeliveryEvent;
    type Error = DeliveryError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _: &(),
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        let event = match command {
            DeliveryCommand::Mark(marker) => {
                if self.marker_id.is_some() {
                    return Err(DeliveryError::Exists);
                }
                DeliveryEvent::DeliveryMarked(marker)
            }
            DeliveryCommand::Acknowledge { reason } => {
                let marker_id = self.marker_id.ok_or(DeliveryError::NotFound)?;
                if self.acknowledged {
                    return Ok(());
                }
                DeliveryEvent::DeliveryAcknowledged { marker_id, reason }
            }
        };
        sink.write(event, self).await;
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        match event {
            DeliveryEvent::DeliveryMarked(marker) => self.marker_id = Some(marker.marker_id),
            DeliveryEvent::DeliveryAcknowledged { .. } => self.acknowledged = true,
        }
    }
}

impl AggregateExt for AgentDelivery {}
