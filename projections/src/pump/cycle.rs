//! One pump cycle: seal what committed, then project it, in one transaction.
//!
//! A cycle first runs fast: each projection applies its batch directly in the
//! cycle's transaction. If one fails, the whole transaction is rolled back and the
//! cycle runs again carefully: each projection in a savepoint, so the failing one is
//! rolled back alone, marked failing and retried after a rest, while the others go on.
//! Each projection's checkpoint is written in the same transaction as its rows.

use super::{Cycle, Pump};
use crate::log::{self, StoredEvent};
use crate::projection::Projection;
use crate::sealer::{self, HEAD_SQL, Head, Sealed};
use chrono::{DateTime, Utc};
use sqlx::types::Json;
use sqlx::{Connection, PgConnection};
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// The first row of a cycle: the sealed head and the checkpoints.
#[derive(sqlx::FromRow)]
struct Header {
    position: Option<i64>,
    chain_hash: Option<Vec<u8>>,
    checkpoints: Json<Vec<Checkpoint>>,
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
        // The head and every checkpoint in one round trip.
        let header: Header = sqlx::query_as(&format!(
            "WITH head AS ({HEAD_SQL})
             SELECT head.*, (SELECT coalesce(json_agg(c), '[]') FROM projection_checkpoints c
                              WHERE c.name = ANY($1)) AS checkpoints
               FROM head"
        ))
        .bind(&self.names)
        .fetch_one(&mut *tx)
        .await?;
        let head = Head::from_columns(header.position, header.chain_hash);
        let sealed = sealer::seal(&mut tx, head, self.config.seal_batch).await?;
        let mut states: Vec<State> = self
            .projections
            .iter()
            .filter_map(|p| {
                let cp = header.checkpoints.0.iter().find(|c| c.name == p.name())?;
                Some(State {
                    projection: p,
                    position: cp.position,
                    failing: cp.failing_since.is_some(),
                    last_attempt: cp.updated_at,
                })
            })
            .collect();
        match self.project(&mut tx, &mut states, &sealed, mode).await {
            Ok(until) => {
                if (!sealed.events.is_empty() || until.is_some()) && self.others_waiting() {
                    super::signal::projected(&mut tx).await?;
                }
                tx.commit().await?;
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

    /// Applies the next batch to every projection that is behind and not resting;
    /// returns the batch end, if there was a batch. In the steady state the batch is
    /// exactly what was just sealed, and is not read again.
    async fn project(
        &self,
        tx: &mut PgConnection,
        states: &mut [State<'_>],
        sealed: &Sealed,
        mode: Mode,
    ) -> anyhow::Result<Option<i64>> {
        let head = sealed.head;
        let backoff = chrono::Duration::from_std(self.config.failure_backoff)?;
        let now = Utc::now();
        // A failing projection rests between attempts (its last attempt is `updated_at`).
        let due =
            |s: &State<'_>| s.position < head && !(s.failing && now - s.last_attempt < backoff);
        let Some(from) = states.iter().filter(|s| due(s)).map(|s| s.position).min() else {
            return Ok(None);
        };
        let until = head.min(from + self.config.project_batch);
        let just_sealed = sealed
            .events
            .first()
            .is_some_and(|e| e.position == from + 1)
            && until == head;
        let read;
        let events: &[StoredEvent] = if just_sealed {
            &sealed.events
        } else {
            read = log::read_range(tx, from, until).await?;
            &read
        };
        let mut advanced = Vec::new();
        for state in states.iter_mut().filter(|s| due(s)) {
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
        sqlx::query(
            "UPDATE projection_checkpoints
                SET position = $2, updated_at = now(), failing_since = NULL, last_error = NULL
              WHERE name = ANY($1)",
        )
        .bind(&advanced)
        .bind(until)
        .execute(&mut *tx)
        .await?;
        Ok(Some(until))
    }
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
