//! The sealer gives committed events their global position and chain hash.
//!
//! A plain sequence assigned at insert time commits out of order: a reader that has
//! seen position 6 can miss position 5 committing a moment later. Instead, each row
//! records the transaction that appended it (`txid`), and the sealer only takes rows
//! whose transaction is older than the oldest transaction still running
//! (`pg_snapshot_xmin`): every such transaction has finished, and every transaction
//! that starts later gets a larger id. Rows are sealed in (`txid`, `append_seq`)
//! order with consecutive positions, so a reader of positions never skips anything.
//! Only one sealer runs at a time (the pump holds an advisory lock), so positions are
//! gap-free and the chain is linear.

use crate::chain::{self, ChainInput, GENESIS};
use serde_json::Value;
use sqlx::PgConnection;

/// The result of one sealing pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sealed {
    /// How many events were sealed.
    pub count: usize,
    /// The highest sealed position afterwards.
    pub head: i64,
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

/// Seals up to `limit` events inside the caller's transaction.
pub async fn seal(conn: &mut PgConnection, limit: i64) -> anyhow::Result<Sealed> {
    let last: Option<(i64, Vec<u8>)> = sqlx::query_as(
        "SELECT position, chain_hash FROM events WHERE position IS NOT NULL ORDER BY position DESC LIMIT 1",
    )
    .fetch_optional(&mut *conn)
    .await?;
    let (mut head, mut previous) = last.unwrap_or((0, GENESIS.to_vec()));
    let rows: Vec<Unsealed> = sqlx::query_as(
        "SELECT aggregate_type, aggregate_id, sequence, event_type, event_version,
                payload::text AS payload, metadata::text AS metadata
           FROM events
          WHERE position IS NULL AND txid < pg_snapshot_xmin(pg_current_snapshot())
          ORDER BY txid, append_seq
          LIMIT $1",
    )
    .bind(limit)
    .fetch_all(&mut *conn)
    .await?;
    if rows.is_empty() {
        return Ok(Sealed { count: 0, head });
    }
    let mut types = Vec::with_capacity(rows.len());
    let mut ids = Vec::with_capacity(rows.len());
    let mut sequences = Vec::with_capacity(rows.len());
    let mut positions = Vec::with_capacity(rows.len());
    let mut hashes = Vec::with_capacity(rows.len());
    for row in &rows {
        head += 1;
        let payload: Value = serde_json::from_str(&row.payload)?;
        let metadata: Value = serde_json::from_str(&row.metadata)?;
        let hash = chain::link(&previous, &ChainInput {
            position: head,
            aggregate_type: &row.aggregate_type,
            aggregate_id: &row.aggregate_id,
            sequence: row.sequence,
            event_type: &row.event_type,
            event_version: &row.event_version,
            payload: &payload,
            metadata: &metadata,
        });
        previous = hash.to_vec();
        types.push(row.aggregate_type.as_str());
        ids.push(row.aggregate_id.as_str());
        sequences.push(row.sequence);
        positions.push(head);
        hashes.push(hash.to_vec());
    }
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
    metrics::counter!("sandbox_events_sealed_total").increment(rows.len() as u64);
    Ok(Sealed { count: rows.len(), head })
}
