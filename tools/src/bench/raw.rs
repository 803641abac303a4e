//! The scratch database and (a): the raw Postgres cycle of a command.

use anyhow::Context;
use sqlx::PgPool;
use std::time::{Duration, Instant};

/// A database created for one benchmark run.
pub struct Scratch {
    /// Its URL.
    pub url: String,
    /// A pool on it.
    pub pool: PgPool,
    admin_url: String,
    name: String,
}

impl Scratch {
    /// Creates and migrates `sandbox_bench_<time>` next to the target database.
    pub async fn create(target_url: &str) -> anyhow::Result<Self> {
        let name = format!(
            "sandbox_bench_{}",
            chrono::Utc::now().format("%Y%m%d%H%M%S%f")
        );
        let admin = projections::db::connect(target_url, 1).await?;
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&admin)
            .await
            .context("the benchmark needs permission to create a scratch database")?;
        admin.close().await;
        let url = projections::db::with_database(target_url, &name);
        let pool = projections::db::connect(&url, 40).await?;
        projections::db::migrate(&pool).await?;
        Ok(Self {
            url,
            pool,
            admin_url: target_url.to_string(),
            name,
        })
    }

    /// Drops the scratch database.
    pub async fn drop_database(&self) -> anyhow::Result<()> {
        self.pool.close().await;
        let admin = projections::db::connect(&self.admin_url, 1).await?;
        sqlx::query(&format!("DROP DATABASE {} WITH (FORCE)", self.name))
            .execute(&admin)
            .await?;
        Ok(())
    }
}

async fn insert(pool: &PgPool, id: &str, sequence: i64) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO events (aggregate_type, aggregate_id, sequence, event_type, event_version, payload, metadata)
         VALUES ('bench', $1, $2, 'Benched', '1', '{\"Benched\":{\"n\":1}}', '{\"request_id\":\"bench\"}')",
    )
    .bind(id)
    .bind(sequence)
    .execute(pool)
    .await
    .map(|_| ())
}

/// Ops/s of: begin, read a 50-event aggregate, insert one event, commit.
pub async fn command_cycle(
    pool: &PgPool,
    clients: usize,
    duration: Duration,
) -> anyhow::Result<f64> {
    let run = uuid::Uuid::new_v4();
    for client in 0..clients {
        for sequence in 1..=50 {
            insert(pool, &format!("{run}-read-{client}"), sequence).await?;
        }
    }
    let started = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|client| {
            let pool = pool.clone();
            tokio::spawn(async move {
                let (read, write) = (format!("{run}-read-{client}"), format!("{run}-write-{client}"));
                let mut done = 0u64;
                while started.elapsed() < duration {
                    let mut tx = pool.begin().await?;
                    let rows: Vec<(i64, serde_json::Value)> = sqlx::query_as(
                        "SELECT sequence, payload FROM events WHERE aggregate_type = 'bench' AND aggregate_id = $1 ORDER BY sequence",
                    )
                    .bind(&read)
                    .fetch_all(&mut *tx)
                    .await?;
                    anyhow::ensure!(rows.len() == 50);
                    sqlx::query(
                        "INSERT INTO events (aggregate_type, aggregate_id, sequence, event_type, event_version, payload, metadata)
                         VALUES ('bench', $1, $2, 'Benched', '1', '{\"Benched\":{\"n\":1}}', '{\"request_id\":\"bench\"}')",
                    )
                    .bind(&write)
                    .bind(done as i64 + 1)
                    .execute(&mut *tx)
                    .await?;
                    tx.commit().await?;
                    done += 1;
                }
                Ok::<u64, anyhow::Error>(done)
            })
        })
        .collect();
    let mut total = 0;
    for task in tasks {
        total += task.await??;
    }
    Ok(total as f64 / started.elapsed().as_secs_f64())
}
