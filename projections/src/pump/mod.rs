//! The pump: seals new events and applies them to every projection, checkpointed.
//!
//! One cycle is one transaction: seal what committed, apply the next batch to each
//! projection that is behind (with its checkpoint written beside its rows), commit
//! (see `cycle.rs`). Only one process pumps a database at a time: the leader holds a
//! session advisory lock on a dedicated connection (see `leader.rs`); the others
//! wait for it.
//!
//! Cycles are numbered in the order they start. A command takes a [`Ticket`] (the
//! number of the newest cycle started) right after its append committed: every
//! cycle with a larger number took its snapshot after that commit, so once such a
//! cycle has sealed everything it saw, the command's events are sealed. After each
//! cycle the pump publishes its [`Progress`] in memory, from which a command tells,
//! without a query, when its events are sealed and projected; when another process
//! pumps, the wait falls back to reading positions and checkpoints from the database,
//! woken by the leader's signal that a cycle committed (see `signal.rs`).

mod cycle;
mod floor;
mod leader;
mod signal;

use crate::projection::Projection;
use crate::store::EventKey;
use leader::Leader;
use sqlx::PgPool;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use std::time::Instant;
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

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

/// The number of the newest pump cycle started when an append had committed: any
/// cycle numbered higher saw the append.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Ticket(u64);

/// What this process's pump has sealed and projected so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// The newest cycle that sealed everything committed before it started.
    pub sealed_cycle: u64,
    /// The log head that cycle left.
    pub sealed_head: i64,
    /// The lowest checkpoint among healthy projections.
    pub projected: i64,
}

impl Progress {
    /// Whether an append that committed before `ticket` was taken is sealed and
    /// projected.
    pub fn covers(&self, ticket: Ticket) -> bool {
        self.sealed_cycle > ticket.0 && self.projected >= self.sealed_head
    }
}

/// The read models did not reach a committed command's events within the wait.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the read models did not reach {key:?} within {waited:?}")]
pub struct NotYetVisible {
    /// The command's last event.
    pub key: EventKey,
    /// How long the command waited.
    pub waited: Duration,
}

/// The sealer and projector loop of one process.
pub struct Pump {
    pool: PgPool,
    projections: Vec<Arc<dyn Projection>>,
    names: Vec<String>,
    kick: Notify,
    cycles_started: AtomicU64,
    progress: watch::Sender<Progress>,
    config: PumpConfig,
    leader: tokio::sync::Mutex<Leader>,
    /// The seal floor in the making (see `floor.rs`).
    floor: std::sync::Mutex<floor::Floor>,
    /// Whether this process holds the leadership (as of its last attempt).
    leading: AtomicBool,
    /// Woken when the leader (maybe another process) committed a cycle.
    elsewhere: Notify,
    /// This process's name in append signals (see `signal.rs`).
    origin: String,
    /// When another process last signalled an append (ms since `born`; 0: never).
    heard_append_at: AtomicU64,
    born: Instant,
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
            cycles_started: AtomicU64::new(0),
            progress,
            config,
            leader: tokio::sync::Mutex::new(Leader::default()),
            floor: std::sync::Mutex::default(),
            leading: AtomicBool::new(false),
            elsewhere: Notify::new(),
            origin: uuid::Uuid::new_v4().simple().to_string(),
            heard_append_at: AtomicU64::new(0),
            born: Instant::now(),
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

    /// The progress of this process's cycles, changing with each (workers wake on
    /// it to claim work the read models have just come to show).
    pub fn cycles(&self) -> watch::Receiver<Progress> {
        self.progress.subscribe()
    }

    /// Asks the loop to run a cycle now.
    pub fn kick(&self) {
        self.kick.notify_one();
    }

    /// The ticket of an append that has just committed (see [`Ticket`]).
    fn ticket(&self) -> Ticket {
        Ticket(self.cycles_started.load(Ordering::SeqCst))
    }

    /// Whether this process is the one that pumps (as of its last cycle).
    pub fn is_leader(&self) -> bool {
        self.leading.load(Ordering::SeqCst)
    }

    /// Records that another process signalled an append (it is waiting for it).
    fn heard_append(&self) {
        let now = self.born.elapsed().as_millis() as u64;
        self.heard_append_at.store(now.max(1), Ordering::SeqCst);
    }

    /// Whether another process may be waiting for this one's cycles: it signalled
    /// an append within the last minute. A process alone pays nothing for the
    /// signal its cycles would otherwise send.
    fn others_waiting(&self) -> bool {
        let at = self.heard_append_at.load(Ordering::SeqCst);
        at > 0 && self.born.elapsed().as_millis() as u64 - at < 60_000
    }

    /// Called right after an append committed: takes its ticket and gets a cycle
    /// going, here when this process pumps, else by signalling the leader.
    pub async fn appended(&self) -> Ticket {
        let ticket = self.ticket();
        self.kick();
        if !self.is_leader()
            && let Err(error) = signal::appended(&self.pool, &self.origin).await
        {
            tracing::warn!(%error, "cannot signal the leader; it finds the append at its next poll");
        }
        ticket
    }

    /// Whether a cycle of this process has started since `ticket` was taken (so it
    /// sees the ticket's append).
    fn started_since(&self, ticket: Ticket) -> bool {
        self.cycles_started.load(Ordering::SeqCst) > ticket.0
    }

    /// Numbers a cycle that is about to read the log.
    fn start_cycle(&self) -> u64 {
        self.cycles_started.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// How long a command waits for the read models.
    pub fn wait_timeout(&self) -> Duration {
        self.config.wait_timeout
    }

    /// Registers the projections and runs the loop until `cancel` fires.
    pub async fn start(
        self: &Arc<Self>,
        cancel: CancellationToken,
    ) -> anyhow::Result<JoinHandle<()>> {
        self.register().await?;
        tokio::spawn(signal::listen(
            Arc::downgrade(self),
            self.pool.clone(),
            cancel.clone(),
        ));
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

    /// Waits until the event is sealed and every healthy projection has applied it.
    /// `ticket`, when known, was taken right after the append committed, which lets
    /// the wait use the in-memory progress. On timeout the command has committed all
    /// the same: the error says so, and the caller must not report the write as lost.
    pub async fn wait_for(
        &self,
        key: &EventKey,
        ticket: Option<Ticket>,
    ) -> Result<(), NotYetVisible> {
        let started = tokio::time::Instant::now();
        let deadline = started + self.config.wait_timeout;
        let mut progress = self.progress.subscribe();
        // Without a ticket only the database can tell; with one, it is the fallback
        // for when another process pumps.
        let mut checked_database = ticket.map(|_| tokio::time::Instant::now());
        let mut signalled = false;
        loop {
            if ticket.is_some_and(|ticket| progress.borrow_and_update().covers(ticket)) {
                return Ok(());
            }
            // Another process may be the one pumping: then only the database knows.
            if signalled
                || checked_database.is_none_or(|at| at.elapsed() >= Duration::from_millis(50))
            {
                signalled = false;
                checked_database = Some(tokio::time::Instant::now());
                match self.projected(key).await {
                    Ok(true) => return Ok(()),
                    Ok(false) => {}
                    Err(error) => tracing::warn!(%error, "cannot read projection progress"),
                }
            }
            tokio::select! {
                _ = progress.changed() => {}
                _ = self.elsewhere.notified() => signalled = !self.is_leader(),
                // The append kicked the loop itself; a kick after the cycle that saw
                // it started would only queue an empty cycle. Kicked again, the loop
                // of a process that does not pump tries to take over.
                _ = tokio::time::sleep(Duration::from_millis(50)) => {
                    if !ticket.is_some_and(|ticket| self.started_since(ticket)) {
                        self.kick();
                    }
                }
                _ = tokio::time::sleep_until(deadline) => {
                    metrics::counter!("sandbox_read_your_writes_timeouts_total").increment(1);
                    tracing::error!(?key, "read models did not reach the command's events in time");
                    return Err(NotYetVisible { key: key.clone(), waited: started.elapsed() });
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
