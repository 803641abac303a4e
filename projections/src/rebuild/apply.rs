//! Applying a batch of the log to shadow tables.
//!
//! The projection's own `apply` runs unchanged: its table names are unqualified, and
//! for the duration of the batch the transaction's `search_path` names the shadow
//! schema alone, so every table it touches is a shadow table (and one it should not
//! touch does not resolve at all). A projection that calls SQL functions of the live
//! schema gets the live path after the shadow schema. The shadow's checkpoint is written in the same
//! transaction, so a batch is applied exactly once even when the process dies.

use crate::digest::quote;
use crate::log;
use crate::projection::{MemoryFold, Projection};
use sqlx::PgConnection;

/// Where a rebuild writes.
pub struct Shadow<'a> {
    /// The projection being rebuilt.
    pub projection: &'a dyn Projection,
    /// Its shadow schema.
    pub schema: &'a str,
    /// The session's normal `search_path`, restored after the projection ran.
    pub live_path: &'a str,
}

impl Shadow<'_> {
    /// Applies the events in `(after, until]` to the shadow tables and moves the
    /// shadow checkpoint to `until`, inside the caller's transaction. Returns the
    /// number of events the projection received.
    pub async fn apply(
        &self,
        tx: &mut PgConnection,
        after: i64,
        until: i64,
    ) -> anyhow::Result<usize> {
        let events =
            log::read_range_of(tx, after, until, self.projection.aggregate_types()).await?;
        if !events.is_empty() {
            self.enter(tx).await?;
            self.projection.apply(tx, &events).await?;
            set_search_path(tx, self.live_path).await?;
        }
        self.checkpoint(tx, until).await?;
        Ok(events.len())
    }

    /// Writes the rows a [`MemoryFold`] holds (the log up to `until`) into the empty
    /// shadow tables and moves the shadow checkpoint to `until`, inside the caller's
    /// transaction.
    pub async fn write(
        &self,
        tx: &mut PgConnection,
        fold: Box<dyn MemoryFold>,
        until: i64,
    ) -> anyhow::Result<()> {
        self.enter(tx).await?;
        fold.write(tx).await?;
        set_search_path(tx, self.live_path).await?;
        self.checkpoint(tx, until).await
    }

    /// Aims the transaction's unqualified names at the shadow tables.
    async fn enter(&self, tx: &mut PgConnection) -> sqlx::Result<()> {
        let path = if self.projection.calls_live_functions() {
            format!("{}, {}", quote(self.schema), self.live_path)
        } else {
            quote(self.schema)
        };
        set_search_path(tx, &path).await
    }

    /// Records that the shadow reflects the log up to `until`.
    async fn checkpoint(&self, tx: &mut PgConnection, until: i64) -> anyhow::Result<()> {
        sqlx::query(
            "UPDATE projection_rebuilds SET position = $2, updated_at = now() WHERE name = $1",
        )
        .bind(self.projection.name())
        .bind(until)
        .execute(&mut *tx)
        .await?;
        Ok(())
    }
}

/// Sets the transaction's `search_path`.
async fn set_search_path(tx: &mut PgConnection, path: &str) -> sqlx::Result<()> {
    sqlx::query("SELECT set_config('search_path', $1, true)")
        .bind(path)
        .execute(tx)
        .await
        .map(|_| ())
}
