//! The pump: seals new events and applies them to every projection, checkpointed.
//!
//! One cycle is one transaction: take the pump lock, seal what committed, apply the
//! next batch to each projection that is behind (each in a savepoint, with its
//! checkpoint written beside its rows), commit. A projection that fails is rolled back
//! to its savepoint, marked failing and retried later; the others go on. Only one
//! process pumps a database at a time (an advisory lock); the others wait for it.

use crate::log;
use crate::projection::Projection;
use crate::sealer;
use crate::store::EventKey;
use chrono::{DateTime, Utc};
use sqlx::{Connection, PgPool};
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

/// The sealer and projector loop of one process.
pub struct Pump {
    pool: PgPool,
    projections: Vec<Arc<dyn Projection>>,
    names: Vec<String>,
    kick: Notify,
    progress: watch::Sender<u64>,
    config: PumpConfig,
}

#[derive(sqlx::FromRow)]
struct Checkpoint {
    name: String,
    position: i64,
    failing_since: Option<DateTime<Utc>>,
}

impl Pump {
    /// A pump over the given projections.
    pub fn new(pool: PgPool, projections: Vec<Arc<dyn Projection>>, config: PumpConfig) -> Arc<Self> {
        let names = projections.iter().map(|p| p.name().to_string()).collect();
        let (progress, _) = watch::channel(0);
        Arc::new(Self { pool, projections, names, kick: Notify::new(), progress, config })
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
    pub async fn start(self: &Arc<Self>, cancel: CancellationToken) -> anyhow::Result<JoinHandle<()>> {
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
        let sealed = sealer::seal(&mut tx, self.config.seal_batch).await?;
        let checkpoints: Vec<Checkpoint> = sqlx::query_as(
            "SELECT name, position, failing_since FROM projection_checkpoints WHERE name = ANY($1)",
        )
        .bind(&self.names)
        .fetch_all(&mut *tx)
        .await?;
        let backoff = chrono::Duration::from_std(self.config.failure_backoff)?;
        let due: Vec<(&Arc<dyn Projection>, i64)> = self
            .projections
            .iter()
            .filter_map(|p| {
                let cp = checkpoints.iter().find(|c| c.name == p.name())?;
                let resting = cp.failing_since.is_some_and(|since| Utc::now() - since < backoff);
                (cp.position < sealed.head && !resting).then_some((p, cp.position))
            })
            .collect();
        let mut positions: Vec<(&'static str, i64)> = checkpoints
            .iter()
            .filter_map(|c| self.projections.iter().find(|p| p.name() == c.name).map(|p| (p.name(), c.position)))
            .collect();
        let mut more = sealed.count as i64 == self.config.seal_batch;
        if let Some(from) = due.iter().map(|(_, cp)| *cp).min() {
            let until = sealed.head.min(from + self.config.project_batch);
            more |= until < sealed.head;
            let events = log::read_range(&mut tx, from, until).await?;
            for (projection, cp) in due {
                let start = events.partition_point(|e| e.position <= cp);
                let batch = &events[start..];
                let mut savepoint = Connection::begin(&mut *tx).await?;
                match projection.apply(&mut savepoint, batch).await {
                    Ok(()) => {
                        sqlx::query(
                            "UPDATE projection_checkpoints
                                SET position = $2, updated_at = now(), failing_since = NULL, last_error = NULL
                              WHERE name = $1",
                        )
                        .bind(projection.name())
                        .bind(until)
                        .execute(&mut *savepoint)
                        .await?;
                        savepoint.commit().await?;
                        if let Some(entry) = positions.iter_mut().find(|(name, _)| *name == projection.name()) {
                            entry.1 = until;
                        }
                    }
                    Err(error) => {
                        savepoint.rollback().await?;
                        let message = format!("{error:#}");
                        tracing::error!(projection = projection.name(), error = %message, "projection failed");
                        sqlx::query(
                            "UPDATE projection_checkpoints
                                SET failing_since = coalesce(failing_since, now()), last_error = $2
                              WHERE name = $1",
                        )
                        .bind(projection.name())
                        .bind(message)
                        .execute(&mut *tx)
                        .await?;
                    }
                }
            }
        }
        tx.commit().await?;
        self.progress.send_modify(|n| *n += 1);
        metrics::gauge!("sandbox_log_head").set(sealed.head as f64);
        for (name, position) in positions {
            metrics::gauge!("sandbox_projection_lag_events", "projection" => name).set((sealed.head - position) as f64);
        }
        Ok(Some(Cycle { sealed: sealed.count, head: sealed.head, more }))
    }

    /// Waits until the event is sealed and every healthy projection has applied it.
    /// A timeout is logged, not returned: the command has committed either way.
    pub async fn wait_for(&self, key: &EventKey) {
        let deadline = tokio::time::Instant::now() + self.config.wait_timeout;
        let mut progress = self.progress.subscribe();
        loop {
            progress.borrow_and_update();
            match self.projected(key).await {
                Ok(true) => return,
                Ok(false) => {}
                Err(error) => {
                    tracing::error!(%error, "cannot read projection progress");
                    return;
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
