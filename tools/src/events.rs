//! `sandboxctl events`: export the log, verify its hash chain, record a checkpoint.

use crate::connection::Target;
use crate::progress::Progress;
use clap::{Args, Subcommand};
use projections::audit::export::{ExportFilter, Exporter};
use projections::audit::verify::{Expectation, verify};
use projections::sealer::{self, HEAD_SQL, Head};
use std::io::{ErrorKind, Write};

/// Auditor commands on the event log.
#[derive(Debug, Subcommand)]
pub enum EventsCommand {
    /// Stream sealed events as JSON Lines (one event per line, in position order).
    Export(ExportArgs),
    /// Recompute the hash chain from position 1; name the first position where it
    /// breaks and exit non-zero.
    Verify {
        /// A chain hash kept elsewhere, as printed by `events checkpoint`
        /// (repeatable).
        #[arg(long, value_name = "POSITION:HASH")]
        expect: Vec<Expectation>,
    },
    /// Record the chain's head in `chain_checkpoints` and print it as POSITION:HASH,
    /// for an auditor to keep outside the database.
    Checkpoint,
}

/// Filters of `events export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// First position (inclusive).
    #[arg(long, value_name = "POS")]
    from: Option<i64>,
    /// Last position (inclusive); default the head when the export starts.
    #[arg(long, value_name = "POS")]
    to: Option<i64>,
    /// Only events of this aggregate type.
    #[arg(long, value_name = "TYPE")]
    aggregate_type: Option<String>,
    /// Only events of this aggregate id.
    #[arg(long, value_name = "ID")]
    aggregate_id: Option<String>,
    /// Only the events of this company (its aggregates and its principals' actions).
    #[arg(long, value_name = "ID")]
    company: Option<String>,
}

/// Runs an events command.
pub async fn run(target: &Target, command: EventsCommand) -> anyhow::Result<()> {
    let pool = target.pool().await?;
    let mut conn = pool.acquire().await?;
    match command {
        EventsCommand::Export(args) => export(&mut conn, args).await,
        EventsCommand::Verify { expect } => {
            let head = projections::log::head(&mut conn).await?;
            let progress = Progress::events("verifying", head as u64);
            let result = verify(&mut conn, &expect, |p| progress.set(p as u64, head as u64)).await;
            progress.finish();
            let verification = result?;
            if let Some(broken) = verification.broken {
                anyhow::bail!("{broken}");
            }
            println!(
                "chain verified: positions 1..{} (head hash {}), {} checkpoint(s) matched",
                verification.verified,
                hex::encode(&verification.hash),
                verification.anchors_checked
            );
            Ok(())
        }
        EventsCommand::Checkpoint => {
            let (position, hash): (Option<i64>, Option<Vec<u8>>) =
                sqlx::query_as(HEAD_SQL).fetch_one(&mut *conn).await?;
            let head = Head::from_columns(position, hash);
            anyhow::ensure!(head.position > 0, "the log has no sealed event yet");
            sealer::record_checkpoint(&mut conn, head.position, &head.hash).await?;
            println!("{}:{}", head.position, hex::encode(&head.hash));
            Ok(())
        }
    }
}

async fn export(conn: &mut sqlx::PgConnection, args: ExportArgs) -> anyhow::Result<()> {
    let filter = ExportFilter {
        from: args.from,
        to: args.to,
        aggregate_type: args.aggregate_type,
        aggregate_id: args.aggregate_id,
        company: args.company,
    };
    let mut exporter = Exporter::start(conn, filter).await?;
    let (first, last) = (exporter.first_position(), exporter.last_position());
    let span = (last - first + 1).max(0) as u64;
    let progress = Progress::beside_data("exporting", span);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let result = async {
        loop {
            let page = exporter.next_page(conn).await?;
            let Some(end) = page.last().map(|e| e.position) else {
                break;
            };
            for event in &page {
                serde_json::to_writer(&mut out, event)?;
                out.write_all(b"\n")?;
            }
            progress.set((end - first + 1) as u64, span);
        }
        out.flush()?;
        Ok::<_, anyhow::Error>(())
    }
    .await;
    progress.finish();
    match result {
        // The reader stopped listening (`| head`): that is not a failure.
        Err(error) if broken_pipe(&error) => Ok(()),
        other => other,
    }
}

fn broken_pipe(error: &anyhow::Error) -> bool {
    let kind = error
        .downcast_ref::<std::io::Error>()
        .map(std::io::Error::kind)
        .or_else(|| {
            error
                .downcast_ref::<serde_json::Error>()
                .and_then(serde_json::Error::io_error_kind)
        });
    kind == Some(ErrorKind::BrokenPipe)
}
