//! Finding the database and the shared secrets.

use anyhow::Context;
use api::agent::turn::TurnKeys;
use api::auth::jwt::JwtKeys;
use clap::Args;
use projections::pump::PumpConfig;
use projections::store::LogRepository;
use projections::{CommandBus, Pump, read_models};
use sqlx::PgPool;
use std::path::PathBuf;
use tokio_util::sync::CancellationToken;

/// Where the service's data lives.
#[derive(Debug, Clone, Args)]
pub struct Target {
    /// PostgreSQL URL (default: the URL in `<data dir>/database.url`).
    #[arg(long, global = true, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// The service's data directory.
    #[arg(
        long,
        global = true,
        env = "SANDBOX_DATA_DIR",
        default_value = "./.sandbox"
    )]
    pub data_dir: PathBuf,
    /// The JWT secret (default: `<data dir>/jwt.secret`).
    #[arg(
        long,
        global = true,
        env = "SANDBOX_JWT_SECRET",
        hide_env_values = true
    )]
    pub jwt_secret: Option<String>,
    /// The agent turn key (default: `<data dir>/turn.key`).
    #[arg(long, global = true, env = "SANDBOX_TURN_KEY", hide_env_values = true)]
    pub turn_key: Option<String>,
}

impl Target {
    /// The database URL.
    pub fn url(&self) -> anyhow::Result<String> {
        if let Some(url) = &self.database_url {
            return Ok(url.clone());
        }
        let file = self.data_dir.join("database.url");
        let url = std::fs::read_to_string(&file).with_context(|| {
            format!(
                "DATABASE_URL is unset and {} does not exist: start `sandbox-api serve` (which starts the embedded database) or set DATABASE_URL",
                file.display()
            )
        })?;
        Ok(url.trim().to_string())
    }

    /// A pool on the database.
    pub async fn pool(&self) -> anyhow::Result<PgPool> {
        projections::db::connect(&self.url()?, 8).await
    }

    /// The JWT keys the server uses.
    pub fn jwt(&self) -> anyhow::Result<JwtKeys> {
        Ok(JwtKeys::new(&api::keys::jwt_secret(
            self.jwt_secret.as_deref(),
            &self.data_dir,
        )?))
    }

    /// The turn keys the server uses.
    pub fn turn(&self) -> anyhow::Result<TurnKeys> {
        Ok(TurnKeys::new(&api::keys::turn_key(
            self.turn_key.as_deref(),
            &self.data_dir,
        )?))
    }
}

/// A command bus with a running pump, so commands are sealed and projected even when
/// no server runs.
pub async fn command_bus(pool: &PgPool) -> anyhow::Result<(CommandBus, CancellationToken)> {
    let cancel = CancellationToken::new();
    let pump = Pump::new(pool.clone(), read_models::all(), PumpConfig::default());
    pump.start(cancel.clone()).await?;
    Ok((
        CommandBus::new(LogRepository::new(pool.clone()), pump),
        cancel,
    ))
}

/// The service's state (configuration from `SANDBOX_*` variables, like the
/// server), for operator commands that use the workers or the object store. Its pump
/// runs until the state's shutdown token fires.
pub async fn service_state(target: &Target) -> anyhow::Result<api::state::Started> {
    #[derive(clap::Parser)]
    struct Defaults {
        #[command(flatten)]
        config: api::config::Config,
    }
    let url = target.url()?;
    let data_dir = target.data_dir.to_string_lossy().to_string();
    let defaults = <Defaults as clap::Parser>::try_parse_from([
        "sandboxctl",
        "--data-dir",
        &data_dir,
        "--database-url",
        &url,
    ])?;
    let mut config = defaults.config;
    config.jwt_secret = target.jwt_secret.clone();
    config.turn_key = target.turn_key.clone();
    config.transit_key = api::config::TransitKeyMode::Off;
    let pool = projections::db::connect(&url, 8).await?;
    projections::db::migrate(&pool).await?;
    api::state::AppState::start(&config, pool, CancellationToken::new()).await
}

/// The name recorded as the operator in event metadata.
pub fn operator_name() -> String {
    std::env::var("SUDO_USER")
        .or_else(|_| std::env::var("USER"))
        .unwrap_or_else(|_| "operator".into())
}
