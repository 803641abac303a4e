//! `bench chain`: what the hash chain costs. Appends never hash (the sealer does), so
//! the chain can only slow the sealer, and appends only by competing with it for the
//! machine. Measured with and without hashing: (1) appends per second while a sealer
//! keeps up, (2) the sealer alone on a backlog.

use super::catchup::LogBuilder;
use cqrs_es::persist::SerializedEvent;
use domain::directory::user::{User, UserEvent};
use projections::sealer::{self, Chain, HEAD_SQL, Head};
use projections::store::LogRepository;
use serde_json::json;
use sqlx::{Connection, PgPool};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use uuid::Uuid;

/// Append and seal throughput in one mode.
pub struct ChainFigures {
    /// Events appended per second by concurrent 10-event commands while a sealer ran.
    pub appended_per_second: f64,
    /// Events sealed per second by the sealer alone on a backlog.
    pub sealed_per_second: f64,
}

/// One sealing pass of up to 5,000 events in its own transaction; returns the count.
async fn seal_once(pool: &PgPool, chain: Chain) -> anyhow::Result<usize> {
    let mut conn = pool.acquire().await?;
    let mut tx = conn.begin().await?;
    let (position, hash): (Option<i64>, Option<Vec<u8>>) =
        sqlx::query_as(HEAD_SQL).fetch_one(&mut *tx).await?;
    let head = Head::from_columns(position, hash);
    let sealed = sealer::seal_with(&mut tx, head, 5_000, chain).await?;
    tx.commit().await?;
    Ok(sealed.events.len())
}

/// Seals until a pass finds nothing.
async fn seal_all(pool: &PgPool, chain: Chain) -> anyhow::Result<usize> {
    let mut total = 0;
    loop {
        let n = seal_once(pool, chain).await?;
        total += n;
        if n == 0 {
            return Ok(total);
        }
    }
}

fn command(aggregate: &str, first: usize) -> Vec<SerializedEvent> {
    (0..10)
        .map(|i| {
            SerializedEvent::new(
                aggregate.to_string(),
                first + i,
                "user".into(),
                "UserRoleChanged".into(),
                "1".into(),
                json!({"UserRoleChanged": {"role": i}}),
                json!({"principal_type": "operator", "principal_id": "bench", "request_id": "bench", "time": "2026-01-01T00:00:00Z"}),
            )
        })
        .collect()
}

/// Measures one mode on the given (empty) scratch log.
pub async fn measure(
    pool: &PgPool,
    chain: Chain,
    clients: usize,
    duration: Duration,
    backlog: usize,
) -> anyhow::Result<ChainFigures> {
    // (1) Concurrent appenders with a sealer keeping up.
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let appenders: Vec<_> = (0..clients)
        .map(|_| {
            let repo = LogRepository::new(pool.clone());
            let stop = stop.clone();
            tokio::spawn(async move {
                let id = Uuid::new_v4().to_string();
                let mut appended = 0;
                while !stop.load(Ordering::Relaxed) {
                    repo.append(&command(&id, appended + 1)).await?;
                    appended += 10;
                }
                Ok::<usize, anyhow::Error>(appended)
            })
        })
        .collect();
    while started.elapsed() < duration {
        if seal_once(pool, chain).await? == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let mut appended = 0;
    for appender in appenders {
        appended += appender.await??;
    }
    let appended_per_second = appended as f64 / started.elapsed().as_secs_f64();
    seal_all(pool, chain).await?;
    // (2) The sealer alone on a backlog of user events.
    let mut log = LogBuilder::new(pool);
    for i in 0..backlog {
        let user = Uuid::from_u128(i as u128 % 5_000);
        log.push::<User>(
            user,
            UserEvent::UserRoleChanged {
                role: (i % 5) as i32,
            },
        )
        .await?;
    }
    log.flush().await?;
    let started = Instant::now();
    let sealed = seal_all(pool, chain).await?;
    let sealed_per_second = sealed as f64 / started.elapsed().as_secs_f64();
    Ok(ChainFigures {
        appended_per_second,
        sealed_per_second,
    })
}
