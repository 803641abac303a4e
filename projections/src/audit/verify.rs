//! Verifying the hash chain.
//!
//! The chain is recomputed from position 1 with the sealer's own function
//! ([`crate::chain::link`]). The first position where something does not hold is
//! reported: a missing position (a deleted row), a stored hash that differs from the
//! recomputed one (an edited event), or a recomputed hash that differs from a recorded
//! checkpoint or from a hash the auditor kept elsewhere (a chain rewritten after an
//! edit). A checkpoint beyond the end of the log shows a truncated tail.

use crate::chain::{self, ChainInput, GENESIS};
use anyhow::Context;
use serde_json::Value;
use sqlx::PgConnection;
use std::collections::BTreeMap;
use std::fmt;

/// A (position, hash) the chain must pass through, e.g. kept by an auditor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expectation {
    /// The position.
    pub position: i64,
    /// The chain hash expected there.
    pub hash: Vec<u8>,
}

impl std::str::FromStr for Expectation {
    type Err = anyhow::Error;

    /// Parses `POSITION:HEX`.
    fn from_str(text: &str) -> anyhow::Result<Self> {
        let (position, hash) = text
            .split_once(':')
            .context("expected POSITION:HASH (as printed by `events checkpoint`)")?;
        Ok(Self {
            position: position
                .trim()
                .parse()
                .context("position is not a number")?,
            hash: hex::decode(hash.trim()).context("hash is not hex")?,
        })
    }
}

/// Where and why the chain breaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainBreak {
    /// The first position that fails.
    pub position: i64,
    /// Why.
    pub reason: String,
}

impl fmt::Display for ChainBreak {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the chain breaks at position {}: {}",
            self.position, self.reason
        )
    }
}

/// The outcome of a verification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verification {
    /// The last position that verified.
    pub verified: i64,
    /// Its recomputed hash.
    pub hash: Vec<u8>,
    /// Recorded checkpoints and expectations checked.
    pub anchors_checked: usize,
    /// The first failure, if any.
    pub broken: Option<ChainBreak>,
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
    chain_hash: Option<Vec<u8>>,
}

/// Events hashed per page.
const PAGE: i64 = 5_000;

/// Verifies the sealed log against itself, the recorded `chain_checkpoints` and the
/// given expectations. `progress` is called after each page with the last position.
pub async fn verify(
    conn: &mut PgConnection,
    expectations: &[Expectation],
    mut progress: impl FnMut(i64),
) -> anyhow::Result<Verification> {
    let recorded: Vec<(i64, Vec<u8>)> =
        sqlx::query_as("SELECT position, chain_hash FROM chain_checkpoints ORDER BY position")
            .fetch_all(&mut *conn)
            .await?;
    // Every anchor, by position; an auditor's expectation is named as such.
    let mut anchors: BTreeMap<i64, Vec<(Vec<u8>, &str)>> = BTreeMap::new();
    for (position, hash) in recorded {
        anchors
            .entry(position)
            .or_default()
            .push((hash, "the recorded chain checkpoint"));
    }
    for expectation in expectations {
        anchors
            .entry(expectation.position)
            .or_default()
            .push((expectation.hash.clone(), "the expected hash"));
    }
    let mut state = Verification {
        verified: 0,
        hash: GENESIS.to_vec(),
        anchors_checked: 0,
        broken: None,
    };
    loop {
        let rows: Vec<Row> = sqlx::query_as(
            "SELECT position, aggregate_type, aggregate_id, sequence, event_type, event_version,
                    payload::text AS payload, metadata::text AS metadata, chain_hash
               FROM events WHERE position > $1 ORDER BY position LIMIT $2",
        )
        .bind(state.verified)
        .bind(PAGE)
        .fetch_all(&mut *conn)
        .await?;
        let done = (rows.len() as i64) < PAGE;
        for row in rows {
            if let Some(broken) = check(&mut state, &anchors, row)? {
                state.broken = Some(broken);
                return Ok(state);
            }
        }
        progress(state.verified);
        if done {
            break;
        }
    }
    // An anchor past the end: the log lost its tail.
    if let Some((position, anchors)) = anchors.range(state.verified + 1..).next() {
        state.broken = Some(ChainBreak {
            position: state.verified + 1,
            reason: format!(
                "the log ends at position {} but {} names position {position}: events were deleted from the end",
                state.verified, anchors[0].1
            ),
        });
    }
    Ok(state)
}

/// Checks one row; advances `state` when it holds.
fn check(
    state: &mut Verification,
    anchors: &BTreeMap<i64, Vec<(Vec<u8>, &str)>>,
    row: Row,
) -> anyhow::Result<Option<ChainBreak>> {
    let expected = state.verified + 1;
    if row.position != expected {
        return Ok(Some(ChainBreak {
            position: expected,
            reason: format!(
                "position {expected} is missing (the next event is at {}): events were deleted",
                row.position
            ),
        }));
    }
    let broken = |reason: String| {
        Ok(Some(ChainBreak {
            position: row.position,
            reason,
        }))
    };
    let (Ok(payload), Ok(metadata)) = (
        serde_json::from_str::<Value>(&row.payload),
        serde_json::from_str::<Value>(&row.metadata),
    ) else {
        return broken("the payload or metadata is not JSON".into());
    };
    let hash = chain::link(
        &state.hash,
        &ChainInput {
            position: row.position,
            aggregate_type: &row.aggregate_type,
            aggregate_id: &row.aggregate_id,
            sequence: row.sequence,
            event_type: &row.event_type,
            event_version: &row.event_version,
            payload: &payload,
            metadata: &metadata,
        },
    );
    match &row.chain_hash {
        None => return broken("the event has no chain hash".into()),
        Some(stored) if stored.as_slice() != hash => {
            return broken(format!(
                "{} {} {} #{}: the stored hash does not match the event (it was changed after sealing)",
                row.aggregate_type, row.aggregate_id, row.event_type, row.sequence
            ));
        }
        Some(_) => {}
    }
    for (anchor, source) in anchors.get(&row.position).into_iter().flatten() {
        if anchor.as_slice() != hash {
            return broken(format!(
                "the recomputed hash {} differs from {source} {} (an earlier event was changed and the chain rewritten)",
                hex::encode(hash),
                hex::encode(anchor)
            ));
        }
        state.anchors_checked += 1;
    }
    state.verified = row.position;
    state.hash = hash.to_vec();
    Ok(None)
}
