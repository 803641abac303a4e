//! `sandboxctl bench migration`: commands while a large column migrates.
//!
//! A custom table of 10 mixed columns is filled with 1,000,000 records (appended to
//! the log, projected by the server's pump); a second table takes record creations
//! from concurrent clients, each followed by a read of the record (read-your-writes),
//! first alone, then while the first table's integer column changes to string in the
//! background. The figures are each phase's command latencies and the migration's
//! duration: a migration that held the pump would show in the second phase's tail
//! and as errors (a command whose write the read models did not show in time).

use super::report::{Figure, Report};
use super::server::{Server, on_scratch_server};
use super::stats::percentile;
use super::tables::{create_table, fill};
use anyhow::Context;
use clap::Args;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Options of `bench migration`.
#[derive(Debug, Clone, Args)]
pub struct MigrationArgs {
    /// Records in the migrated table.
    #[arg(long, default_value_t = 1_000_000)]
    pub records: usize,
    /// Concurrent command clients.
    #[arg(long, default_value_t = 4)]
    pub clients: usize,
    /// How long the commands run before the migration starts.
    #[arg(long, default_value = "5s")]
    pub baseline: humantime::Duration,
}

/// Latencies of one phase.
struct Phase {
    commands: usize,
    failed: usize,
    p50_ms: f64,
    p99_ms: f64,
    max_ms: f64,
}

impl Phase {
    fn of(samples: &[&Sample]) -> Self {
        let mut latencies: Vec<Duration> = samples.iter().map(|s| s.took).collect();
        latencies.sort();
        Self {
            commands: samples.len(),
            failed: samples.iter().filter(|s| !s.ok).count(),
            p50_ms: percentile(&latencies, 0.50),
            p99_ms: percentile(&latencies, 0.99),
            max_ms: percentile(&latencies, 1.0),
        }
    }
}

/// The figures.
struct Figures {
    before: Phase,
    during: Phase,
    migration_seconds: f64,
    background: bool,
}

/// One command: when it was sent, how long the create and the read took, and
/// whether both succeeded.
struct Sample {
    sent: Instant,
    took: Duration,
    ok: bool,
}

/// Creates a record and reads it back; `false` when either answered an error.
async fn create_and_read(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    table: &str,
    n: usize,
) -> anyhow::Result<bool> {
    let created = http
        .post(format!("{base}/tables/{table}/records"))
        .bearer_auth(token)
        .json(&json!({"data": {"name": format!("command {n}")}}))
        .send()
        .await?;
    if !created.status().is_success() {
        return Ok(false);
    }
    let created: Value = created.json().await?;
    let id = created["id"].as_str().context("record id")?;
    let read = http
        .get(format!("{base}/tables/{table}/records/{id}"))
        .bearer_auth(token)
        .send()
        .await?;
    Ok(read.status().is_success())
}

/// One client: creates a record and reads it back until `stop`.
async fn client(
    base: String,
    token: String,
    table: String,
    stop: Arc<AtomicBool>,
) -> anyhow::Result<Vec<Sample>> {
    let http = reqwest::Client::new();
    let mut out = Vec::new();
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        let sent = Instant::now();
        let ok = create_and_read(&http, &base, &token, &table, n).await?;
        out.push(Sample {
            sent,
            took: sent.elapsed(),
            ok,
        });
        n += 1;
    }
    Ok(out)
}

async fn measure(server: &Server, args: &MigrationArgs) -> anyhow::Result<Figures> {
    let http = reqwest::Client::new();
    let (large, keys) = create_table(server, &http, "large").await?;
    fill(server, large, &keys, args.records).await?;
    let (small, _) = create_table(server, &http, "commands").await?;
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..args.clients)
        .map(|_| {
            tokio::spawn(client(
                server.base.clone(),
                server.token.clone(),
                small.to_string(),
                stop.clone(),
            ))
        })
        .collect();
    tokio::time::sleep(args.baseline.into()).await;
    let started = Instant::now();
    let changed = server
        .call(
            &http,
            reqwest::Method::PATCH,
            &format!("/tables/{large}/columns/{}", keys[1]),
            json!({"type": "string"}),
        )
        .await?;
    let info = &changed["migration_info"];
    let background = info["background_migration"] == true;
    if background {
        let status_path = format!(
            "/migrations/{}/status",
            info["migration_id"].as_str().context("migration id")?
        );
        loop {
            let status = server
                .call(&http, reqwest::Method::GET, &status_path, Value::Null)
                .await?;
            if status["state"] == "completed" {
                break;
            }
            anyhow::ensure!(
                started.elapsed() < Duration::from_secs(1800),
                "the migration did not complete"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let finished = Instant::now();
    stop.store(true, Ordering::Relaxed);
    let mut samples = Vec::new();
    for client in clients {
        samples.extend(client.await??);
    }
    let before: Vec<&Sample> = samples.iter().filter(|s| s.sent < started).collect();
    let during: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.sent >= started && s.sent <= finished)
        .collect();
    Ok(Figures {
        before: Phase::of(&before),
        during: Phase::of(&during),
        migration_seconds: (finished - started).as_secs_f64(),
        background,
    })
}

/// Runs the benchmark on a scratch database next to the target.
pub async fn run(target_url: &str, args: &MigrationArgs) -> anyhow::Result<Report> {
    let prefix = "/private/module/custom_tables/company";
    let figures = on_scratch_server(target_url, prefix, {
        let args = args.clone();
        move |s| Box::pin(async move { measure(s, &args).await })
    })
    .await?;
    println!(
        "bench migration: {} records, integer to string ({}), {} clients creating and reading records in another table",
        args.records,
        if figures.background {
            "background"
        } else {
            "inline"
        },
        args.clients
    );
    println!(
        "migration: {:.1} s from the request until completed ({:.0} rows/s)",
        figures.migration_seconds,
        args.records as f64 / figures.migration_seconds
    );
    let mut rows = vec![Figure::new(
        format!("migration of {} records", args.records),
        format!(
            "{:.0} rows/s",
            args.records as f64 / figures.migration_seconds
        ),
        "-",
    )];
    for (label, phase) in [("before", &figures.before), ("during", &figures.during)] {
        println!(
            "commands {label} the migration: {} create+read pairs ({} answered an error), p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
            phase.commands, phase.failed, phase.p50_ms, phase.p99_ms, phase.max_ms
        );
        rows.push(Figure::new(
            format!(
                "migration: commands {label} it, p99 ({} failed)",
                phase.failed
            ),
            format!("{:.1} ms", phase.p99_ms),
            "-",
        ));
    }
    Ok(rows)
}
