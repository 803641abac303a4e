//! The event repository: postgres-es for reading, one multi-row statement for writing.
//!
//! postgres-es inserts the events of a command one row at a time; a 10-event command
//! then costs ten round trips. `persist` here appends all of a command's events with
//! one `INSERT ... SELECT FROM UNNEST`, into the same table layout, so postgres-es
//! keeps reading what we write.

use cqrs_es::Aggregate;
use cqrs_es::persist::{
    PersistedEventRepository, PersistenceError, ReplayStream, SerializedEvent, SerializedSnapshot,
};
use postgres_es::PostgresEventRepository;
use serde_json::Value;
use sqlx::PgPool;
use std::sync::Arc;

const INSERT_EVENTS: &str = "
INSERT INTO events (aggregate_type, aggregate_id, sequence, event_type, event_version, payload, metadata)
SELECT t, i, s, et, ev, p::json, m::json
  FROM UNNEST($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::text[])
    AS u(t, i, s, et, ev, p, m)
";

/// The repository behind every aggregate's event store.
#[derive(Clone)]
pub struct LogRepository {
    pool: PgPool,
    reader: Arc<PostgresEventRepository>,
}

impl LogRepository {
    /// A repository on the given pool.
    pub fn new(pool: PgPool) -> Self {
        let reader = Arc::new(PostgresEventRepository::new(pool.clone()));
        Self { pool, reader }
    }

    /// The pool it writes to.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Appends events with one statement (one transaction); the sealer numbers them
    /// once committed.
    /// Refuses ([`NulInText`]) events holding a NUL character.
    pub async fn append(&self, events: &[SerializedEvent]) -> Result<(), PersistenceError> {
        if events.is_empty() {
            return Err(PersistenceError::UnknownError("nothing to append".into()));
        }
        let mut columns = Columns::with_capacity(events.len());
        for event in events {
            columns.push(event)?;
        }
        if columns.payloads.iter().any(|p| p.contains("\\u0000"))
            && events.iter().any(|event| holds_nul(&event.payload))
        {
            return Err(PersistenceError::UnknownError(Box::new(NulInText)));
        }
        sqlx::query(INSERT_EVENTS)
            .bind(columns.aggregate_types)
            .bind(columns.aggregate_ids)
            .bind(columns.sequences)
            .bind(columns.event_types)
            .bind(columns.event_versions)
            .bind(columns.payloads)
            .bind(columns.metadata)
            .execute(&self.pool)
            .await
            .map_err(map_sqlx)?;
        metrics::counter!("sandbox_events_appended_total").increment(events.len() as u64);
        Ok(())
    }
}

/// An event would carry a text holding the NUL character (U+0000). The log's
/// `json` column takes it, but PostgreSQL's `text` and `jsonb` cannot: every read
/// model copying the text would stop at that event, for every company. Such an
/// event is refused before it is appended; the command answers a validation error.
#[derive(Debug, thiserror::Error)]
#[error("a text holds the NUL character (U+0000), which cannot be stored")]
pub struct NulInText;

/// Whether a string anywhere in `value` (a key or a value) holds NUL.
fn holds_nul(value: &Value) -> bool {
    match value {
        Value::String(text) => text.contains('\0'),
        Value::Array(items) => items.iter().any(holds_nul),
        Value::Object(fields) => fields
            .iter()
            .any(|(key, value)| key.contains('\0') || holds_nul(value)),
        _ => false,
    }
}

/// Column vectors for the UNNEST insert.
struct Columns {
    aggregate_types: Vec<String>,
    aggregate_ids: Vec<String>,
    sequences: Vec<i64>,
    event_types: Vec<String>,
    event_versions: Vec<String>,
    payloads: Vec<String>,
    metadata: Vec<String>,
}

impl Columns {
    fn with_capacity(n: usize) -> Self {
        Self {
            aggregate_types: Vec::with_capacity(n),
            aggregate_ids: Vec::with_capacity(n),
            sequences: Vec::with_capacity(n),
            event_types: Vec::with_capacity(n),
            event_versions: Vec::with_capacity(n),
            payloads: Vec::with_capacity(n),
            metadata: Vec::with_capacity(n),
        }
    }

    fn push(&mut self, event: &SerializedEvent) -> Result<(), PersistenceError> {
        self.aggregate_types.push(event.aggregate_type.clone());
        self.aggregate_ids.push(event.aggregate_id.clone());
        self.sequences.push(event.sequence as i64);
        self.event_types.push(event.event_type.clone());
        self.event_versions.push(event.event_version.clone());
        self.payloads.push(serde_json::to_string(&event.payload)?);
        self.metadata.push(serde_json::to_string(&event.metadata)?);
        Ok(())
    }
}

/// A unique violation on the primary key is another writer's event at the same
/// sequence: cqrs-es's optimistic lock error.
fn map_sqlx(err: sqlx::Error) -> PersistenceError {
    match &err {
        sqlx::Error::Database(db) if db.code().as_deref() == Some("23505") => {
            PersistenceError::OptimisticLockError
        }
        sqlx::Error::PoolTimedOut | sqlx::Error::Io(_) | sqlx::Error::PoolClosed => {
            PersistenceError::ConnectionError(Box::new(err))
        }
        _ => PersistenceError::UnknownError(Box::new(err)),
    }
}

impl PersistedEventRepository for LogRepository {
    async fn get_events<A: Aggregate>(
        &self,
        aggregate_id: &str,
    ) -> Result<Vec<SerializedEvent>, PersistenceError> {
        self.reader.get_events::<A>(aggregate_id).await
    }

    async fn get_last_events<A: Aggregate>(
        &self,
        aggregate_id: &str,
        last_sequence: usize,
    ) -> Result<Vec<SerializedEvent>, PersistenceError> {
        self.reader
            .get_last_events::<A>(aggregate_id, last_sequence)
            .await
    }

    /// Snapshots are ours (see `snapshot.rs`), never cqrs-es's: its snapshot modes
    /// apply each event twice.
    async fn get_snapshot<A: Aggregate>(
        &self,
        _aggregate_id: &str,
    ) -> Result<Option<SerializedSnapshot>, PersistenceError> {
        Ok(None)
    }

    async fn persist<A: Aggregate>(
        &self,
        events: &[SerializedEvent],
        _snapshot_update: Option<(String, Value, usize)>,
    ) -> Result<(), PersistenceError> {
        if events.is_empty() {
            return Ok(());
        }
        self.append(events).await
    }

    async fn stream_events<A: Aggregate>(
        &self,
        aggregate_id: &str,
    ) -> Result<ReplayStream, PersistenceError> {
        self.reader.stream_events::<A>(aggregate_id).await
    }

    async fn stream_all_events<A: Aggregate>(&self) -> Result<ReplayStream, PersistenceError> {
        self.reader.stream_all_events::<A>().await
    }
}
