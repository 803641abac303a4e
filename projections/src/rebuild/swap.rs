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

use super::apply::Shadow;
use crate::digest::{qualified, quote};
use crate::log;
use sqlx::{Connection, PgConnection};

/// How long the swap waits for a lock before giving up (the live model stays as it
/// was, and the rebuild can be resumed).
const LOCK_TIMEOUT: &str = "30s";

/// Swaps the shadow tables in; returns the position the live model now reflects.
pub async fn swap(conn: &mut PgConnection, shadow: &Shadow<'_>, live: &str) -> anyhow::Result<i64> {
    let projection = shadow.projection;
    let mut tx = conn.begin().await?;
    sqlx::query("SELECT set_config('lock_timeout', $1, true)")
        .bind(LOCK_TIMEOUT)
        .execute(&mut *tx)
        .await?;
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
    for table in projection.tables() {
        sqlx::query(&format!("DROP TABLE {}", qualified(live, table)))
            .execute(&mut *tx)
            .await?;
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
