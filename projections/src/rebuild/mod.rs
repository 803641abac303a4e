//! Rebuilding a projection without downtime, and building one as it stood at a
//! position (see `docs/decisions/0003-projection-rebuild.md`).
//!
//! A rebuild copies the projection's live tables empty into a shadow schema, records
//! itself in `projection_rebuilds` (the shadow's own checkpoint) and replays the log
//! from position 0 into the shadow tables, batch by batch, while the pump keeps the
//! live tables current. Close to the head it swaps the shadow tables in, in one
//! transaction ([`swap`]). A point-in-time build stops at its position and leaves its
//! tables in the schema it was given. An interrupted rebuild is resumed from its
//! checkpoint or discarded; the live tables are only ever touched by the swap.
//! One process works on a projection's rebuild at a time (an advisory lock).

mod apply;
mod place;
mod shadow;
mod status;
mod swap;

pub use shadow::check_schema_name;
pub use status::{ProjectionStatus, RebuildStatus, status};

use crate::log;
use crate::projection::{MemoryFold, Projection};
use apply::Shadow;
use chrono::{DateTime, Utc};
use place::{Place, begin, drop_shadow, take_up};
use sqlx::{ConnectOptions, Connection, PgConnection, PgPool};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// First key of the advisory locks held by rebuilds (the second is the hash of the
/// projection's name).
const LOCK_CLASS: i32 = 0x5A4D;

/// Events read and applied per transaction by default.
pub const DEFAULT_BATCH: i64 = 20_000;

/// The rows a [`MemoryFold`] may hold by default before the rebuild writes them and
/// goes on batch by batch (a directory row takes ~200 bytes in memory).
pub const MEMORY_FOLD_ROWS: usize = 2_000_000;

/// What a new rebuild produces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// New live tables, swapped in at the head.
    Swap,
    /// The read model as it stood at `position`, left in `schema`.
    Until {
        /// The last position applied.
        position: i64,
        /// The schema its tables are built in.
        schema: String,
    },
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The rebuilt tables are live, reflecting this position.
    Swapped(i64),
    /// The point-in-time tables are complete in their schema.
    Built {
        /// The position they reflect.
        position: i64,
        /// Where they are.
        schema: String,
    },
    /// Stopped on request at this position; resume or discard it later.
    Interrupted(i64),
}

/// A rebuild this process works on.
pub struct Rebuild {
    projection: Arc<dyn Projection>,
    conn: PgConnection,
    schema: String,
    until: Option<i64>,
    position: i64,
    live: String,
    live_path: String,
    batch: i64,
    memory_rows: usize,
}

impl Rebuild {
    /// Starts a new rebuild: creates the shadow tables and the rebuild's checkpoint.
    /// Fails when one is already in progress for the projection.
    pub async fn start(
        pool: &PgPool,
        projection: Arc<dyn Projection>,
        target: Target,
    ) -> anyhow::Result<Self> {
        let (conn, place) = locked(pool, projection.name(), async |conn| {
            begin(conn, &projection, target).await
        })
        .await?;
        Ok(Self::at(projection, conn, place))
    }

    /// Takes up an interrupted rebuild where its checkpoint stands.
    pub async fn resume(pool: &PgPool, projection: Arc<dyn Projection>) -> anyhow::Result<Self> {
        let (conn, place) = locked(pool, projection.name(), async |conn| {
            take_up(conn, &projection).await
        })
        .await?;
        Ok(Self::at(projection, conn, place))
    }

    /// A rebuild working at `place` on `conn` (which holds its lock).
    fn at(projection: Arc<dyn Projection>, conn: PgConnection, place: Place) -> Self {
        Self {
            projection,
            conn,
            schema: place.schema,
            until: place.until,
            position: place.position,
            live: place.live,
            live_path: place.live_path,
            batch: DEFAULT_BATCH,
            memory_rows: MEMORY_FOLD_ROWS,
        }
    }

    /// Drops an interrupted rebuild's tables and checkpoint; `false` when there was
    /// none. The live tables are not touched.
    pub async fn discard(pool: &PgPool, projection: &dyn Projection) -> anyhow::Result<bool> {
        let (conn, schema) = locked(pool, projection.name(), async |conn| {
            drop_shadow(conn, projection).await
        })
        .await?;
        release(conn, projection.name()).await;
        Ok(schema.is_some())
    }

    /// Sets the number of events per transaction.
    pub fn with_batch(mut self, batch: i64) -> Self {
        self.batch = batch.max(1);
        self
    }

    /// Sets the rows a [`MemoryFold`] may hold before they are written and the
    /// rebuild goes on batch by batch.
    pub fn with_memory_rows(mut self, rows: usize) -> Self {
        self.memory_rows = rows;
        self
    }

    /// The schema the tables are built in.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// The position the shadow tables reflect.
    pub fn position(&self) -> i64 {
        self.position
    }

    /// Applies batches until the target (its position, or the head followed by the
    /// swap) or until `cancel` fires. `progress` receives (position, target) after
    /// each batch. The rebuild's lock is released before it answers.
    pub async fn run(
        mut self,
        cancel: &CancellationToken,
        progress: impl FnMut(i64, i64),
    ) -> anyhow::Result<Outcome> {
        let outcome = self.batches(cancel, progress).await;
        release(self.conn, self.projection.name()).await;
        outcome
    }

    async fn batches(
        &mut self,
        cancel: &CancellationToken,
        mut progress: impl FnMut(i64, i64),
    ) -> anyhow::Result<Outcome> {
        if self.position == 0
            && let Some(fold) = self.projection.memory_fold()
            && let Some(outcome) = self.fold_in_memory(fold, cancel, &mut progress).await?
        {
            return Ok(outcome);
        }
        while let Some((until, target)) = self.next_batch(self.position).await? {
            if cancel.is_cancelled() {
                return Ok(Outcome::Interrupted(self.position));
            }
            let shadow = Shadow {
                projection: self.projection.as_ref(),
                schema: &self.schema,
                live_path: &self.live_path,
            };
            let mut tx = begin_unsynced(&mut self.conn).await?;
            shadow.apply(&mut tx, self.position, until).await?;
            tx.commit().await?;
            self.position = until;
            progress(self.position, target);
        }
        shadow::make_durable(&mut self.conn, self.projection.as_ref(), &self.schema).await?;
        let shadow = Shadow {
            projection: self.projection.as_ref(),
            schema: &self.schema,
            live_path: &self.live_path,
        };
        match self.until {
            Some(position) => {
                sqlx::query("DELETE FROM projection_rebuilds WHERE name = $1")
                    .bind(self.projection.name())
                    .execute(&mut self.conn)
                    .await?;
                Ok(Outcome::Built {
                    position,
                    schema: self.schema.clone(),
                })
            }
            None => {
                let position = swap::swap(&mut self.conn, &shadow, &self.live).await?;
                progress(position, position);
                Ok(Outcome::Swapped(position))
            }
        }
    }
}

impl Rebuild {
    /// The end of the batch after `from` and the target it heads for (the given
    /// position, or the head); `None` once there is nothing left to do before the
    /// end (a swap catches up the last stretch under its lock).
    async fn next_batch(&mut self, from: i64) -> anyhow::Result<Option<(i64, i64)>> {
        let target = match self.until {
            Some(until) => until,
            None => log::head(&mut self.conn).await?,
        };
        let close_enough = if self.until.is_some() { 0 } else { self.batch };
        if target - from <= close_enough {
            return Ok(None);
        }
        Ok(Some((target.min(from + self.batch), target)))
    }

    /// From empty shadow tables: folds batches in memory until the end, until the
    /// fold holds its bound of rows or until `cancel` fires, then writes its rows in
    /// one transaction; batch-by-batch application goes on from there (answers
    /// `Interrupted` when cancelled).
    async fn fold_in_memory(
        &mut self,
        mut fold: Box<dyn MemoryFold>,
        cancel: &CancellationToken,
        progress: &mut impl FnMut(i64, i64),
    ) -> anyhow::Result<Option<Outcome>> {
        let mut folded = self.position;
        let mut interrupted = false;
        while fold.rows() < self.memory_rows {
            let Some((until, target)) = self.next_batch(folded).await? else {
                break;
            };
            if cancel.is_cancelled() {
                interrupted = true;
                break;
            }
            let types = self.projection.aggregate_types();
            let events = log::read_range_of(&mut self.conn, folded, until, types).await?;
            fold.fold(&events)?;
            folded = until;
            progress(folded, target);
        }
        if folded > self.position {
            let shadow = Shadow {
                projection: self.projection.as_ref(),
                schema: &self.schema,
                live_path: &self.live_path,
            };
            let mut tx = begin_unsynced(&mut self.conn).await?;
            shadow.write(&mut tx, fold, folded).await?;
            tx.commit().await?;
            self.position = folded;
        }
        Ok(interrupted.then_some(Outcome::Interrupted(self.position)))
    }
}

/// A rebuild transaction that does not wait for its commit to be flushed: a lost
/// commit only costs a batch that is replayed on resume.
async fn begin_unsynced(
    conn: &mut PgConnection,
) -> sqlx::Result<sqlx::Transaction<'_, sqlx::Postgres>> {
    let mut tx = conn.begin().await?;
    sqlx::query("SET LOCAL synchronous_commit = off")
        .execute(&mut *tx)
        .await?;
    Ok(tx)
}

/// Takes the projection's rebuild lock on a connection of its own and runs `work`
/// on it; answers the connection (still holding the lock) with what `work` gave,
/// or, when `work` failed, releases the lock first.
async fn locked<T>(
    pool: &PgPool,
    name: &str,
    work: impl AsyncFnOnce(&mut PgConnection) -> anyhow::Result<T>,
) -> anyhow::Result<(PgConnection, T)> {
    let mut conn = pool.connect_options().connect().await?;
    let locked: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1, hashtext($2))")
        .bind(LOCK_CLASS)
        .bind(name)
        .fetch_one(&mut conn)
        .await?;
    anyhow::ensure!(locked, "another process is rebuilding {name} right now");
    match work(&mut conn).await {
        Ok(value) => Ok((conn, value)),
        Err(error) => {
            release(conn, name).await;
            Err(error)
        }
    }
}

/// Releases a rebuild's lock and closes its connection. The lock is released by a
/// statement, not left to the server noticing the closed connection, so that
/// whoever takes the rebuild up next (a resume, a discard) may start at once.
async fn release(mut conn: PgConnection, name: &str) {
    let unlocked = sqlx::query("SELECT pg_advisory_unlock($1, hashtext($2))")
        .bind(LOCK_CLASS)
        .bind(name)
        .execute(&mut conn)
        .await;
    if let Err(error) = unlocked {
        tracing::warn!(%error, name, "a rebuild's lock goes with its connection");
    }
    let _ = conn.close().await;
}

/// The last position of the log as it stood at `time`: every event up to it was
/// decided at or before `time` (by metadata `time`).
pub async fn position_at(conn: &mut PgConnection, time: DateTime<Utc>) -> anyhow::Result<i64> {
    let head = log::head(conn).await?;
    let first_after: Option<i64> = sqlx::query_scalar(
        "SELECT min(position) FROM events
          WHERE position IS NOT NULL AND (metadata->>'time')::timestamptz > $1",
    )
    .bind(time)
    .fetch_one(conn)
    .await?;
    Ok(first_after.map_or(head, |p| p - 1))
}
