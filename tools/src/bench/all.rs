//! `sandboxctl bench all [--quick]`: every benchmark one after another (each on its
//! own scratch database), then one table of figure, value and target. `--quick`
//! runs each at a small size so that the whole set takes a few minutes; the sizes
//! are the command lines below.

use super::BenchCommand;
use super::report::{Figure, Report, print_table};
use crate::connection::Target;
use clap::{Args, Parser};
use std::time::Instant;

/// Options of `bench all`.
#[derive(Debug, Clone, Args)]
pub struct AllArgs {
    /// Small sizes: every benchmark in a few minutes.
    #[arg(long)]
    pub quick: bool,
}

/// Each benchmark's command line: the quick sizes, and the full ones (the defaults).
const PLAN: &[(&str, &str)] = &[
    (
        "append",
        "--duration 2s --clients 16 --catchup-events 20000",
    ),
    ("rebuild", "--events 100000 --aggregates 5000"),
    ("chain", "--duration 2s --clients 8 --backlog 20000"),
    ("tables", "--records 20000 --pages 50"),
    ("menu", "--tasks 2000 --enabled 100 --pages 100"),
    (
        "runs",
        "--submitters 20 --repeats 2 --runs 12 --history 20000",
    ),
    ("long-transaction", "--hold-seconds 5 --burst 5"),
    ("migration", "--records 50000 --clients 4 --baseline 2s"),
    (
        "permissions",
        "--tables 60 --records 20000 --small 20 --requests 100",
    ),
    ("public", "--records 20000 --clients 8 --duration 3s"),
];

/// A benchmark command as its command line gives it.
#[derive(Parser)]
struct Line {
    #[command(subcommand)]
    command: BenchCommand,
}

/// Runs every benchmark and prints the table; a benchmark that fails is a row too.
pub async fn run(target: &Target, args: &AllArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut table: Report = Vec::new();
    for (name, quick) in PLAN {
        let mut words = vec!["bench", name];
        if args.quick {
            words.extend(quick.split_whitespace());
        }
        let Line { command } = Line::try_parse_from(words)?;
        let began = Instant::now();
        match super::measure(target, command).await {
            Ok(figures) => table.extend(figures),
            Err(error) => table.push(Figure::new(
                format!("{name}: failed"),
                format!("{error:#}"),
                "-",
            )),
        }
        eprintln!("bench {name}: {:.0} s", began.elapsed().as_secs_f64());
    }
    println!();
    print_table(&table);
    println!("(all benchmarks: {:.0} s)", started.elapsed().as_secs_f64());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_planned_command_line_parses() {
        for (name, quick) in PLAN {
            let mut words = vec!["bench", name];
            words.extend(quick.split_whitespace());
            assert!(Line::try_parse_from(words).is_ok(), "{name} {quick}");
        }
    }
}
