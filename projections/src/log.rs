//! Reading the sealed log by global position.

use crate::store::upcast;
use cqrs_es::persist::SerializedEvent;
use domain::AggregateExt;
use serde_json::Value;
use sqlx::PgConnection;

/// One sealed event as projections and exports see it. Payload and metadata stay
/// JSON text until someone reads them: a projection parses only the events it
/// handles, straight into their types.
#[derive(Debug, Clone)]
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
    /// The event, as stored (JSON text).
    pub payload: String,
    /// Who, when, which request (JSON text).
    pub metadata: String,
}

#[derive(sqlx::FromRow)]
struct Row {
    position: i64,
    aggregate_type: String,
    aggregate_id: String,
    sequence: i64,
    event_type: String,
    event_version: String,
    payload: String,
    metadata: String,
}

impl From<Row> for StoredEvent {
    fn from(row: Row) -> Self {
        Self {
            position: row.position,
            aggregate_type: row.aggregate_type,
            aggregate_id: row.aggregate_id,
            sequence: row.sequence,
            event_type: row.event_type,
            event_version: row.event_version,
            payload: row.payload,
            metadata: row.metadata,
        }
    }
}

impl StoredEvent {
    /// Decodes the payload as an event of `A`, upcasting older versions; `None` when
    /// the event belongs to another aggregate type.
    pub fn decode<A: AggregateExt>(&self) -> anyhow::Result<Option<A::Event>> {
        if self.aggregate_type != A::TYPE {
            return Ok(None);
        }
        let upcasters = A::upcasters();
        let decoded = if upcasters.is_empty() {
            serde_json::from_str(&self.payload)
        } else {
            let serialized = SerializedEvent::new(
                self.aggregate_id.clone(),
                self.sequence as usize,
                self.aggregate_type.clone(),
                self.event_type.clone(),
                self.event_version.clone(),
                serde_json::from_str(&self.payload)?,
                Value::Null,
            );
            serde_json::from_value(upcast(serialized, &upcasters).payload)
        };
        let event = decoded.map_err(|e| {
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

    /// The payload as a JSON value.
    pub fn payload_value(&self) -> serde_json::Result<Value> {
        serde_json::from_str(&self.payload)
    }

    /// The metadata as a map of strings (cqrs-es stores metadata that way).
    pub fn metadata_map(&self) -> std::collections::HashMap<String, String> {
        serde_json::from_str(&self.metadata).unwrap_or_default()
    }

    /// Who decided the event, as read models show it: `principal_type:principal_id`,
    /// the principal type alone (operators, workers), or empty.
    pub fn actor(&self) -> String {
        let metadata = self.metadata_map();
        match (metadata.get("principal_type"), metadata.get("principal_id")) {
            (Some(kind), Some(id)) => format!("{kind}:{id}"),
            (Some(kind), None) => kind.clone(),
            _ => String::new(),
        }
    }

    /// When the event was decided (metadata `time`), falling back to the epoch for
    /// events written without one.
    pub fn time(&self) -> chrono::DateTime<chrono::Utc> {
        self.metadata_map()
            .get("time")
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.with_timezone(&chrono::Utc))
            .unwrap_or_default()
    }
}

/// Reads sealed events with `after < position <= until`, in order.
pub async fn read_range(
    conn: &mut PgConnection,
    after: i64,
    until: i64,
) -> anyhow::Result<Vec<StoredEvent>> {
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT position, aggregate_type, aggregate_id, sequence, event_type, event_version,
                payload::text AS payload, metadata::text AS metadata
           FROM events
          WHERE position > $1 AND position <= $2
          ORDER BY position",
    )
    .bind(after)
    .bind(until)
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(StoredEvent::try_from)
        .collect::<Result<_, _>>()?)
}

/// Reads sealed events of the given aggregate types with `after < position <= until`,
/// in order (a rebuild reads only what its projection handles).
pub async fn read_range_of(
    conn: &mut PgConnection,
    after: i64,
    until: i64,
    aggregate_types: &[&str],
) -> anyhow::Result<Vec<StoredEvent>> {
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT position, aggregate_type, aggregate_id, sequence, event_type, event_version,
                payload::text AS payload, metadata::text AS metadata
           FROM events
          WHERE position > $1 AND position <= $2 AND aggregate_type = ANY($3)
          ORDER BY position",
    )
    .bind(after)
    .bind(until)
    .bind(aggregate_types)
    .fetch_all(conn)
    .await?;
    Ok(rows.into_iter().map(StoredEvent::from).collect())
}

/// The highest sealed position (0 for an empty log).
pub async fn head(conn: &mut PgConnection) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT coalesce(max(position), 0) FROM events")
        .fetch_one(conn)
        .await
}
