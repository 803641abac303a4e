//! One pump cycle: seal what committed, then project it, in one transaction.
//!
//! A cycle first runs fast: each projection applies its batch directly in the
//! cycle's transaction. If one fails, the whole transaction is rolled back and the
//! cycle runs again carefully: each projection in a savepoint, so the failing one is
//! rolled back alone, marked failing and retried after a rest, while the others go on.
//! Each projection's checkpoint is written in the same transaction as its rows.
//!
//! Round trips are what a single command waits for, so a fast cycle reads the head,
//! the checkpoints and the unsealed rows in one statement, and writes the seal with
//! the checkpoints' advance in another, before applying. The same two statements
//! read what the seal floor needs and move it (see `floor.rs`).

use super::floor::{Horizon, Read};
use super::{Cycle, Pump};
use crate::log::{self, StoredEvent};
use crate::projection::Projection;
use crate::sealer::{self, Chain, HEAD_SQL, Head, Numbered, SEAL_SQL, Sealed, Unsealed};
use anyhow::Context;
use chrono::{DateTime, Utc};
use sqlx::types::Json;
use sqlx::{Connection, PgConnection};
use std::sync::atomic::Ordering;
use std::sync::{Arc, LazyLock};

/// A cycle's first statement: the sealed head, then the first unsealed rows in
/// append order (one row with empty event columns when there are none; the caller
/// orders them by `ordinality`), the checkpoints and the snapshot's [`Horizon`] on
/// the first (the sequence is read after the snapshot was taken). One statement, so
/// one snapshot and one round trip.
static OPENING_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH head AS ({HEAD_SQL})
         SELECT head.position AS head_position, head.chain_hash AS head_hash,
                first.checkpoints, first.xmin, first.xmax, first.last_seq,
                u.aggregate_type, u.aggregate_id, u.sequence, u.event_type, u.event_version,
                u.payload, u.metadata, u.append_seq, u.ordinality
           FROM head
           LEFT JOIN events_unsealed_from($2, (SELECT append_seq FROM seal_floor))
                WITH ORDINALITY AS u ON true
           LEFT JOIN LATERAL (
                SELECT (SELECT coalesce(json_agg(c), '[]') FROM projection_checkpoints c
                         WHERE c.name = ANY($1)) AS checkpoints,
                       pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS xmin,
                       pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS xmax,
                       (SELECT CASE WHEN is_called THEN last_value ELSE 0 END
                          FROM events_append_seq_seq) AS last_seq
                 WHERE u.ordinality IS NULL OR u.ordinality = 1) AS first ON true"
    )
});

/// Moves the checkpoints named in `$1` to `$2`, clearing any failure.
const ADVANCE_SQL: &str = "UPDATE projection_checkpoints
    SET position = $2, updated_at = now(), failing_since = NULL, last_error = NULL
  WHERE name = ANY($1)";

/// [`SEAL_SQL`], the checkpoints' advance (names `$6`, position `$7`) and the seal
/// floor's (to `$8`, when not NULL) in one statement: a fast cycle knows before
/// applying which checkpoints move, since any failure rolls the whole cycle back.
static SEAL_AND_ADVANCE_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH sealed AS ({SEAL_SQL}),
              floor AS (UPDATE seal_floor SET append_seq = $8 WHERE append_seq < $8)
         {}",
        ADVANCE_SQL.replace("$1", "$6").replace("$2", "$7")
    )
});

/// A row of [`OPENING_SQL`].
#[derive(sqlx::FromRow)]
struct Opening {
    head_position: Option<i64>,
    head_hash: Option<Vec<u8>>,
    checkpoints: Option<Json<Vec<Checkpoint>>>,
    xmin: Option<i64>,
    xmax: Option<i64>,
    last_seq: Option<i64>,
    aggregate_type: Option<String>,
    aggregate_id: Option<String>,
    sequence: Option<i64>,
    event_type: Option<String>,
    event_version: Option<String>,
    payload: Option<String>,
    metadata: Option<String>,
    append_seq: Option<i64>,
    ordinality: Option<i64>,
}

impl Opening {
    /// The unsealed row it carries, if any.
    fn unsealed(self) -> Option<Unsealed> {
        Some(Unsealed {
            aggregate_type: self.aggregate_type?,
            aggregate_id: self.aggregate_id?,
            sequence: self.sequence?,
            event_type: self.event_type?,
            event_version: self.event_version?,
            payload: self.payload?,
            metadata: self.metadata?,
            append_seq: self.append_seq?,
        })
    }

    /// The horizon the first row carries.
    fn horizon(&self) -> Option<Horizon> {
        Some(Horizon {
            xmin: self.xmin?,
            xmax: self.xmax?,
            last_seq: self.last_seq?,
        })
    }
}

#[derive(serde::Deserialize)]
struct Checkpoint {
    name: String,
    position: i64,
    failing_since: Option<DateTime<Utc>>,
    updated_at: DateTime<Utc>,
}

/// A projection's checkpoint during a cycle.
struct State<'a> {
    projection: &'a Arc<dyn Projection>,
    position: i64,
    failing: bool,
    last_attempt: DateTime<Utc>,
}

/// How projections are isolated from each other in a cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// No savepoints; any failure aborts the cycle.
    Fast,
    /// One savepoint per projection.
    Careful,
}

/// A projection failed during a fast cycle.
#[derive(Debug, thiserror::Error)]
#[error("a projection failed; the cycle runs again with savepoints")]
struct RetryCarefully;

impl Pump {
    /// One transaction: seal, then project. `None` when another process pumps.
    pub async fn cycle(&self) -> anyhow::Result<Option<Cycle>> {
        let mut leader = self.leader.lock().await;
        let connection = leader.connection(&self.pool).await;
        self.leading
            .store(matches!(connection, Ok(Some(_))), Ordering::SeqCst);
        let Some(connection) = connection? else {
            return Ok(None);
        };
        let mut result = self.run(connection, Mode::Fast).await;
        if result.as_ref().is_err_and(|e| e.is::<RetryCarefully>()) {
            result = self.run(connection, Mode::Careful).await;
        }
        if result.is_err() {
            leader.resign();
            self.leading.store(false, Ordering::SeqCst);
        }
        result.map(Some)
    }

    async fn run(&self, connection: &mut PgConnection, mode: Mode) -> anyhow::Result<Cycle> {
        // Numbered before any statement: the sealer's snapshot is taken after this.
        let number = self.start_cycle();
        let mut tx = connection.begin().await?;
        let mut opening: Vec<Opening> = sqlx::query_as(&OPENING_SQL)
            .bind(&self.names)
            .bind(self.config.seal_batch)
            .fetch_all(&mut *tx)
            .await?;
        // Already in order in practice (a nested loop over one row); made certain here
        // rather than by a sort of the wide rows in the database.
        opening.sort_by_key(|row| row.ordinality);
        let first = opening
            .first_mut()
            .context("the cycle's opening read returned no row")?;
        let head = Head::from_columns(first.head_position, first.head_hash.take());
        let checkpoints = first.checkpoints.take().map(|c| c.0).unwrap_or_default();
        let horizon = first
            .horizon()
            .context("the cycle's opening read returned no horizon")?;
        let rows: Vec<Unsealed> = opening.into_iter().filter_map(Opening::unsealed).collect();
        let last_read = rows.last().map(|row| row.append_seq);
        let numbered = sealer::number(head, rows, self.config.seal_batch, Chain::Linked)?;
        let floor = {
            let mut floor = self
                .floor
                .lock()
                .expect("the floor's lock is never poisoned");
            floor.observe(&horizon);
            let read = Read {
                complete: numbered.sealed.complete,
                last: last_read,
            };
            floor.next(&horizon, read).filter(|_| mode == Mode::Fast)
        };
        let mut states: Vec<State> = self
            .projections
            .iter()
            .filter_map(|p| {
                let cp = checkpoints.iter().find(|c| c.name == p.name())?;
                Some(State {
                    projection: p,
                    position: cp.position,
                    failing: cp.failing_since.is_some(),
                    last_attempt: cp.updated_at,
                })
            })
            .collect();
        let due = Due {
            head: numbered.sealed.head,
            backoff: chrono::Duration::from_std(self.config.failure_backoff)?,
            now: Utc::now(),
        };
        let batch = self.batch(&states, &due);
        let until = batch.map(|b| b.until);
        let applied = async {
            let moved = match mode {
                Mode::Fast => {
                    let seal = Seal {
                        numbered: &numbered,
                        floor,
                    };
                    seal_and_advance(&mut tx, seal, &states, &due, until).await?
                }
                Mode::Careful => {
                    numbered.write(&mut tx).await?;
                    None
                }
            };
            self.project(&mut tx, &mut states, &numbered.sealed, batch, &due, mode)
                .await?;
            Ok::<_, anyhow::Error>(moved)
        }
        .await;
        let sealed = numbered.sealed;
        match applied {
            Ok(moved) => {
                if (!sealed.events.is_empty() || until.is_some()) && self.others_waiting() {
                    super::signal::projected(&mut tx).await?;
                }
                tx.commit().await?;
                if let Some(floor) = moved {
                    let mut state = self
                        .floor
                        .lock()
                        .expect("the floor's lock is never poisoned");
                    state.moved(floor, &horizon);
                }
                Ok(self.publish(number, &sealed, &states, until))
            }
            Err(error) => {
                tx.rollback().await?;
                Err(error)
            }
        }
    }

    /// Publishes the progress of committed cycle `number`.
    fn publish(
        &self,
        number: u64,
        sealed: &Sealed,
        states: &[State<'_>],
        until: Option<i64>,
    ) -> Cycle {
        let projected = states
            .iter()
            .filter(|s| !s.failing)
            .map(|s| s.position)
            .min()
            .unwrap_or(sealed.head);
        self.progress.send_modify(|progress| {
            if sealed.complete && number > progress.sealed_cycle {
                progress.sealed_cycle = number;
                progress.sealed_head = sealed.head;
            }
            progress.projected = projected;
        });
        metrics::gauge!("sandbox_log_head").set(sealed.head as f64);
        for state in states {
            metrics::gauge!("sandbox_projection_lag_events", "projection" => state.projection.name())
                .set((sealed.head - state.position) as f64);
        }
        let more = !sealed.complete || until.is_some_and(|u| u < sealed.head);
        Cycle {
            sealed: sealed.events.len(),
            head: sealed.head,
            more,
        }
    }

    /// This cycle's batch: from the lowest due checkpoint, at most `project_batch`
    /// events, not past the head; `None` when no projection is due.
    fn batch(&self, states: &[State<'_>], due: &Due) -> Option<Batch> {
        let from = states
            .iter()
            .filter(|s| due.is(s))
            .map(|s| s.position)
            .min()?;
        let until = due.head.min(from + self.config.project_batch);
        Some(Batch { from, until })
    }

    /// Applies the batch ending at `until` to every due projection. In the steady
    /// state the batch is exactly what was just sealed, and is not read again. A fast
    /// cycle's checkpoints were advanced with the seal; a careful cycle advances those
    /// that applied their batch here.
    async fn project(
        &self,
        tx: &mut PgConnection,
        states: &mut [State<'_>],
        sealed: &Sealed,
        batch: Option<Batch>,
        due: &Due,
        mode: Mode,
    ) -> anyhow::Result<()> {
        let Some(Batch { from, until }) = batch else {
            return Ok(());
        };
        let just_sealed = sealed
            .events
            .first()
            .is_some_and(|e| e.position == from + 1)
            && until == sealed.head;
        let read;
        let events: &[StoredEvent] = if just_sealed {
            &sealed.events
        } else {
            read = log::read_range(tx, from, until).await?;
            &read
        };
        let mut advanced = Vec::new();
        for state in states.iter_mut().filter(|s| due.is(s)) {
            let batch = &events[events.partition_point(|e| e.position <= state.position)..];
            let types = state.projection.aggregate_types();
            let relevant = batch
                .iter()
                .any(|e| types.contains(&e.aggregate_type.as_str()));
            if relevant && !apply(tx, state, batch, mode).await? {
                continue;
            }
            advanced.push(state.projection.name());
            state.position = until;
            state.failing = false;
        }
        if mode == Mode::Careful {
            sqlx::query(ADVANCE_SQL)
                .bind(&advanced)
                .bind(until)
                .execute(&mut *tx)
                .await?;
        }
        Ok(())
    }
}

/// The events a cycle applies: positions after `from`, up to `until`.
#[derive(Debug, Clone, Copy)]
struct Batch {
    from: i64,
    until: i64,
}

/// Which projections a cycle applies its batch to: those behind the head, except a
/// failing one resting between attempts (its last attempt is `updated_at`).
struct Due {
    head: i64,
    backoff: chrono::Duration,
    now: DateTime<Utc>,
}

impl Due {
    fn is(&self, state: &State<'_>) -> bool {
        state.position < self.head
            && !(state.failing && self.now - state.last_attempt < self.backoff)
    }
}

/// What a fast cycle seals: its numbered rows, and the seal floor it may write.
struct Seal<'a> {
    numbered: &'a Numbered,
    floor: Option<i64>,
}

/// A fast cycle's write before applying: the seal, every due checkpoint's advance to
/// `until` and the seal floor, in one statement (a failure later rolls all back).
/// Returns the floor written, if the statement ran.
async fn seal_and_advance(
    tx: &mut PgConnection,
    seal: Seal<'_>,
    states: &[State<'_>],
    due: &Due,
    until: Option<i64>,
) -> anyhow::Result<Option<i64>> {
    let numbered = seal.numbered;
    let advance: Vec<&str> = match until {
        Some(_) => states
            .iter()
            .filter(|s| due.is(s))
            .map(|s| s.projection.name())
            .collect(),
        None => Vec::new(),
    };
    let ran = !numbered.sealed.events.is_empty() || !advance.is_empty();
    if ran {
        numbered
            .bind(sqlx::query(&SEAL_AND_ADVANCE_SQL))
            .bind(advance)
            .bind(until.unwrap_or(due.head))
            .bind(seal.floor)
            .execute(&mut *tx)
            .await?;
    }
    numbered.written(tx).await?;
    Ok(seal.floor.filter(|_| ran))
}

/// Applies one projection's batch; `false` when it failed (careful mode only).
async fn apply(
    tx: &mut PgConnection,
    state: &mut State<'_>,
    batch: &[StoredEvent],
    mode: Mode,
) -> anyhow::Result<bool> {
    if mode == Mode::Fast {
        return match state.projection.apply(tx, batch).await {
            Ok(()) => Ok(true),
            Err(error) => {
                tracing::debug!(projection = state.projection.name(), %error, "fast cycle failed");
                Err(RetryCarefully.into())
            }
        };
    }
    let mut savepoint = Connection::begin(&mut *tx).await?;
    match state.projection.apply(&mut savepoint, batch).await {
        Ok(()) => {
            savepoint.commit().await?;
            Ok(true)
        }
        Err(error) => {
            savepoint.rollback().await?;
            let message = format!("{error:#}");
            tracing::error!(projection = state.projection.name(), error = %message, "projection failed");
            sqlx::query(
                "UPDATE projection_checkpoints
                    SET failing_since = coalesce(failing_since, now()), updated_at = now(), last_error = $2
                  WHERE name = $1",
            )
            .bind(state.projection.name())
            .bind(message)
            .execute(&mut *tx)
            .await?;
            state.failing = true;
            Ok(false)
        }
    }
}
