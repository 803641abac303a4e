//! `sandboxctl projections`: status, rebuild (live swap or point in time), digest.

use crate::connection::Target;
use crate::progress::Progress;
use anyhow::Context;
use chrono::{DateTime, Utc};
use clap::{Args, Subcommand};
use projections::rebuild::{self, Outcome, Rebuild};
use projections::{Projection, read_models};
use sqlx::PgPool;
use std::sync::Arc;
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// Operator commands on the read models.
#[derive(Debug, Subcommand)]
pub enum ProjectionsCommand {
    /// Each projection's position, the log's head, the lag, and any rebuild in progress.
    Status {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Rebuild a projection from position 0 into shadow tables while the live ones keep
    /// serving, then swap them in; or, with --until/--until-time and --into, build it
    /// as it stood at a position into a schema of its own.
    Rebuild(RebuildArgs),
    /// The SHA-256 of each table of a projection (live, or in a schema), to compare
    /// read models.
    Digest {
        /// The projection (default: all).
        name: Option<String>,
        /// The schema holding the tables (default: the live schema).
        #[arg(long)]
        schema: Option<String>,
    },
}

/// Options of `projections rebuild`.
#[derive(Debug, Args)]
pub struct RebuildArgs {
    /// The projection to rebuild.
    #[arg(required_unless_present = "all")]
    name: Option<String>,
    /// Rebuild every projection, one after the other.
    #[arg(long, conflicts_with = "name")]
    all: bool,
    /// Continue an interrupted rebuild from its checkpoint.
    #[arg(long)]
    resume: bool,
    /// Drop an interrupted rebuild (the live tables are not touched).
    #[arg(long, conflicts_with_all = ["resume", "until", "until_time", "into"])]
    discard: bool,
    /// Build the read model as it stood at this position (needs --into).
    #[arg(
        long,
        value_name = "POS",
        requires = "into",
        conflicts_with = "until_time"
    )]
    until: Option<i64>,
    /// Build the read model as it stood at this time, RFC 3339 (needs --into).
    #[arg(long, value_name = "TIME", requires = "into")]
    until_time: Option<DateTime<Utc>>,
    /// The schema a point-in-time build writes its tables into (never swapped in).
    #[arg(long, value_name = "SCHEMA")]
    into: Option<String>,
    /// Events per transaction.
    #[arg(long, default_value_t = rebuild::DEFAULT_BATCH)]
    batch: i64,
}

/// Runs a projections command.
pub async fn run(target: &Target, command: ProjectionsCommand) -> anyhow::Result<()> {
    let pool = target.pool().await?;
    projections::db::migrate(&pool).await?;
    match command {
        ProjectionsCommand::Status { json } => status(&pool, json).await,
        ProjectionsCommand::Rebuild(args) => {
            let chosen = match &args.name {
                Some(name) => vec![find(name)?],
                None => read_models::all(),
            };
            for projection in chosen {
                rebuild_one(&pool, projection, &args).await?;
            }
            Ok(())
        }
        ProjectionsCommand::Digest { name, schema } => {
            let chosen = match &name {
                Some(name) => vec![find(name)?],
                None => read_models::all(),
            };
            let mut conn = pool.acquire().await?;
            let schema = match schema {
                Some(schema) => schema,
                None => {
                    sqlx::query_scalar("SELECT current_schema()::text")
                        .fetch_one(&mut *conn)
                        .await?
                }
            };
            for projection in chosen {
                let tables = projection.owned_tables(&mut conn, &schema).await?;
                let tables: Vec<&str> = tables.iter().map(String::as_str).collect();
                let digests = projections::digest::digest(&mut conn, &schema, &tables).await?;
                for (table, digest) in digests {
                    println!("{}\t{table}\t{digest}", projection.name());
                }
            }
            Ok(())
        }
    }
}

fn find(name: &str) -> anyhow::Result<Arc<dyn Projection>> {
    let all = read_models::all();
    let names: Vec<&str> = all.iter().map(|p| p.name()).collect();
    let known = names.join(", ");
    all.iter()
        .find(|p| p.name() == name)
        .cloned()
        .with_context(|| format!("no projection named {name} (known: {known})"))
}

async fn status(pool: &PgPool, json: bool) -> anyhow::Result<()> {
    let mut conn = pool.acquire().await?;
    let rows = rebuild::status(&mut conn, &read_models::all()).await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(());
    }
    println!(
        "{:<20} {:>10} {:>10} {:>8}  state",
        "projection", "position", "head", "lag"
    );
    for row in rows {
        let mut state = match &row.failing {
            Some(error) => format!("failing: {error}"),
            None => "ok".to_string(),
        };
        if let Some(rebuild) = &row.rebuild {
            let kind = match rebuild.until {
                Some(until) => format!(
                    "point-in-time build to {until} into {}",
                    rebuild.shadow_schema
                ),
                None => format!("rebuild in {}", rebuild.shadow_schema),
            };
            let how = if rebuild.running {
                "running"
            } else {
                "interrupted"
            };
            state.push_str(&format!("; {kind} at {} ({how})", rebuild.position));
        }
        println!(
            "{:<20} {:>10} {:>10} {:>8}  {state}",
            row.name, row.position, row.head, row.lag
        );
    }
    Ok(())
}

async fn rebuild_one(
    pool: &PgPool,
    projection: Arc<dyn Projection>,
    args: &RebuildArgs,
) -> anyhow::Result<()> {
    let name = projection.name();
    if args.discard {
        let dropped = Rebuild::discard(pool, projection.as_ref()).await?;
        println!(
            "{name}: {}",
            if dropped {
                "rebuild discarded"
            } else {
                "no rebuild in progress"
            }
        );
        return Ok(());
    }
    let job = if args.resume {
        Rebuild::resume(pool, projection.clone()).await?
    } else {
        let target = match (&args.into, args.until, args.until_time) {
            (Some(schema), Some(position), _) => rebuild::Target::Until {
                position,
                schema: schema.clone(),
            },
            (Some(schema), None, Some(time)) => {
                let mut conn = pool.acquire().await?;
                rebuild::Target::Until {
                    position: rebuild::position_at(&mut conn, time).await?,
                    schema: schema.clone(),
                }
            }
            (Some(_), None, None) => anyhow::bail!("--into needs --until or --until-time"),
            (None, ..) => rebuild::Target::Swap,
        };
        Rebuild::start(pool, projection.clone(), target).await?
    }
    .with_batch(args.batch);
    let cancel = CancellationToken::new();
    let on_interrupt = cancel.clone();
    let watcher = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_interrupt.cancel();
        }
    });
    let from = job.position();
    let progress = Progress::events(name, 0);
    let started = Instant::now();
    let result = job
        .run(&cancel, |position, target| {
            progress.set((position - from) as u64, (target - from).max(0) as u64)
        })
        .await;
    progress.finish();
    watcher.abort();
    let seconds = started.elapsed().as_secs_f64();
    match result? {
        Outcome::Swapped(position) => println!(
            "{name}: rebuilt and swapped in at position {position} ({} events in {seconds:.1} s)",
            position - from
        ),
        Outcome::Built { position, schema } => println!(
            "{name}: built as of position {position} into schema {schema} ({seconds:.1} s)"
        ),
        Outcome::Interrupted(position) => anyhow::bail!(
            "{name}: interrupted at position {position}; the live tables are untouched. \
             `sandboxctl projections rebuild {name} --resume` continues, `--discard` drops it"
        ),
    }
    Ok(())
}
