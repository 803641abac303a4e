//! The swap: shadow tables replace the live ones in one transaction.
//!
//! The pump reads every checkpoint at the start of its cycle (and holds that read
//! lock until it commits), then seals and writes the live tables. Taking
//! `projection_checkpoints` in ACCESS EXCLUSIVE mode therefore waits for a cycle in
//! flight to commit and holds off the next one, and with it the sealer: the head
//! cannot move while the swap runs. The shadow is caught up to that head, the live
//! tables are dropped, the shadow tables moved into the live schema, and the live
//! checkpoint set to the head, all before the commit. A reader sees the old tables or
//! the new ones, never a mix; a crash before the commit leaves everything as it was.
//! Shadow tables that no longer have the live tables' shape (a migration ran since
//! they were copied) are refused: the swap would drop what the migration added.
//!
//! Readers lock tables one statement at a time, in whatever order their query names
//! them, so a reader holding one live table while it waits for another that the swap
//! holds would deadlock with it. The swap therefore locks every live table in one
//! statement with a short `lock_timeout`, well below PostgreSQL's deadlock timeout:
//! when it cannot have them all quickly it gives up first, rolls back (the readers
//! go on) and tries again a moment later.

use super::apply::Shadow;
use crate::digest::{qualified, quote};
use crate::log;
use sqlx::{Connection, PgConnection};

/// How long the swap waits for the pump's cycle to end before giving up (the live
/// model stays as it was, and the rebuild can be resumed).
const CHECKPOINT_LOCK_TIMEOUT: &str = "30s";

/// How long one attempt waits for the live tables (below the deadlock timeout, 1 s).
const TABLE_LOCK_TIMEOUT: &str = "200ms";

/// Attempts before the swap gives up (the rebuild can then be resumed).
const ATTEMPTS: u32 = 100;

/// Swaps the shadow tables in; returns the position the live model now reflects.
pub async fn swap(conn: &mut PgConnection, shadow: &Shadow<'_>, live: &str) -> anyhow::Result<i64> {
    let mut attempt = 1;
    loop {
        match try_swap(conn, shadow, live).await {
            Err(error) if attempt < ATTEMPTS && lock_contention(&error) => {
                tracing::debug!(attempt, %error, "swap postponed: the live tables are busy");
                tokio::time::sleep(std::time::Duration::from_millis(
                    20 * u64::from(attempt.min(10)),
                ))
                .await;
                attempt += 1;
            }
            other => return other,
        }
    }
}

/// A lock wait that timed out, or a deadlock PostgreSQL broke by aborting the swap.
fn lock_contention(error: &anyhow::Error) -> bool {
    error.downcast_ref::<sqlx::Error>().is_some_and(|e| {
        matches!(e, sqlx::Error::Database(db) if matches!(db.code().as_deref(), Some("55P03" | "40P01")))
    })
}

async fn try_swap(conn: &mut PgConnection, shadow: &Shadow<'_>, live: &str) -> anyhow::Result<i64> {
    let projection = shadow.projection;
    let mut tx = conn.begin().await?;
    set_lock_timeout(&mut tx, CHECKPOINT_LOCK_TIMEOUT).await?;
    sqlx::query("LOCK TABLE projection_checkpoints IN ACCESS EXCLUSIVE MODE")
        .execute(&mut *tx)
        .await?;
    let position: i64 =
        sqlx::query_scalar("SELECT position FROM projection_rebuilds WHERE name = $1")
            .bind(projection.name())
            .fetch_one(&mut *tx)
            .await?;
    let head = log::head(&mut tx).await?;
    shadow.apply(&mut tx, position, head).await?;
    set_lock_timeout(&mut tx, TABLE_LOCK_TIMEOUT).await?;
    let live_tables = projection.owned_tables(&mut tx, live).await?;
    let shadow_tables = projection.owned_tables(&mut tx, shadow.schema).await?;
    let locked: Vec<String> = live_tables
        .iter()
        .map(|table| qualified(live, table))
        .collect();
    sqlx::query(&format!(
        "LOCK TABLE {} IN ACCESS EXCLUSIVE MODE",
        locked.join(", ")
    ))
    .execute(&mut *tx)
    .await?;
    let drift = super::shadow::drift(&mut tx, live, shadow.schema, projection.tables()).await?;
    anyhow::ensure!(
        drift.is_empty(),
        "the live tables of {} changed since this rebuild began ({}); nothing was swapped: \
         resume the rebuild to start it over on today's tables",
        projection.name(),
        drift.join("; ")
    );
    for table in &live_tables {
        sqlx::query(&format!("DROP TABLE {}", qualified(live, table)))
            .execute(&mut *tx)
            .await?;
    }
    for table in &shadow_tables {
        sqlx::query(&format!(
            "ALTER TABLE {} SET SCHEMA {}",
            qualified(shadow.schema, table),
            quote(live)
        ))
        .execute(&mut *tx)
        .await?;
    }
    sqlx::query(
        "INSERT INTO projection_checkpoints (name, position) VALUES ($1, $2)
         ON CONFLICT (name) DO UPDATE
            SET position = EXCLUDED.position, updated_at = now(), failing_since = NULL, last_error = NULL",
    )
    .bind(projection.name())
    .bind(head)
    .execute(&mut *tx)
    .await?;
    sqlx::query("DELETE FROM projection_rebuilds WHERE name = $1")
        .bind(projection.name())
        .execute(&mut *tx)
        .await?;
    super::shadow::drop_schema_if_empty(&mut tx, shadow.schema).await?;
    tx.commit().await?;
    Ok(head)
}

async fn set_lock_timeout(tx: &mut PgConnection, timeout: &str) -> sqlx::Result<()> {
    sqlx::query("SELECT set_config('lock_timeout', $1, true)")
        .bind(timeout)
        .execute(tx)
        .await
        .map(|_| ())
}
