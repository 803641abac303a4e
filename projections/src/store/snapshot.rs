//! Loading an aggregate from its latest snapshot plus the events after it, and
//! writing snapshots as aggregates grow.
//!
//! cqrs-es's own snapshot modes apply every event twice, so only its event-store mode
//! is used and snapshots are handled here. A snapshot records the schema version of
//! the aggregate's state; another version, or a state that no longer deserializes,
//! is ignored and the aggregate is replayed in full.

use super::repository::LogRepository;
use super::upcast::upcast;
use cqrs_es::AggregateError;
use cqrs_es::persist::{EventStoreAggregateContext, PersistedEventRepository, PersistenceError};
use domain::AggregateExt;

/// A snapshot is written each time an aggregate's sequence crosses a multiple of this.
pub const SNAPSHOT_EVERY: usize = 32;

/// One row of the combined load: the snapshot (sequence NULL) or an event.
#[derive(sqlx::FromRow)]
struct LoadRow {
    sequence: Option<i64>,
    snapshot_sequence: Option<i64>,
    payload: serde_json::Value,
}

/// Loads the aggregate with one query: its snapshot of the current schema (when
/// there is one) plus the events after it. A snapshot that no longer deserializes is
/// ignored and the aggregate is replayed in full.
pub async fn load_context<A: AggregateExt>(
    repo: &LogRepository,
    aggregate_id: &str,
) -> Result<EventStoreAggregateContext<A>, AggregateError<A::Error>> {
    let rows: Vec<LoadRow> = sqlx::query_as(
        "WITH s AS (SELECT last_sequence, state FROM aggregate_snapshots
                     WHERE aggregate_type = $1 AND aggregate_id = $2 AND schema_version = $3)
         SELECT NULL::bigint AS sequence, last_sequence AS snapshot_sequence, state::json AS payload FROM s
         UNION ALL
         SELECT e.sequence, NULL, e.payload FROM events e
          WHERE e.aggregate_type = $1 AND e.aggregate_id = $2
            AND e.sequence > coalesce((SELECT last_sequence FROM s), 0)
         ORDER BY sequence NULLS FIRST",
    )
    .bind(A::TYPE)
    .bind(aggregate_id)
    .bind(A::SNAPSHOT_SCHEMA)
    .fetch_all(repo.pool())
    .await
    .map_err(|e| AggregateError::DatabaseConnectionError(Box::new(e)))?;
    let mut context = EventStoreAggregateContext {
        aggregate_id: aggregate_id.to_string(),
        aggregate: A::default(),
        current_sequence: 0,
        current_snapshot: None,
    };
    let mut rows = rows.into_iter().peekable();
    if let Some(snapshot) = rows.next_if(|r| r.sequence.is_none()) {
        match serde_json::from_value::<A>(snapshot.payload) {
            Ok(aggregate) => {
                context.aggregate = aggregate;
                context.current_sequence = snapshot.snapshot_sequence.unwrap_or_default() as usize;
            }
            Err(_) => return load_in_full(repo, context).await,
        }
    }
    if A::upcasters().is_empty() {
        for row in rows {
            let payload: A::Event = serde_json::from_value(row.payload)
                .map_err(|e| AggregateError::from(PersistenceError::from(e)))?;
            context.aggregate.apply(payload);
            context.current_sequence = row.sequence.unwrap_or_default() as usize;
        }
        Ok(context)
    } else {
        // Old event versions need their type and version to be upcast.
        let events = repo
            .get_last_events::<A>(aggregate_id, context.current_sequence)
            .await?;
        apply_events(context, events)
    }
}

async fn load_in_full<A: AggregateExt>(
    repo: &LogRepository,
    mut context: EventStoreAggregateContext<A>,
) -> Result<EventStoreAggregateContext<A>, AggregateError<A::Error>> {
    context.aggregate = A::default();
    context.current_sequence = 0;
    let events = repo.get_events::<A>(&context.aggregate_id).await?;
    apply_events(context, events)
}

fn apply_events<A: AggregateExt>(
    mut context: EventStoreAggregateContext<A>,
    events: Vec<cqrs_es::persist::SerializedEvent>,
) -> Result<EventStoreAggregateContext<A>, AggregateError<A::Error>> {
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
    let Ok(state) = serde_json::to_value(state) else {
        return;
    };
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
