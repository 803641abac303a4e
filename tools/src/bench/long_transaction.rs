//! `sandboxctl bench long-transaction` (issue 27, item 3): the run queue while a
//! transaction elsewhere in the cluster stays open. A queue that claims with
//! `SELECT ... FOR UPDATE SKIP LOCKED` slows down under an old snapshot, because
//! the dead row versions of claimed and finished jobs cannot be vacuumed and every
//! claim walks them. Ours claims through the run's event stream and reads the
//! `runs` read model; this measures whether it stays healthy.
//!
//! Bursts of trivial runs go through the HTTP API before, during and after a
//! `REPEATABLE READ` transaction that holds an xid and a snapshot for
//! `--hold-seconds`. For each phase it prints submission-to-`running` p50/p99,
//! runs completed per minute, the claim query's time and the dead tuples of the
//! `runs` and `events` tables.

use super::raw::Scratch;
use super::report::{Figure, Report};
use super::runs::{ids, prepare, submit, until_terminal};
use super::server::{Server, with_workers};
use super::stats::percentile;
use api::runtime::executor::QUEUED_RUNS;
use clap::Args;
use serde_json::Value;
use std::time::{Duration, Instant};

/// Options of `bench long-transaction`.
#[derive(Debug, Clone, Args)]
pub struct LongTransactionArgs {
    /// How long the other transaction stays open, in seconds.
    #[arg(long, default_value_t = 600)]
    pub hold_seconds: u64,
    /// Runs submitted at once in each burst.
    #[arg(long, default_value_t = 20)]
    pub burst: usize,
}

/// What one burst of runs showed.
struct Burst {
    to_running: Vec<Duration>,
    per_minute: f64,
    claim_query_ms: f64,
    dead_runs: i64,
    dead_events: i64,
}

impl Burst {
    /// Prints the burst's line and answers its row.
    fn print(&self, phase: &str) -> Figure {
        println!(
            "{phase}: submission to running p50 {:.1} ms, p99 {:.1} ms; {:.1} runs/min; claim query {:.2} ms; dead tuples runs {}, events {}",
            percentile(&self.to_running, 0.5),
            percentile(&self.to_running, 0.99),
            self.per_minute,
            self.claim_query_ms,
            self.dead_runs,
            self.dead_events
        );
        Figure::new(
            format!("long transaction: submission to running p99, {phase}"),
            format!("{:.1} ms", percentile(&self.to_running, 0.99)),
            "-",
        )
    }
}

/// The executor's claim query, timed over 20 executions (median).
async fn claim_query_ms(server: &Server) -> anyhow::Result<f64> {
    let mut times = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        let _: Vec<(uuid::Uuid, uuid::Uuid, bool)> = sqlx::query_as(QUEUED_RUNS)
            .fetch_all(&server.state.pool)
            .await?;
        times.push(started.elapsed());
    }
    Ok(percentile(
        &{
            times.sort();
            times
        },
        0.5,
    ))
}

async fn dead_tuples(server: &Server, table: &str) -> anyhow::Result<i64> {
    // Statistics reach the view when a backend reports them, about once a second.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    Ok(sqlx::query_scalar(
        "SELECT coalesce(sum(n_dead_tup), 0)::int8 FROM pg_stat_user_tables WHERE relname = $1",
    )
    .bind(table)
    .fetch_one(&server.state.pool)
    .await?)
}

async fn burst(
    server: &Server,
    client: &reqwest::Client,
    version: &str,
    size: usize,
) -> anyhow::Result<Burst> {
    let started = Instant::now();
    let runs =
        futures::future::try_join_all((0..size).map(|_| submit(server, client, version))).await?;
    let runs: Vec<Value> = runs.into_iter().map(|(run, _)| run).collect();
    let run_ids = ids(&runs)?;
    let finished = until_terminal(server, &run_ids).await?;
    let mut to_running: Vec<Duration> = sqlx::query_scalar::<_, f64>(
        "SELECT extract(epoch FROM started_at - queued_at)::float8 FROM runs WHERE id = ANY($1)",
    )
    .bind(&run_ids)
    .fetch_all(&server.state.pool)
    .await?
    .into_iter()
    .map(Duration::from_secs_f64)
    .collect();
    to_running.sort();
    Ok(Burst {
        to_running,
        per_minute: size as f64 * 60.0 / (finished - started).as_secs_f64(),
        claim_query_ms: claim_query_ms(server).await?,
        dead_runs: dead_tuples(server, "runs").await?,
        dead_events: dead_tuples(server, "events").await?,
    })
}

async fn measure(
    server: &Server,
    scratch: &Scratch,
    args: &LongTransactionArgs,
) -> anyhow::Result<Report> {
    let client = reqwest::Client::new();
    let (version, _) = prepare(server, &client).await?;
    let mut rows = vec![
        burst(server, &client, &version, args.burst)
            .await?
            .print("before"),
    ];

    let mut holder = scratch.pool.begin().await?;
    sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        .execute(&mut *holder)
        .await?;
    let xid: i64 = sqlx::query_scalar("SELECT txid_current()")
        .fetch_one(&mut *holder)
        .await?;
    let _: i64 = sqlx::query_scalar("SELECT count(*) FROM runs")
        .fetch_one(&mut *holder)
        .await?;
    println!(
        "a transaction (xid {xid}) holds its snapshot for {} s",
        args.hold_seconds
    );
    let held = Instant::now();
    let mut bursts = 0;
    let mut last = None;
    while held.elapsed() < Duration::from_secs(args.hold_seconds) {
        let figures = burst(server, &client, &version, args.burst).await?;
        bursts += 1;
        if bursts == 1 {
            figures.print("first burst under the open transaction");
        }
        last = Some(figures);
    }
    if let Some(figures) = last {
        rows.push(figures.print(&format!(
            "last of {bursts} bursts under the open transaction"
        )));
    }
    holder.commit().await?;
    for table in ["runs", "events"] {
        sqlx::query(&format!("VACUUM {table}"))
            .execute(&server.state.pool)
            .await?;
    }
    rows.push(
        burst(server, &client, &version, args.burst)
            .await?
            .print("after the transaction ended and a vacuum"),
    );
    Ok(rows)
}

/// Runs the benchmark on a scratch database next to the target.
pub async fn run(target_url: &str, args: &LongTransactionArgs) -> anyhow::Result<Report> {
    with_workers(target_url, async |server, scratch| {
        measure(server, scratch, args).await
    })
    .await
}
