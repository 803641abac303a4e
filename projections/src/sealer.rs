//! The sealer gives committed events their global position and chain hash.
//!
//! A plain sequence assigned at insert time commits out of order: a reader that has
//! seen position 6 can miss position 5 committing a moment later. Instead, appends
//! leave `position` empty and the sealer numbers rows only after they committed:
//! each pass takes the unsealed rows its snapshot shows (committed ones only, by
//! definition) and gives them the positions after the sealed head. A transaction
//! that commits later is simply sealed by a later pass, after everything sealed
//! before it, so a reader of positions never skips anything and nothing waits for
//! transactions the service does not own
//! (docs/decisions/0006-sealing-without-a-horizon.md). Within a pass rows are taken
//! in `append_seq` order: an append that follows another's commit (the same
//! aggregate's next event, or any event caused by a read of it) drew its
//! `append_seq` later, so causal order is kept. Only one sealer runs at a time (the
//! pump holds an advisory lock), so positions are gap-free and the chain is linear.
//!
//! Every [`CHAIN_CHECKPOINT_EVERY`] positions the pass also records the chain's
//! (position, hash) in `chain_checkpoints`, for auditors to keep elsewhere: one row per
//! ten thousand events, written by the sealer, never by an append.

use crate::chain::{self, GENESIS};
use crate::log::StoredEvent;
use sqlx::PgConnection;

/// A chain checkpoint is recorded at every multiple of this position.
pub const CHAIN_CHECKPOINT_EVERY: i64 = 10_000;

/// Whether a pass computes the hash chain. Production always links; the unlinked
/// form exists so `sandboxctl bench chain` can measure what the chain costs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chain {
    /// Each sealed event gets its `chain_hash`.
    Linked,
    /// Positions only (`chain_hash` stays NULL).
    Unlinked,
}

/// Where the sealed log ends, read at the start of a pass (see [`HEAD_SQL`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    /// The highest sealed position (0 for an empty log).
    pub position: i64,
    /// Its chain hash ([`GENESIS`] for an empty log).
    pub hash: Vec<u8>,
}

/// The result of one sealing pass.
#[derive(Debug, Clone)]
pub struct Sealed {
    /// The events sealed, in position order.
    pub events: Vec<StoredEvent>,
    /// The highest sealed position afterwards.
    pub head: i64,
    /// Whether the pass sealed every committed event its snapshot showed (it was not
    /// cut short by its limit).
    pub complete: bool,
}

/// Selects the sealed head's position and hash, in that order; callers may add
/// columns after them.
pub const HEAD_SQL: &str = "SELECT last.position, last.chain_hash
  FROM (SELECT 1) AS one
  LEFT JOIN LATERAL (SELECT position, chain_hash FROM events WHERE position IS NOT NULL
                      ORDER BY position DESC LIMIT 1) AS last ON true";

/// Reads the first `$1` unsealed rows a pass sees, in append order: an ordered scan
/// of the partial index `events_unsealed_order` that stops at the limit, whatever
/// the planner's statistics say about the size of the backlog (migration 0534).
pub const UNSEALED_SQL: &str = "SELECT * FROM events_unsealed($1)";

impl Head {
    /// The head from the two columns of [`HEAD_SQL`].
    pub fn from_columns(position: Option<i64>, hash: Option<Vec<u8>>) -> Self {
        Self {
            position: position.unwrap_or(0),
            hash: hash.unwrap_or_else(|| GENESIS.to_vec()),
        }
    }
}

#[derive(sqlx::FromRow)]
struct Unsealed {
    aggregate_type: String,
    aggregate_id: String,
    sequence: i64,
    event_type: String,
    event_version: String,
    payload: String,
    metadata: String,
}

/// Seals up to `limit` events after `head`, inside the caller's transaction.
pub async fn seal(conn: &mut PgConnection, head: Head, limit: i64) -> anyhow::Result<Sealed> {
    seal_with(conn, head, limit, Chain::Linked).await
}

/// [`seal`], with or without the hash chain.
pub async fn seal_with(
    conn: &mut PgConnection,
    head: Head,
    limit: i64,
    chain: Chain,
) -> anyhow::Result<Sealed> {
    let rows: Vec<Unsealed> = sqlx::query_as(UNSEALED_SQL)
        .bind(limit)
        .fetch_all(&mut *conn)
        .await?;
    let complete = (rows.len() as i64) < limit;
    let mut events = Vec::with_capacity(rows.len());
    let mut hashes: Vec<Option<Vec<u8>>> = Vec::with_capacity(rows.len());
    let mut checkpoints = Vec::new();
    let mut previous = head.hash;
    let mut position = head.position;
    for row in rows {
        position += 1;
        let event = StoredEvent {
            position,
            aggregate_type: row.aggregate_type,
            aggregate_id: row.aggregate_id,
            sequence: row.sequence,
            event_type: row.event_type,
            event_version: row.event_version,
            payload: row.payload,
            metadata: row.metadata,
        };
        if chain == Chain::Linked {
            previous = chain::link_stored(&previous, &event)?.to_vec();
            if position % CHAIN_CHECKPOINT_EVERY == 0 {
                checkpoints.push((position, previous.clone()));
            }
            hashes.push(Some(previous.clone()));
        } else {
            hashes.push(None);
        }
        events.push(event);
    }
    if !events.is_empty() {
        let types: Vec<&str> = events.iter().map(|e| e.aggregate_type.as_str()).collect();
        let ids: Vec<&str> = events.iter().map(|e| e.aggregate_id.as_str()).collect();
        let sequences: Vec<i64> = events.iter().map(|e| e.sequence).collect();
        let positions: Vec<i64> = events.iter().map(|e| e.position).collect();
        sqlx::query(
            "UPDATE events AS e SET position = u.p, chain_hash = u.h
               FROM UNNEST($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::bytea[]) AS u(t, i, s, p, h)
              WHERE e.aggregate_type = u.t AND e.aggregate_id = u.i AND e.sequence = u.s",
        )
        .bind(&types)
        .bind(&ids)
        .bind(&sequences)
        .bind(&positions)
        .bind(&hashes)
        .execute(&mut *conn)
        .await?;
        metrics::counter!("sandbox_events_sealed_total").increment(events.len() as u64);
    }
    for (position, hash) in checkpoints {
        record_checkpoint(conn, position, &hash).await?;
    }
    Ok(Sealed {
        events,
        head: position,
        complete,
    })
}

/// What is waiting for the sealer: committed events without a position, and the age
/// of the oldest (0 when none waits).
#[derive(Debug, Clone, Copy, PartialEq, sqlx::FromRow)]
pub struct Backlog {
    /// Committed events not yet sealed.
    pub events: i64,
    /// Seconds since the oldest of them was appended: the sealing lag.
    pub oldest_seconds: f64,
}

/// Reads the sealing backlog (through the partial index of unsealed rows).
pub async fn backlog(pool: &sqlx::PgPool) -> sqlx::Result<Backlog> {
    sqlx::query_as(
        "SELECT count(*) AS events,
                coalesce(extract(epoch FROM clock_timestamp() - min(appended_at)), 0)::float8 AS oldest_seconds
           FROM events WHERE position IS NULL",
    )
    .fetch_one(pool)
    .await
}

/// Records a chain checkpoint (a second record of the same position keeps the first).
pub async fn record_checkpoint(
    conn: &mut PgConnection,
    position: i64,
    hash: &[u8],
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO chain_checkpoints (position, chain_hash) VALUES ($1, $2) ON CONFLICT DO NOTHING",
    )
    .bind(position)
    .bind(hash)
    .execute(conn)
    .await
    .map(|_| ())
}
