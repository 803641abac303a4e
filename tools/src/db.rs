//! `sandboxctl db`: migrations and throwaway clusters.

use crate::connection::Target;
use clap::Subcommand;
use projections::db::embedded::EmbeddedPostgres;
use std::path::PathBuf;

/// Database commands.
#[derive(Debug, Subcommand)]
pub enum DbCommand {
    /// Apply pending migrations.
    Migrate,
    /// Start a private PostgreSQL cluster in a directory and print its admin URL
    /// (used by the test suite for its throwaway cluster).
    ClusterStart {
        /// Directory of the cluster.
        dir: PathBuf,
    },
    /// Stop a cluster started with `cluster-start`.
    ClusterStop {
        /// Directory of the cluster.
        dir: PathBuf,
    },
}

/// Runs a database command.
pub async fn run(target: &Target, command: DbCommand) -> anyhow::Result<()> {
    match command {
        DbCommand::Migrate => {
            let pool = target.pool().await?;
            projections::db::migrate(&pool).await?;
            println!("migrations applied");
        }
        DbCommand::ClusterStart { dir } => {
            let mut cluster = EmbeddedPostgres::plan(&dir)?;
            cluster.start().await?;
            println!("{}", cluster.url("postgres"));
        }
        DbCommand::ClusterStop { dir } => {
            let mut cluster = EmbeddedPostgres::plan(&dir)?;
            cluster.stop_any().await?;
        }
    }
    Ok(())
}
