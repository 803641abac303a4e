//! Loading an aggregate from its latest snapshot plus the events after it, and
//! writing snapshots as aggregates grow.
//!
//! cqrs-es's own snapshot modes apply every event twice, so only its event-store mode
//! is used and snapshots are handled here. A snapshot records the schema version of
//! the aggregate's state; another version, or a state that no longer deserializes,
//! is ignored and the aggregate is replayed in full.

use super::repository::LogRepository;
use super::upcast::upcast;
use cqrs_es::persist::{EventStoreAggregateContext, PersistedEventRepository, PersistenceError};
use cqrs_es::AggregateError;
use domain::AggregateExt;

/// A snapshot is written each time an aggregate's sequence crosses a multiple of this.
pub const SNAPSHOT_EVERY: usize = 100;

/// Loads the aggregate: snapshot (when usable) plus the events after it.
pub async fn load_context<A: AggregateExt>(
    repo: &LogRepository,
    aggregate_id: &str,
) -> Result<EventStoreAggregateContext<A>, AggregateError<A::Error>> {
    let mut context = EventStoreAggregateContext {
        aggregate_id: aggregate_id.to_string(),
        aggregate: A::default(),
        current_sequence: 0,
        current_snapshot: None,
    };
    let snapshot: Option<(i64, i32, serde_json::Value)> = sqlx::query_as(
        "SELECT last_sequence, schema_version, state FROM aggregate_snapshots
          WHERE aggregate_type = $1 AND aggregate_id = $2",
    )
    .bind(A::TYPE)
    .bind(aggregate_id)
    .fetch_optional(repo.pool())
    .await
    .map_err(|e| AggregateError::DatabaseConnectionError(Box::new(e)))?;
    if let Some((last_sequence, schema, state)) = snapshot
        && schema == A::SNAPSHOT_SCHEMA
        && let Ok(aggregate) = serde_json::from_value::<A>(state)
    {
        context.aggregate = aggregate;
        context.current_sequence = last_sequence as usize;
    }
    let events = if context.current_sequence == 0 {
        repo.get_events::<A>(aggregate_id).await?
    } else {
        repo.get_last_events::<A>(aggregate_id, context.current_sequence).await?
    };
    let upcasters = A::upcasters();
    for event in events {
        let event = upcast(event, &upcasters);
        let sequence = event.sequence;
        let payload: A::Event = serde_json::from_value(event.payload)
            .map_err(|e| AggregateError::from(PersistenceError::from(e)))?;
        context.aggregate.apply(payload);
        context.current_sequence = sequence;
    }
    Ok(context)
}

/// Writes a snapshot when the commit moved the sequence across a multiple of
/// [`SNAPSHOT_EVERY`]. A failure only costs speed, so it is logged, not returned.
pub async fn maybe_snapshot<A: AggregateExt>(
    repo: &LogRepository,
    aggregate_id: &str,
    before: usize,
    after: usize,
    state: &A,
) {
    if after / SNAPSHOT_EVERY == before / SNAPSHOT_EVERY {
        return;
    }
    let Ok(state) = serde_json::to_value(state) else { return };
    let result = sqlx::query(
        "INSERT INTO aggregate_snapshots (aggregate_type, aggregate_id, last_sequence, schema_version, state)
         VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (aggregate_type, aggregate_id) DO UPDATE
            SET last_sequence = EXCLUDED.last_sequence, schema_version = EXCLUDED.schema_version,
                state = EXCLUDED.state, taken_at = now()
          WHERE aggregate_snapshots.last_sequence < EXCLUDED.last_sequence",
    )
    .bind(A::TYPE)
    .bind(aggregate_id)
    .bind(after as i64)
    .bind(A::SNAPSHOT_SCHEMA)
    .bind(state)
    .execute(repo.pool())
    .await;
    if let Err(error) = result {
        tracing::warn!(%error, aggregate_type = A::TYPE, aggregate_id, "snapshot not written");
    }
}
