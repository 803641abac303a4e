//! Where a rebuild stands, in its `projection_rebuilds` row and its shadow tables:
//! a new rebuild begins there, an interrupted one is taken up (or started over when
//! the server restarted or a migration changed the live tables since), and a
//! discarded one is dropped. Each runs under the projection's rebuild lock.

use super::{Target, check_schema_name, log, shadow};
use crate::projection::Projection;
use anyhow::Context;
use sqlx::{Connection, PgConnection};
use std::sync::Arc;

/// Where a rebuild stands when a process takes it (new or interrupted).
pub(super) struct Place {
    /// The live schema.
    pub(super) live: String,
    /// The session's normal `search_path`.
    pub(super) live_path: String,
    /// The shadow schema.
    pub(super) schema: String,
    /// The target position (`None`: the head, then the swap).
    pub(super) until: Option<i64>,
    /// The checkpoint.
    pub(super) position: i64,
}

/// Under the lock: checks the target, creates the shadow tables and the rebuild's
/// checkpoint.
pub(super) async fn begin(
    conn: &mut PgConnection,
    projection: &Arc<dyn Projection>,
    target: Target,
) -> anyhow::Result<Place> {
    let (live, live_path) = live_schema(conn).await?;
    let (schema, until) = match target {
        Target::Swap => (format!("rebuild_{}", projection.name()), None),
        Target::Until { position, schema } => {
            let head = log::head(conn).await?;
            anyhow::ensure!(
                position <= head,
                "position {position} is beyond the head of the log ({head})"
            );
            (schema, Some(position))
        }
    };
    check_schema_name(&schema, &live)?;
    let mut tx = conn.begin().await?;
    let inserted = sqlx::query(
        "INSERT INTO projection_rebuilds (name, shadow_schema, until_position) VALUES ($1, $2, $3)
         ON CONFLICT (name) DO NOTHING",
    )
    .bind(projection.name())
    .bind(&schema)
    .bind(until)
    .execute(&mut *tx)
    .await?;
    anyhow::ensure!(
        inserted.rows_affected() == 1,
        "a rebuild of {} is already in progress: resume it with --resume or drop it with --discard",
        projection.name()
    );
    shadow::create(&mut tx, &live, &schema, projection.tables())
        .await
        .with_context(|| {
            format!(
                "cannot create the tables of {} in {schema}",
                projection.name()
            )
        })?;
    tx.commit().await?;
    Ok(Place {
        live,
        live_path,
        schema,
        until,
        position: 0,
    })
}

/// Under the lock: reads an interrupted rebuild's checkpoint, starting it over when
/// the server restarted since its last batch, or when a migration changed the live
/// tables since their copies were made.
pub(super) async fn take_up(
    conn: &mut PgConnection,
    projection: &Arc<dyn Projection>,
) -> anyhow::Result<Place> {
    let (live, live_path) = live_schema(conn).await?;
    let row: Option<(String, i64, Option<i64>)> = sqlx::query_as(
        "SELECT shadow_schema, position, until_position FROM projection_rebuilds WHERE name = $1",
    )
    .bind(projection.name())
    .fetch_optional(&mut *conn)
    .await?;
    let (schema, mut position, until) =
        row.with_context(|| format!("no rebuild of {} is in progress", projection.name()))?;
    let drift = shadow::drift(conn, &live, &schema, projection.tables()).await?;
    if !drift.is_empty() {
        tracing::warn!(
            projection = projection.name(),
            drift = drift.join("; "),
            "the live tables changed since the rebuild began: it starts over"
        );
        start_over(conn, projection.as_ref(), &live, &schema).await?;
        position = 0;
    } else if position > 0 && server_restarted_since(conn, projection.name()).await? {
        // Crash recovery empties unlogged tables: the shadow may no longer hold
        // what its checkpoint says, so the rebuild starts over.
        start_over(conn, projection.as_ref(), &live, &schema).await?;
        position = 0;
    }
    Ok(Place {
        live,
        live_path,
        schema,
        until,
        position,
    })
}

/// Makes the shadow tables anew, as copies of today's live tables, and sets the
/// rebuild's checkpoint back to the start of the log.
async fn start_over(
    conn: &mut PgConnection,
    projection: &dyn Projection,
    live: &str,
    schema: &str,
) -> anyhow::Result<()> {
    let mut tx = conn.begin().await?;
    let tables = projection.owned_tables(&mut tx, schema).await?;
    shadow::drop(&mut tx, schema, &tables).await?;
    shadow::create(&mut tx, live, schema, projection.tables()).await?;
    sqlx::query("UPDATE projection_rebuilds SET position = 0, updated_at = now() WHERE name = $1")
        .bind(projection.name())
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(())
}

/// Under the lock: removes an interrupted rebuild's checkpoint and shadow tables;
/// answers the shadow schema, if there was one.
pub(super) async fn drop_shadow(
    conn: &mut PgConnection,
    projection: &dyn Projection,
) -> anyhow::Result<Option<String>> {
    let mut tx = conn.begin().await?;
    let schema: Option<String> = sqlx::query_scalar(
        "DELETE FROM projection_rebuilds WHERE name = $1 RETURNING shadow_schema",
    )
    .bind(projection.name())
    .fetch_optional(&mut *tx)
    .await?;
    if let Some(schema) = &schema {
        let tables = projection.owned_tables(&mut tx, schema).await?;
        shadow::drop(&mut tx, schema, &tables).await?;
    }
    tx.commit().await?;
    Ok(schema)
}

/// Whether the server started after the rebuild's last batch committed.
async fn server_restarted_since(conn: &mut PgConnection, name: &str) -> anyhow::Result<bool> {
    Ok(sqlx::query_scalar(
        "SELECT pg_postmaster_start_time() > updated_at FROM projection_rebuilds WHERE name = $1",
    )
    .bind(name)
    .fetch_one(conn)
    .await?)
}

/// The schema of the live tables and the session's `search_path`.
async fn live_schema(conn: &mut PgConnection) -> anyhow::Result<(String, String)> {
    let (schema, path): (Option<String>, String) =
        sqlx::query_as("SELECT current_schema()::text, current_setting('search_path')")
            .fetch_one(conn)
            .await?;
    let schema = schema.context("the search_path names no existing schema")?;
    Ok((schema, path))
}
