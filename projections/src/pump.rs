//! The pump: seals new events and applies them to every projection, checkpointed.
//!
//! One cycle is one transaction: take the pump lock, seal what committed, apply the
//! next batch to each projection that is behind (each in a savepoint, with its
//! checkpoint written beside its rows), commit. A projection that fails is rolled back
//! to its savepoint, marked failing and retried later; the others go on. Only one
//! process pumps a database at a time (an advisory lock); the others wait for it.
//!
//! After each cycle the pump publishes its [`Progress`] in memory. A command that
//! knows the transaction id of its append can tell from it alone, without a query,
//! when its events are sealed and projected; when another process pumps, the wait
//! falls back to reading positions and checkpoints from the database.

use crate::log::{self, StoredEvent};
use crate::projection::Projection;
use crate::sealer::{self, HEAD_SQL, Head};
use crate::store::EventKey;
use chrono::{DateTime, Utc};
use sqlx::types::Json;
use sqlx::{Connection, PgConnection, PgPool};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Advisory lock key held by the process that pumps.
const PUMP_LOCK: i64 = 0x5A4D_B0C5;

/// Tuning of the pump.
#[derive(Debug, Clone, Copy)]
pub struct PumpConfig {
    /// Events sealed per cycle at most.
    pub seal_batch: i64,
    /// Events applied per projection per cycle at most.
    pub project_batch: i64,
    /// How often an idle pump looks for events appended by other processes.
    pub poll_interval: Duration,
    /// How long a request waits for its events to be projected.
    pub wait_timeout: Duration,
    /// How long a failing projection rests before it is retried.
    pub failure_backoff: Duration,
}

impl Default for PumpConfig {
    fn default() -> Self {
        Self {
            seal_batch: 5_000,
            project_batch: 5_000,
            poll_interval: Duration::from_millis(250),
            wait_timeout: Duration::from_secs(10),
            failure_backoff: Duration::from_secs(5),
        }
    }
}

/// What one cycle did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cycle {
    /// Events sealed.
    pub sealed: usize,
    /// The log head after sealing.
    pub head: i64,
    /// Whether more work is already known to be waiting.
    pub more: bool,
}

/// What this process's pump has sealed and projected so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Every append of a transaction with a smaller id is sealed.
    pub horizon: u64,
    /// The log head when that horizon was reached.
    pub horizon_head: i64,
    /// The lowest checkpoint among healthy projections.
    pub projected: i64,
}

impl Progress {
    /// Whether the appends of this transaction are sealed and projected.
    pub fn covers(&self, txid: u64) -> bool {
        txid < self.horizon && self.projected >= self.horizon_head
    }
}

/// The sealer and projector loop of one process.
pub struct Pump {
    pool: PgPool,
    projections: Vec<Arc<dyn Projection>>,
    names: Vec<String>,
    kick: Notify,
    progress: watch::Sender<Progress>,
    config: PumpConfig,
}

/// The first row of a cycle: the sealed head, the horizon and the checkpoints.
#[derive(sqlx::FromRow)]
struct Header {
    position: Option<i64>,
    chain_hash: Option<Vec<u8>>,
    horizon: String,
    checkpoints: Json<Vec<Checkpoint>>,
}

#[derive(serde::Deserialize)]
struct Checkpoint {
    name: String,
    position: i64,
    failing_since: Option<DateTime<Utc>>,
    updated_at: DateTime<Utc>,
}

impl Pump {
    /// A pump over the given projections.
    pub fn new(
        pool: PgPool,
        projections: Vec<Arc<dyn Projection>>,
        config: PumpConfig,
    ) -> Arc<Self> {
        let names = projections.iter().map(|p| p.name().to_string()).collect();
        let (progress, _) = watch::channel(Progress::default());
        Arc::new(Self {
            pool,
            projections,
            names,
            kick: Notify::new(),
            progress,
            config,
        })
    }

    /// The projections it drives.
    pub fn projections(&self) -> &[Arc<dyn Projection>] {
        &self.projections
    }

    /// Creates missing checkpoint rows (a new projection starts at position 0).
    pub async fn register(&self) -> anyhow::Result<()> {
        sqlx::query(
            "INSERT INTO projection_checkpoints (name) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING",
        )
        .bind(&self.names)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Asks the loop to run a cycle now.
    pub fn kick(&self) {
        self.kick.notify_one();
    }

    /// Registers the projections and runs the loop until `cancel` fires.
    pub async fn start(
        self: &Arc<Self>,
        cancel: CancellationToken,
    ) -> anyhow::Result<JoinHandle<()>> {
        self.register().await?;
        let pump = Arc::clone(self);
        Ok(tokio::spawn(async move {
            loop {
                pump.drain().await;
                tokio::select! {
                    _ = cancel.cancelled() => break,
                    _ = pump.kick.notified() => {}
                    _ = tokio::time::sleep(pump.config.poll_interval) => {}
                }
            }
        }))
    }

    /// Runs cycles until nothing is left (or another process holds the lock).
    pub async fn drain(&self) {
        loop {
            match self.cycle().await {
                Ok(Some(cycle)) if cycle.more => continue,
                Ok(_) => break,
                Err(error) => {
                    tracing::error!(error = format!("{error:#}"), "pump cycle failed");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    break;
                }
            }
        }
    }

    /// One transaction: seal, then project. `None` when another process pumps.
    pub async fn cycle(&self) -> anyhow::Result<Option<Cycle>> {
        let mut tx = self.pool.begin().await?;
        let locked: bool = sqlx::query_scalar("SELECT pg_try_advisory_xact_lock($1)")
            .bind(PUMP_LOCK)
            .fetch_one(&mut *tx)
            .await?;
        if !locked {
            return Ok(None);
        }
        // The head, the horizon and every checkpoint in one round trip.
        let header: Header = sqlx::query_as(&format!(
                "WITH head AS ({HEAD_SQL})
                 SELECT head.*, (SELECT coalesce(json_agg(c), '[]') FROM projection_checkpoints c WHERE c.name = ANY($1)) AS checkpoints
                   FROM head"
            ))
            .bind(&self.names)
            .fetch_one(&mut *tx)
            .await?;
        let head = Head::from_columns(header.position, header.chain_hash, &header.horizon)?;
        let checkpoints = header.checkpoints.0;
        let sealed = sealer::seal(&mut tx, head, self.config.seal_batch).await?;
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
        let until = self.project(&mut tx, &mut states, &sealed).await?;
        tx.commit().await?;

        let projected = states
            .iter()
            .filter(|s| !s.failing)
            .map(|s| s.position)
            .min()
            .unwrap_or(sealed.head);
        self.progress.send_modify(|progress| {
            if sealed.complete && sealed.horizon > progress.horizon {
                progress.horizon = sealed.horizon;
                progress.horizon_head = sealed.head;
            }
            progress.projected = projected;
        });
        metrics::gauge!("sandbox_log_head").set(sealed.head as f64);
        for state in &states {
            metrics::gauge!("sandbox_projection_lag_events", "projection" => state.projection.name())
                .set((sealed.head - state.position) as f64);
        }
        let more = !sealed.complete || until.is_some_and(|u| u < sealed.head);
        Ok(Some(Cycle {
            sealed: sealed.events.len(),
            head: sealed.head,
            more,
        }))
    }

    /// Applies the next batch to every projection that is behind and not resting;
    /// returns the batch end, if there was a batch. In the steady state the batch is
    /// exactly what was just sealed, and is not read again.
    async fn project(
        &self,
        tx: &mut PgConnection,
        states: &mut [State<'_>],
        sealed: &sealer::Sealed,
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
            if !batch
                .iter()
                .any(|e| types.contains(&e.aggregate_type.as_str()))
            {
                advanced.push(state.projection.name());
                state.position = until;
                continue;
            }
            let mut savepoint = Connection::begin(&mut *tx).await?;
            match state.projection.apply(&mut savepoint, batch).await {
                Ok(()) => {
                    savepoint.commit().await?;
                    advanced.push(state.projection.name());
                    state.position = until;
                    state.failing = false;
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
                }
            }
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

    /// Waits until the event is sealed and every healthy projection has applied it.
    /// `txid`, when known, is the transaction that appended it, which lets the wait
    /// use the in-memory progress. A timeout is logged, not returned: the command has
    /// committed either way.
    pub async fn wait_for(&self, key: &EventKey, txid: Option<u64>) {
        let deadline = tokio::time::Instant::now() + self.config.wait_timeout;
        let mut progress = self.progress.subscribe();
        // Without a transaction id only the database can tell; with one, it is the
        // fallback for when another process pumps.
        let mut checked_database = txid.map(|_| tokio::time::Instant::now());
        loop {
            if txid.is_some_and(|txid| progress.borrow_and_update().covers(txid)) {
                return;
            }
            // Another process may be the one pumping: then only the database knows.
            if checked_database.is_none_or(|at| at.elapsed() >= Duration::from_millis(50)) {
                checked_database = Some(tokio::time::Instant::now());
                match self.projected(key).await {
                    Ok(true) => return,
                    Ok(false) => {}
                    Err(error) => {
                        tracing::error!(%error, "cannot read projection progress");
                        return;
                    }
                }
            }
            self.kick();
            tokio::select! {
                _ = progress.changed() => {}
                _ = tokio::time::sleep(Duration::from_millis(50)) => {}
                _ = tokio::time::sleep_until(deadline) => {
                    tracing::error!(?key, "read models did not reach the command's events in time");
                    return;
                }
            }
        }
    }

    async fn projected(&self, key: &EventKey) -> sqlx::Result<bool> {
        let row: Option<(Option<i64>, Option<i64>)> = sqlx::query_as(
            "SELECT e.position,
                    (SELECT min(c.position) FROM projection_checkpoints c
                      WHERE c.failing_since IS NULL AND c.name = ANY($4))
               FROM events e
              WHERE e.aggregate_type = $1 AND e.aggregate_id = $2 AND e.sequence = $3",
        )
        .bind(&key.aggregate_type)
        .bind(&key.aggregate_id)
        .bind(key.sequence)
        .bind(&self.names)
        .fetch_optional(&self.pool)
        .await?;
        Ok(match row {
            Some((Some(position), Some(projected))) => projected >= position,
            Some((Some(_), None)) => true,
            _ => false,
        })
    }
}

/// A projection's checkpoint during a cycle.
struct State<'a> {
    projection: &'a Arc<dyn Projection>,
    position: i64,
    failing: bool,
    last_attempt: DateTime<Utc>,
}
