//! Reading the sealed log by global position.

use crate::store::upcast;
use cqrs_es::persist::SerializedEvent;
use domain::AggregateExt;
use serde_json::Value;
use sqlx::PgConnection;

/// One sealed event as projections and exports see it.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct StoredEvent {
    /// Global position (1-based, gap-free, commit-safe).
    pub position: i64,
    /// Aggregate type.
    pub aggregate_type: String,
    /// Aggregate id.
    pub aggregate_id: String,
    /// Sequence inside the aggregate.
    pub sequence: i64,
    /// Event type name.
    pub event_type: String,
    /// Event version.
    pub event_version: String,
    /// The event, as stored.
    pub payload: Value,
    /// Who, when, which request.
    pub metadata: Value,
}

impl StoredEvent {
    /// Decodes the payload as an event of `A`, upcasting older versions; `None` when
    /// the event belongs to another aggregate type.
    pub fn decode<A: AggregateExt>(&self) -> anyhow::Result<Option<A::Event>> {
        if self.aggregate_type != A::TYPE {
            return Ok(None);
        }
        let serialized = SerializedEvent::new(
            self.aggregate_id.clone(),
            self.sequence as usize,
            self.aggregate_type.clone(),
            self.event_type.clone(),
            self.event_version.clone(),
            self.payload.clone(),
            self.metadata.clone(),
        );
        let upcasted = upcast(serialized, &A::upcasters());
        let event = serde_json::from_value(upcasted.payload).map_err(|e| {
            anyhow::anyhow!(
                "event at position {} ({} {} v{}) does not decode: {e}",
                self.position,
                self.aggregate_type,
                self.event_type,
                self.event_version
            )
        })?;
        Ok(Some(event))
    }

    /// A metadata field as text.
    pub fn meta(&self, key: &str) -> Option<&str> {
        self.metadata.get(key).and_then(Value::as_str)
    }

    /// When the event was decided (metadata `time`), falling back to the epoch for
    /// events written without one.
    pub fn time(&self) -> chrono::DateTime<chrono::Utc> {
        self.meta("time")
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.with_timezone(&chrono::Utc))
            .unwrap_or_default()
    }
}

/// Reads sealed events with `after < position <= until`, in order.
pub async fn read_range(conn: &mut PgConnection, after: i64, until: i64) -> sqlx::Result<Vec<StoredEvent>> {
    sqlx::query_as(
        "SELECT position, aggregate_type, aggregate_id, sequence, event_type, event_version, payload, metadata
           FROM events
          WHERE position > $1 AND position <= $2
          ORDER BY position",
    )
    .bind(after)
    .bind(until)
    .fetch_all(conn)
    .await
}

/// The highest sealed position (0 for an empty log).
pub async fn head(conn: &mut PgConnection) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT coalesce(max(position), 0) FROM events")
        .fetch_one(conn)
        .await
}
