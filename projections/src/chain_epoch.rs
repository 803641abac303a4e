//! The one-time move of a log to chain epoch 2 (scrubbable fields committed by
//! digest, [`crate::chain`]). A log sealed before has its hashes recomputed from
//! its first task version event on; the head it had is kept in `chain_epochs`.
//! Runs after the migrations, with appends and sealing locked out.

use crate::chain::{self, GENESIS};
use crate::log;
use crate::sealer::{HEAD_SQL, Head};
use sqlx::{PgConnection, PgPool};

/// The current chain epoch.
pub const CURRENT: i32 = 2;

/// Events re-linked per page.
const PAGE: i64 = 5_000;

/// Moves the log to the current epoch when it is not there yet; answers the
/// position re-linking started from, if any was needed.
pub async fn upgrade(pool: &PgPool) -> anyhow::Result<Option<i64>> {
    if reached(&mut *pool.acquire().await?).await? {
        return Ok(None);
    }
    let mut tx = pool.begin().await?;
    sqlx::query("LOCK TABLE events IN EXCLUSIVE MODE")
        .execute(&mut *tx)
        .await?;
    if reached(&mut tx).await? {
        return Ok(None);
    }
    let (position, hash): (Option<i64>, Option<Vec<u8>>) =
        sqlx::query_as(HEAD_SQL).fetch_one(&mut *tx).await?;
    let head = Head::from_columns(position, hash);
    let first: Option<i64> = sqlx::query_scalar(
        "SELECT min(position) FROM events WHERE aggregate_type = 'task_version' AND position IS NOT NULL",
    )
    .fetch_one(&mut *tx)
    .await?;
    if let Some(from) = first {
        relink(&mut tx, from).await?;
    }
    sqlx::query(
        "INSERT INTO chain_epochs (epoch, from_position, previous_head_position, previous_head_hash)
         VALUES ($1, $2, $3, $4)",
    )
    .bind(CURRENT)
    .bind(first.unwrap_or(head.position + 1))
    .bind(head.position)
    .bind(&head.hash)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    if let Some(from) = first {
        tracing::warn!(
            from,
            previous_head = head.position,
            "the hash chain was re-linked for epoch 2"
        );
    }
    Ok(first)
}

/// Whether the log is at the current epoch.
async fn reached(conn: &mut PgConnection) -> sqlx::Result<bool> {
    sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM chain_epochs WHERE epoch = $1)")
        .bind(CURRENT)
        .fetch_one(conn)
        .await
}

/// Recomputes every sealed hash from `from` on, and the checkpoints among them.
async fn relink(conn: &mut PgConnection, from: i64) -> anyhow::Result<()> {
    let previous: Option<Vec<u8>> =
        sqlx::query_scalar("SELECT chain_hash FROM events WHERE position = $1")
            .bind(from - 1)
            .fetch_optional(&mut *conn)
            .await?
            .flatten();
    let mut previous = previous.unwrap_or_else(|| GENESIS.to_vec());
    let mut after = from - 1;
    loop {
        let events = log::read_range(conn, after, after + PAGE).await?;
        let Some(last) = events.last().map(|e| e.position) else {
            return Ok(());
        };
        let mut positions = Vec::with_capacity(events.len());
        let mut hashes = Vec::with_capacity(events.len());
        for event in &events {
            previous = chain::link_stored(&previous, event)?.to_vec();
            positions.push(event.position);
            hashes.push(previous.clone());
        }
        for sql in [
            "UPDATE events AS e SET chain_hash = u.h FROM UNNEST($1::bigint[], $2::bytea[]) AS u(p, h)
              WHERE e.position = u.p",
            "UPDATE chain_checkpoints AS c SET chain_hash = u.h FROM UNNEST($1::bigint[], $2::bytea[]) AS u(p, h)
              WHERE c.position = u.p",
        ] {
            sqlx::query(sql)
                .bind(&positions)
                .bind(&hashes)
                .execute(&mut *conn)
                .await?;
        }
        after = last;
    }
}
