//! The state every handler shares.

use crate::auth::jwt::JwtKeys;
use crate::config::{Config, SecretKeyMode, TransitKeyMode};
use crate::error::ApiResult;
use crate::keys::{self, TransitKey};
use crate::objects::Objects;
use crate::runtime::Runtime;
use crate::secrets::SecretStore;
use crate::secrets::kek::{KeyEncryptionKey, LocalKek};
use domain::catalog::Provider;
use domain::principal::EventMetadata;
use domain::{AggregateExt, SpecError};
use projections::pump::PumpConfig;
use projections::store::LogRepository;
use projections::{CommandBus, Committed, Pump, read_models};
use sqlx::PgPool;
use std::ops::Deref;
use std::sync::Arc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Deployment facts handlers read.
#[derive(Debug, Clone)]
pub struct Deployment {
    /// Base URL of every URL the service returns.
    pub base_url: String,
    /// The provider.
    pub provider: Provider,
    /// The operator's active regions.
    pub selectable_regions: Vec<String>,
    /// The kill switch (true = enabled).
    pub enabled: bool,
    /// Whether the operator's trigger pass may be given another clock (tests).
    pub allow_clock_override: bool,
    /// Confirmed job quota per selectable region (`None` when unknown).
    pub job_quotas: Vec<(String, Option<u64>)>,
    /// What this node does.
    pub role: crate::config::Role,
}

/// How builds run on this machine.
#[derive(Debug, Clone)]
pub struct BuilderSettings {
    /// The buildah program.
    pub buildah: std::path::PathBuf,
    /// buildah's storage root, run root and driver record live under this directory.
    pub storage_dir: std::path::PathBuf,
    /// Scratch space for contexts being built.
    pub work_dir: std::path::PathBuf,
    /// Builds at once in this process.
    pub slots: usize,
    /// Runs at once in this process (0: no executor here).
    pub run_slots: usize,
    /// Scratch space for the workspaces of runs.
    pub run_dir: std::path::PathBuf,
    /// Longest build.
    pub timeout: std::time::Duration,
    /// What a build's steps may reach.
    pub egress: crate::runtime::network::egress::Destinations,
    /// This service's own listener as a local client reaches it: where a run's
    /// network door relays its callback writes.
    pub service_address: std::net::SocketAddr,
    /// Where built images are pushed (and runs pull them from), if anywhere.
    pub registry: Option<String>,
    /// Runs execute in this cluster instead of with this machine's buildah.
    pub cluster: Option<crate::runtime::kube::KubeSettings>,
}

/// Shared handles: database, command bus, keys, deployment facts.
pub struct Inner {
    /// Read-model and event-store pool.
    pub pool: PgPool,
    /// Executes commands and waits for read models.
    pub bus: CommandBus,
    /// JWT keys.
    pub jwt: JwtKeys,
    /// Verifies agent turn contexts.
    pub turn: crate::agent::turn::TurnKeys,
    /// Signs and checks agent proposal receipts.
    pub receipts: crate::agent::receipt::ReceiptKey,
    /// The key public link tokens are tagged with.
    pub links: crate::links::LinkKey,
    /// The transit key pair, when configured.
    pub transit: Option<TransitKey>,
    /// Deployment facts.
    pub deployment: Deployment,
    /// The object store.
    pub objects: Objects,
    /// Build settings.
    pub builder: BuilderSettings,
    /// Stops background workers at shutdown.
    pub shutdown: CancellationToken,
    /// Background work: the workers and what routes hand off (migrations, exports).
    pub runtime: Arc<Runtime>,
    /// Request windows of public read tokens.
    pub throttle: crate::throttle::Throttle,
    /// Client-access passphrase attempts: 300-second windows per table and client.
    pub passphrase_throttle: crate::throttle::Throttle,
    /// Name resolutions (`name_eq`, `name_contains`): 300-second windows per table
    /// and caller.
    pub name_throttle: crate::throttle::Throttle,
    /// Answers, totals and schemas of public reads, by data version.
    pub public_reads: crate::answer_cache::PublicReadCache,
}

/// Cheaply clonable state.
#[derive(Clone)]
pub struct AppState(Arc<Inner>);

impl Deref for AppState {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

impl AppState {
    /// Executes a request's command and waits for the read models (see
    /// `CommandBus::execute`); refusals, conflicts and a late read model answer
    /// through the one error mapping.
    pub async fn command<A>(
        &self,
        id: impl ToString,
        command: A::Command,
        metadata: &EventMetadata,
    ) -> ApiResult<Committed<A>>
    where
        A: AggregateExt<Services = ()>,
        A::Command: Clone,
        A::Error: SpecError,
    {
        Ok(self
            .bus
            .execute::<A>(&id.to_string(), command, metadata)
            .await?)
    }
}

/// The state plus the background tasks it started.
pub struct Started {
    /// The state.
    pub state: AppState,
    /// The pump loop; finishes after `cancel` fires.
    pub pump: JoinHandle<()>,
}

impl AppState {
    /// Builds the state on a migrated pool and starts the pump.
    pub async fn start(
        config: &Config,
        pool: PgPool,
        cancel: CancellationToken,
    ) -> anyhow::Result<Started> {
        std::fs::create_dir_all(&config.data_dir)?;
        crate::middleware::observe::metrics_handle();
        let secret = keys::jwt_secret(config.jwt_secret.as_deref(), &config.data_dir)?;
        let jwt = JwtKeys::new(&secret);
        let links = crate::links::LinkKey::derive(&secret);
        let turn_key = keys::turn_key(config.turn_key.as_deref(), &config.data_dir)?;
        let turn = crate::agent::turn::TurnKeys::new(&turn_key);
        let receipt_key = keys::receipt_key(config.receipt_key.as_deref(), &config.data_dir)?;
        let receipts = crate::agent::receipt::ReceiptKey::derive(&receipt_key);
        let transit = match config.transit_key {
            TransitKeyMode::Off => None,
            TransitKeyMode::Generate => {
                let dir = config.data_dir.clone();
                Some(
                    tokio::task::spawn_blocking(move || TransitKey::load_or_generate(&dir))
                        .await??,
                )
            }
        };
        let pump_config = PumpConfig {
            wait_timeout: config.read_wait_timeout.into(),
            ..PumpConfig::default()
        };
        let pump = Pump::new(pool.clone(), read_models::all(), pump_config);
        let pump_task = pump.start(cancel.clone()).await?;
        let bus = CommandBus::new(LogRepository::new(pool.clone()), pump);
        let deployment = Deployment {
            base_url: config.base_url(),
            provider: config.provider,
            selectable_regions: config.selectable_regions(),
            enabled: config.enabled,
            allow_clock_override: config.allow_clock_override,
            job_quotas: config.job_quotas(),
            role: config.role,
        };
        let objects = Objects::open(
            config.object_store.as_deref(),
            &config.data_dir.join("objects"),
            &config.data_dir.join("scratch"),
        )?;
        let builder = BuilderSettings {
            buildah: config.buildah.clone(),
            storage_dir: config.data_dir.join("buildah"),
            work_dir: config.data_dir.join("builds"),
            slots: config.build_slots.max(1),
            run_slots: config.run_slots,
            run_dir: config.data_dir.join("runs"),
            timeout: config.build_timeout.into(),
            egress: crate::runtime::network::egress::Destinations {
                extra: config.build_egress_allow.clone().into(),
            },
            service_address: config.local_address(),
            registry: config.registry.clone(),
            cluster: config.cluster()?,
        };
        let secrets = Arc::new(secret_store(config)?);
        let runtime = Runtime::new(
            pool.clone(),
            bus.clone(),
            objects.clone(),
            secrets,
            builder.clone(),
            cancel.clone(),
        );
        let state = AppState(Arc::new(Inner {
            pool,
            bus,
            jwt,
            turn,
            receipts,
            links,
            transit,
            deployment,
            objects,
            builder,
            shutdown: cancel,
            runtime,
            throttle: Default::default(),
            passphrase_throttle: crate::throttle::Throttle::with_window(
                crate::throttle::FIVE_MINUTES,
            ),
            name_throttle: crate::throttle::Throttle::with_window(crate::throttle::FIVE_MINUTES),
            public_reads: Default::default(),
        }));
        Ok(Started {
            state,
            pump: pump_task,
        })
    }
}

/// The secret store with the keys the configuration asks for.
fn secret_store(config: &Config) -> anyhow::Result<SecretStore> {
    let kek: Option<Arc<dyn KeyEncryptionKey>> = match config.secret_store {
        SecretKeyMode::Off => None,
        SecretKeyMode::DataDir => Some(Arc::new(LocalKek::load_or_generate(&config.data_dir)?)),
    };
    let pepper = match config.secret_pepper {
        SecretKeyMode::Off => None,
        SecretKeyMode::DataDir => Some(keys::random_key(&config.data_dir, "secret_pepper")?),
    };
    Ok(SecretStore::new(kek, pepper))
}
