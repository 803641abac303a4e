//! `sandboxctl environments publish-curated`.

use crate::connection::{Target, operator_name, service_state};
use anyhow::Context;
use api::admin::curated;
use clap::Subcommand;
use domain::environments::archive::ArchiveFormat;
use std::path::PathBuf;
use std::time::Duration;

/// Environment commands.
#[derive(Debug, Subcommand)]
pub enum EnvironmentCommand {
    /// Create a curated (operator-owned) environment from a context archive and
    /// build its first version, or with `--environment` build a new version of an
    /// existing one (the companies pinning it are told when it is ready). Prints
    /// the ids and the final version state as JSON.
    PublishCurated {
        /// Display name of a new environment.
        #[arg(long, required_unless_present = "environment")]
        name: Option<String>,
        /// The curated environment that gets a new version.
        #[arg(long, conflicts_with_all = ["name", "description"])]
        environment: Option<uuid::Uuid>,
        /// Description.
        #[arg(long, default_value = "")]
        description: String,
        /// The context archive (zip, tar or tar.gz, by extension).
        #[arg(long)]
        context: PathBuf,
        /// Return after queueing the build instead of building it here.
        #[arg(long)]
        no_wait: bool,
    },
}

/// Runs an environment command.
pub async fn run(target: &Target, command: EnvironmentCommand) -> anyhow::Result<()> {
    let EnvironmentCommand::PublishCurated {
        name,
        environment,
        description,
        context,
        no_wait,
    } = command;
    let format = match context.to_string_lossy() {
        path if path.ends_with(".zip") => ArchiveFormat::Zip,
        path if path.ends_with(".tar.gz") || path.ends_with(".tgz") => ArchiveFormat::TarGz,
        path if path.ends_with(".tar") => ArchiveFormat::Tar,
        path => anyhow::bail!("{path}: name the archive .zip, .tar or .tar.gz"),
    };
    let bytes =
        std::fs::read(&context).with_context(|| format!("cannot read {}", context.display()))?;
    let started = service_state(target).await?;
    let state = started.state.clone();
    let operator = operator_name();
    let published = match (environment, name) {
        (Some(environment), _) => {
            curated::publish_version(&state, &operator, environment, format, bytes).await?
        }
        (None, Some(name)) => {
            curated::publish(&state, &operator, &name, &description, format, bytes).await?
        }
        (None, None) => {
            anyhow::bail!("name a new environment (--name) or an existing one (--environment)")
        }
    };
    let mut result = serde_json::to_value(&published)?;
    if !no_wait {
        api::runtime::worker::spawn(api::runtime::builder::Builder::new(state.runtime.clone()));
        let final_state = loop {
            let version_state: String =
                sqlx::query_scalar("SELECT state FROM environment_versions WHERE id = $1")
                    .bind(published.version_id)
                    .fetch_one(&state.pool)
                    .await?;
            if !matches!(
                version_state.as_str(),
                "build_queued" | "building" | "verifying"
            ) {
                break version_state;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        };
        state.shutdown.cancel();
        state.runtime.stopped().await;
        result["state"] = final_state.into();
    }
    state.shutdown.cancel();
    println!("{}", serde_json::to_string_pretty(&result)?);
    Ok(())
}
