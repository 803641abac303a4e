//! Replaying recorded logs into fresh databases and reading back every read model.
//!
//! A recorded log is a JSON Lines file in the format `sandboxctl events export`
//! writes (chain hashes optional). [`replay`] appends its events in file order,
//! exactly as stored (type, version, payload, metadata), lets a pump seal and project
//! them, and [`read_models`] / [`digests`] read every projection table back in
//! canonical order, so two replays can be compared byte for byte.

use anyhow::Context;
use cqrs_es::persist::SerializedEvent;
use projections::audit::ExportedEvent;
use projections::pump::PumpConfig;
use projections::store::LogRepository;
use projections::{Pump, read_models};
use serde_json::Value;
use sqlx::PgPool;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The folder of recorded logs.
pub fn logs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("logs")
}

/// The folder of the read models each recorded log must produce.
pub fn expected_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("expected")
}

/// The recorded logs directly in [`logs_dir`], by file stem, in name order.
pub fn recorded_logs() -> anyhow::Result<BTreeMap<String, PathBuf>> {
    let mut logs = BTreeMap::new();
    for entry in std::fs::read_dir(logs_dir())? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "jsonl") {
            let stem = path
                .file_stem()
                .and_then(|s| s.to_str())
                .context("log file name")?
                .to_string();
            logs.insert(stem, path);
        }
    }
    Ok(logs)
}

/// Reads a recorded log.
pub fn read_log(path: &Path) -> anyhow::Result<Vec<ExportedEvent>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .enumerate()
        .map(|(n, line)| {
            serde_json::from_str(line)
                .with_context(|| format!("{} line {} is not an event", path.display(), n + 1))
        })
        .collect()
}

/// Appends the events in order and waits until every projection has applied them.
/// `project_batch` is the pump's batch size (replays with different sizes must agree).
pub async fn replay(
    pool: &PgPool,
    events: &[ExportedEvent],
    project_batch: i64,
) -> anyhow::Result<()> {
    let rows: Vec<SerializedEvent> = events
        .iter()
        .map(|e| {
            SerializedEvent::new(
                e.aggregate_id.clone(),
                e.sequence as usize,
                e.aggregate_type.clone(),
                e.event_type.clone(),
                e.event_version.clone(),
                e.payload.clone(),
                e.metadata.clone(),
            )
        })
        .collect();
    LogRepository::new(pool.clone()).append(&rows).await?;
    let config = PumpConfig {
        project_batch,
        ..PumpConfig::default()
    };
    let pump = Pump::new(pool.clone(), read_models::all(), config);
    pump.register().await?;
    let expected = events.len() as i64;
    // Drain until every projection has reached the end of the log.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        pump.drain().await;
        let (lowest, failing): (Option<i64>, Option<String>) =
            sqlx::query_as("SELECT min(position), max(last_error) FROM projection_checkpoints")
                .fetch_one(pool)
                .await?;
        if let Some(error) = failing {
            anyhow::bail!("a projection failed: {error}");
        }
        if lowest == Some(expected) {
            return Ok(());
        }
        anyhow::ensure!(Instant::now() < deadline, "the replay did not finish");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Every projection table's rows, in canonical order, by table name.
pub async fn read_models(pool: &PgPool) -> anyhow::Result<BTreeMap<String, Vec<Value>>> {
    let mut conn = pool.acquire().await?;
    let mut tables = BTreeMap::new();
    for projection in read_models::all() {
        for table in projection.owned_tables(&mut conn, "public").await? {
            let rows = projections::digest::rows(&mut conn, "public", &table).await?;
            tables.insert(table, rows);
        }
    }
    Ok(tables)
}

/// The digest of every projection table, by table name.
pub async fn digests(pool: &PgPool) -> anyhow::Result<BTreeMap<String, String>> {
    let mut conn = pool.acquire().await?;
    let mut digests = BTreeMap::new();
    for projection in read_models::all() {
        let tables = projection.owned_tables(&mut conn, "public").await?;
        let tables: Vec<&str> = tables.iter().map(String::as_str).collect();
        digests.extend(projections::digest::digest(&mut conn, "public", &tables).await?);
    }
    Ok(digests)
}
