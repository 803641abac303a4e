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
use sqlx::postgres::PgArguments;
use sqlx::query::Query;
use sqlx::{PgConnection, Postgres};

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

/// Reads the first `$1` unsealed rows a pass sees, in append order, from the seal
/// floor: an ordered scan of the partial index `events_unsealed_order` that starts at
/// the floor and stops at the limit, whatever the planner's statistics say about the
/// size of the backlog (migrations 0534, 0535).
pub const UNSEALED_SQL: &str =
    "SELECT * FROM events_unsealed_from($1, (SELECT append_seq FROM seal_floor))";

/// The condition of a row that is not sealed yet, for readers of unsealed rows of
/// `events e`: below the seal floor every row is sealed, so the scan of the partial
/// index of unsealed rows starts there instead of walking the entries of rows
/// sealed since the last VACUUM (migration 0535).
pub const UNSEALED_ROW: &str =
    "e.position IS NULL AND e.append_seq >= (SELECT append_seq FROM seal_floor)";

impl Head {
    /// The head from the two columns of [`HEAD_SQL`].
    pub fn from_columns(position: Option<i64>, hash: Option<Vec<u8>>) -> Self {
        Self {
            position: position.unwrap_or(0),
            hash: hash.unwrap_or_else(|| GENESIS.to_vec()),
        }
    }
}

/// An unsealed row as a pass reads it (the columns of [`UNSEALED_SQL`]).
#[derive(Debug, sqlx::FromRow)]
pub struct Unsealed {
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
    /// The event (JSON text).
    pub payload: String,
    /// Its metadata (JSON text).
    pub metadata: String,
    /// Its place in append order.
    pub append_seq: i64,
}

/// Gives the rows of a pass their positions: `$1`-`$5` are bound by
/// [`Numbered::bind`]. The pump runs it as a data-modifying `WITH` of its checkpoint
/// update, so a cycle seals and advances its projections in one round trip.
pub const SEAL_SQL: &str = "UPDATE events AS e SET position = u.p, chain_hash = u.h
   FROM UNNEST($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::bytea[]) AS u(t, i, s, p, h)
  WHERE e.aggregate_type = u.t AND e.aggregate_id = u.i AND e.sequence = u.s";

/// A pass's rows numbered after the head (and linked into the chain), not yet
/// written: [`Numbered::write`] writes them alone, or a caller binds [`SEAL_SQL`]
/// into a statement of its own and then calls [`Numbered::written`].
pub struct Numbered {
    /// What the pass seals.
    pub sealed: Sealed,
    hashes: Vec<Option<Vec<u8>>>,
    chain_checkpoints: Vec<(i64, Vec<u8>)>,
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
    let numbered = number(head, rows, limit, chain)?;
    numbered.write(conn).await?;
    Ok(numbered.sealed)
}

/// Numbers the unsealed rows a pass read (in append order, at most `limit` of them)
/// after `head`, computing each one's chain hash.
pub fn number(
    head: Head,
    rows: Vec<Unsealed>,
    limit: i64,
    chain: Chain,
) -> anyhow::Result<Numbered> {
    let complete = (rows.len() as i64) < limit;
    let mut events = Vec::with_capacity(rows.len());
    let mut hashes: Vec<Option<Vec<u8>>> = Vec::with_capacity(rows.len());
    let mut chain_checkpoints = Vec::new();
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
                chain_checkpoints.push((position, previous.clone()));
            }
            hashes.push(Some(previous.clone()));
        } else {
            hashes.push(None);
        }
        events.push(event);
    }
    Ok(Numbered {
        sealed: Sealed {
            events,
            head: position,
            complete,
        },
        hashes,
        chain_checkpoints,
    })
}

impl Numbered {
    /// Binds the five parameters of [`SEAL_SQL`] to `query`, a statement that runs it
    /// (parameters after `$5` are the caller's to bind).
    pub fn bind<'q>(
        &'q self,
        query: Query<'q, Postgres, PgArguments>,
    ) -> Query<'q, Postgres, PgArguments> {
        let events = &self.sealed.events;
        let types: Vec<&str> = events.iter().map(|e| e.aggregate_type.as_str()).collect();
        let ids: Vec<&str> = events.iter().map(|e| e.aggregate_id.as_str()).collect();
        let sequences: Vec<i64> = events.iter().map(|e| e.sequence).collect();
        let positions: Vec<i64> = events.iter().map(|e| e.position).collect();
        query
            .bind(types)
            .bind(ids)
            .bind(sequences)
            .bind(positions)
            .bind(&self.hashes)
    }

    /// Writes the positions and hashes, then what [`Self::written`] records.
    pub async fn write(&self, conn: &mut PgConnection) -> anyhow::Result<()> {
        if !self.sealed.events.is_empty() {
            self.bind(sqlx::query(SEAL_SQL)).execute(&mut *conn).await?;
        }
        self.written(conn).await
    }

    /// After [`SEAL_SQL`] ran with this pass's parameters: records the chain
    /// checkpoints the pass reached, and counts the events sealed.
    pub async fn written(&self, conn: &mut PgConnection) -> anyhow::Result<()> {
        for (position, hash) in &self.chain_checkpoints {
            record_checkpoint(conn, *position, hash).await?;
        }
        metrics::counter!("sandbox_events_sealed_total").increment(self.sealed.events.len() as u64);
        Ok(())
    }
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
    sqlx::query_as(&format!(
        "SELECT count(*) AS events,
                coalesce(extract(epoch FROM clock_timestamp() - min(appended_at)), 0)::float8 AS oldest_seconds
           FROM events e WHERE {UNSEALED_ROW}"
    ))
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
