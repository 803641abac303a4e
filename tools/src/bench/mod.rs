//! `sandboxctl bench`: benchmarks that print the figures the issues ask for.
//!
//! Each benchmark creates a scratch database on the same cluster, so it never
//! touches live data, and drops it afterwards.

mod all;
mod append;
mod catchup;
mod chain;
mod computed;
mod connections;
mod history;
mod http;
mod long_transaction;
mod menu;
mod migration;
mod permissions;
mod public;
mod raw;
mod rebuild;
mod report;
mod runs;
mod server;
mod stats;
mod steps;
mod tables;

use crate::connection::Target;
use clap::{Args, Subcommand};
use report::{Figure, Report};
use std::time::Duration;

/// Benchmark commands.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// The command path: raw Postgres cycle, HTTP commands, 10-event appends,
    /// projector catch-up and requests each on a new connection.
    Append(AppendArgs),
    /// Rebuild speed of every projection on a synthetic log.
    Rebuild(RebuildArgs),
    /// Append and seal throughput with and without the hash chain.
    Chain(ChainArgs),
    /// Custom tables: a filtered, sorted page over 100,000 records, a full CSV
    /// export and a column type change.
    Tables(tables::TablesArgs),
    /// The room menu: a page of a room with 500 enabled tasks among 20,000.
    Menu(menu::MenuArgs),
    /// Runs: submission latency, our run against a bare buildah run, throughput.
    Runs(runs::RunsArgs),
    /// The run queue before, during and after a transaction held open elsewhere.
    LongTransaction(long_transaction::LongTransactionArgs),
    /// Commands while a 1,000,000-record column changes type in the background.
    Migration(migration::MigrationArgs),
    /// Custom-table permissions: the table list with per-caller record_count and a
    /// search page under a row policy with hidden columns.
    Permissions(permissions::PermissionsArgs),
    /// Public reads: pages and `q` queries of a token over 100,000 records.
    Public(public::PublicArgs),
    /// Every benchmark, then one table of figure, value and target (`--quick`:
    /// small sizes, a few minutes in all).
    All(all::AllArgs),
}

/// Options of `bench rebuild`.
#[derive(Debug, Clone, Args)]
pub struct RebuildArgs {
    /// Events in the synthetic log.
    #[arg(long, default_value_t = 1_000_000)]
    pub events: usize,
    /// Aggregates they are spread over.
    #[arg(long, default_value_t = 50_000)]
    pub aggregates: usize,
    /// Events per rebuild transaction.
    #[arg(long, default_value_t = projections::rebuild::DEFAULT_BATCH)]
    pub batch: i64,
}

/// Options of `bench chain`.
#[derive(Debug, Clone, Args)]
pub struct ChainArgs {
    /// How long the concurrent append measurement runs in each mode.
    #[arg(long, default_value = "5s")]
    pub duration: humantime::Duration,
    /// Concurrent appenders.
    #[arg(long, default_value_t = 8)]
    pub clients: usize,
    /// Events in the backlog the sealer works through alone.
    #[arg(long, default_value_t = 200_000)]
    pub backlog: usize,
}

/// Options of `bench append`.
#[derive(Debug, Clone, Args)]
pub struct AppendArgs {
    /// How long each throughput measurement runs.
    #[arg(long, default_value = "5s")]
    pub duration: humantime::Duration,
    /// Concurrent clients of the concurrent runs.
    #[arg(long, default_value_t = 16)]
    pub clients: usize,
    /// Events in the synthetic log for the catch-up measurement.
    #[arg(long, default_value_t = 200_000)]
    pub catchup_events: usize,
}

/// Runs a benchmark command.
pub async fn run(target: &Target, command: BenchCommand) -> anyhow::Result<()> {
    match command {
        BenchCommand::All(args) => all::run(target, &args).await,
        other => measure(target, other).await.map(|_| ()),
    }
}

/// Runs one benchmark, which prints its lines as it goes; answers its figures.
async fn measure(target: &Target, command: BenchCommand) -> anyhow::Result<Report> {
    match command {
        BenchCommand::Append(args) => run_append_and_catch_up(target, &args).await,
        BenchCommand::Rebuild(args) => run_rebuild(target, &args).await,
        BenchCommand::Chain(args) => run_chain(target, &args).await,
        BenchCommand::Tables(args) => tables::run(&target.url()?, &args).await,
        BenchCommand::Menu(args) => menu::run(&target.url()?, &args).await,
        BenchCommand::Runs(args) => runs::run(&target.url()?, &args).await,
        BenchCommand::LongTransaction(args) => long_transaction::run(&target.url()?, &args).await,
        BenchCommand::Permissions(args) => permissions::run(&target.url()?, &args).await,
        BenchCommand::Migration(args) => migration::run(&target.url()?, &args).await,
        BenchCommand::Public(args) => public::run(&target.url()?, &args).await,
        BenchCommand::All(_) => anyhow::bail!("bench all runs the others, not itself"),
    }
}

async fn run_rebuild(target: &Target, args: &RebuildArgs) -> anyhow::Result<Report> {
    let scratch = raw::Scratch::create(&target.url()?).await?;
    let result =
        rebuild::rebuild_speed(&scratch.pool, args.events, args.aggregates, args.batch).await;
    scratch.drop_database().await?;
    let (events, measured) = result?;
    let mut figures = Vec::new();
    for f in measured {
        let target = if f.name == "directory" {
            ">= 100,000 events/s"
        } else {
            ">= 50,000 applied/s"
        };
        figures.push(Figure::new(
            format!("rebuild {} ({events} events)", f.name),
            format!("{:.0} events/s", f.log_events as f64 / f.seconds),
            target,
        ));
        println!(
            "rebuild {}: {} log events ({} of its aggregate types) in {:.2} s = {:.0} log events/s, {:.0} applied events/s (target >= 50,000)",
            f.name,
            f.log_events,
            f.applied,
            f.seconds,
            f.log_events as f64 / f.seconds,
            f.applied as f64 / f.seconds
        );
    }
    println!("({events} events in the synthetic log)");
    Ok(figures)
}

async fn run_chain(target: &Target, args: &ChainArgs) -> anyhow::Result<Report> {
    use projections::sealer::Chain;
    let mut figures = Vec::new();
    for (label, mode) in [
        ("with the chain", Chain::Linked),
        ("without the chain", Chain::Unlinked),
    ] {
        let scratch = raw::Scratch::create(&target.url()?).await?;
        let result = chain::measure(
            &scratch.pool,
            mode,
            args.clients,
            args.duration.into(),
            args.backlog,
        )
        .await;
        scratch.drop_database().await?;
        let measured = result?;
        println!(
            "{label}: {:.0} events/s appended by {} clients (10-event commands) while sealing; sealer alone {:.0} events/s",
            measured.appended_per_second, args.clients, measured.sealed_per_second
        );
        figures.push(Figure::new(
            format!("chain: appended while sealing, {label}"),
            format!("{:.0} events/s", measured.appended_per_second),
            "-",
        ));
        figures.push(Figure::new(
            format!("chain: sealer alone, {label}"),
            format!("{:.0} events/s", measured.sealed_per_second),
            "-",
        ));
    }
    Ok(figures)
}

async fn run_append_and_catch_up(target: &Target, args: &AppendArgs) -> anyhow::Result<Report> {
    let scratch = raw::Scratch::create(&target.url()?).await?;
    let result = run_append(&scratch, args).await;
    scratch.drop_database().await?;
    let mut figures = result?;
    // Catch-up gets a log of its own per mix, holding only directory and settings events.
    for mix in [catchup::Mix::Creations, catchup::Mix::Lifecycles] {
        let scratch = raw::Scratch::create(&target.url()?).await?;
        let result = catchup::cold_catch_up(&scratch.pool, args.catchup_events, mix).await;
        scratch.drop_database().await?;
        let catchup = result?;
        println!(
            "(d) projector catch-up from a cold checkpoint, {mix:?} mix: {} events in {:.2} s = {:.0} events/s (target >= 50,000)",
            catchup.events,
            catchup.seconds,
            catchup.events as f64 / catchup.seconds
        );
        figures.push(Figure::new(
            format!("append (d) projector catch-up, {mix:?}"),
            format!("{:.0} events/s", catchup.events as f64 / catchup.seconds),
            ">= 50,000 events/s",
        ));
    }
    let fresh = server::on_scratch_server(&target.url()?, "", |server| {
        Box::pin(connections::fresh(server, 1_000))
    })
    .await?;
    println!(
        "(e) GET /healthz on a new connection each time, 1 client: p50 {:.2} ms, p99 {:.2} ms",
        fresh.p50_ms, fresh.p99_ms
    );
    figures.push(Figure::new(
        "append (e) new connection + GET /healthz, p50",
        format!("{:.2} ms", fresh.p50_ms),
        "-",
    ));
    Ok(figures)
}

async fn run_append(scratch: &raw::Scratch, args: &AppendArgs) -> anyhow::Result<Report> {
    let duration: Duration = args.duration.into();
    println!(
        "bench append: {} per measurement, {} concurrent clients",
        humantime::format_duration(duration),
        args.clients
    );
    let raw_one = raw::command_cycle(&scratch.pool, 1, duration).await?;
    let raw_many = raw::command_cycle(&scratch.pool, args.clients, duration).await?;
    println!(
        "(a) raw cycle (read 50-event aggregate, insert 1 event, commit), 1 client:  {raw_one:.0} ops/s"
    );
    println!(
        "(a) raw cycle, {} clients: {raw_many:.0} ops/s",
        args.clients
    );
    let http_one = http::commands(scratch, 1, duration).await?;
    let http_many = http::commands(scratch, args.clients, duration).await?;
    println!(
        "(b) HTTP command (auth, load, decide, append, projection catch-up, response), 1 client:  {:.0} ops/s, p50 {:.2} ms, p99 {:.2} ms; {:.0}% of (a)",
        http_one.ops_per_second,
        http_one.p50_ms,
        http_one.p99_ms,
        100.0 * http_one.ops_per_second / raw_one
    );
    println!(
        "(b) HTTP command, {} clients: {:.0} ops/s, p50 {:.2} ms, p99 {:.2} ms; {:.0}% of (a) (target >= 40%, p99 < 25 ms)",
        args.clients,
        http_many.ops_per_second,
        http_many.p50_ms,
        http_many.p99_ms,
        100.0 * http_many.ops_per_second / raw_many
    );
    let (multi, single) = append::ten_event_commands(&scratch.pool, duration).await?;
    println!(
        "(c) 10-event command: one multi-row statement {multi:.0} commands/s, postgres-es row by row {single:.0} commands/s; ratio {:.2}",
        multi / single
    );
    Ok(vec![
        Figure::new(
            "append (a) raw cycle, 1 client",
            format!("{raw_one:.0} ops/s"),
            "-",
        ),
        Figure::new(
            "append (b) HTTP command, 1 client, p50",
            format!("{:.2} ms", http_one.p50_ms),
            "<= 1.5 ms",
        ),
        Figure::new(
            format!(
                "append (b) HTTP command, {} clients, share of (a)",
                args.clients
            ),
            format!("{:.0} %", 100.0 * http_many.ops_per_second / raw_many),
            ">= 60 %",
        ),
        Figure::new(
            format!("append (b) HTTP command, {} clients, p99", args.clients),
            format!("{:.2} ms", http_many.p99_ms),
            "<= 15 ms",
        ),
        Figure::new(
            "append (c) 10-event command, multi-row vs row by row",
            format!("{:.2}x", multi / single),
            "-",
        ),
    ])
}
