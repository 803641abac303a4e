//! Service configuration: flags of `sandbox-api serve`, each with an environment
//! variable of the same meaning. Every setting is documented in the README.

use crate::runtime::kube::KubeSettings;
use clap::Args;
use clap::builder::BoolishValueParser;
use domain::catalog::{self, Provider};
use std::net::SocketAddr;
use std::path::PathBuf;

/// Job quota of an active region when the operator configures none.
pub const DEFAULT_JOB_QUOTA: u64 = 1000;

/// How logs are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// What a node of a deployment does (`docs/scaling.md`). Every role takes part in
/// the election of the one node that seals and projects the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Serves the API; claims no builds, runs or trigger work.
    Api,
    /// Claims builds, runs and trigger work; serves only `/healthz`, `/metrics`
    /// and the callback routes its runs write back through.
    Worker,
    /// Both (one machine).
    All,
}

impl Role {
    /// Whether this node serves the API.
    pub fn serves_api(self) -> bool {
        matches!(self, Self::Api | Self::All)
    }

    /// Whether this node claims background work.
    pub fn works(self) -> bool {
        matches!(self, Self::Worker | Self::All)
    }
}

/// Where runs execute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExecutorKind {
    /// `buildah run` on this machine, in namespaces and cgroups of the run's own.
    Buildah,
    /// A Job per run in a Kubernetes cluster (`docs/deploy-kubernetes.md`).
    Kubernetes,
}

/// Whether the RSA transit key pair for encrypted secret writes is available.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TransitKeyMode {
    /// Use the key pair in the data directory, generating it at first start.
    Generate,
    /// No key pair: the public-key route answers 503.
    Off,
}

/// Where a key of the secret store comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SecretKeyMode {
    /// A file in the data directory, generated at first start.
    DataDir,
    /// None: secret writes answer 503.
    Off,
}

/// Everything `sandbox-api serve` needs.
#[derive(Debug, Clone, Args)]
pub struct Config {
    /// What this node does: `api`, `worker` or `all`.
    #[arg(long, env = "SANDBOX_ROLE", value_enum, default_value = "all")]
    pub role: Role,

    /// Directory for the embedded database, objects and generated keys.
    #[arg(long, env = "SANDBOX_DATA_DIR", default_value = "./.sandbox")]
    pub data_dir: PathBuf,

    /// Where objects live: `s3://bucket/prefix` (credentials, region and endpoint
    /// from the `AWS_*` variables); unset keeps them under the data directory.
    #[arg(long, env = "SANDBOX_OBJECT_STORE")]
    pub object_store: Option<String>,

    /// PostgreSQL URL; unset starts a private cluster under the data directory.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,

    /// Address to listen on.
    #[arg(long, env = "SANDBOX_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,

    /// Public base URL used in every URL the service returns (default `http://` + listen).
    #[arg(long, env = "SANDBOX_BASE_URL")]
    pub base_url: Option<String>,

    /// Deployment provider: `onprem` or `managed`.
    #[arg(long, env = "SANDBOX_PROVIDER", default_value = "onprem")]
    pub provider: Provider,

    /// The operator's active region set (comma separated); defaults to every region
    /// of the provider's catalog.
    #[arg(long, env = "SANDBOX_REGIONS", value_delimiter = ',')]
    pub regions: Vec<String>,

    /// Kill switch: `false` makes every non-GET sandbox change answer 503.
    #[arg(long, env = "SANDBOX_ENABLED", default_value = "true", value_parser = BoolishValueParser::new(), action = clap::ArgAction::Set)]
    pub enabled: bool,

    /// HMAC secret of user JWTs; generated into the data directory when unset.
    #[arg(long, env = "SANDBOX_JWT_SECRET", hide_env_values = true)]
    pub jwt_secret: Option<String>,

    /// HMAC key of agent turn contexts (`X-Sandbox-Turn`), shared with the chat
    /// platform that signs them; generated into the data directory (`turn.key`)
    /// when unset.
    #[arg(long, env = "SANDBOX_TURN_KEY", hide_env_values = true)]
    pub turn_key: Option<String>,

    /// HMAC key of agent proposal receipts, held by this service alone (every node
    /// of a deployment needs the same one); generated into the data directory
    /// (`receipt.key`) when unset.
    #[arg(long, env = "SANDBOX_RECEIPT_KEY", hide_env_values = true)]
    pub receipt_key: Option<String>,

    /// Transit key pair for encrypted secret values.
    #[arg(
        long,
        env = "SANDBOX_TRANSIT_KEY",
        value_enum,
        default_value = "generate"
    )]
    pub transit_key: TransitKeyMode,

    /// Key-encryption key of the secret store (`secret_kek` in the data directory);
    /// `off` answers secret writes 503 `sandbox_secretstore_unconfigured`.
    #[arg(
        long,
        env = "SANDBOX_SECRET_STORE",
        value_enum,
        default_value = "data-dir"
    )]
    pub secret_store: SecretKeyMode,

    /// Pepper of the secret store's value digests (`secret_pepper` in the data
    /// directory); `off` answers secret writes 503 `sandbox_secret_pepper_missing`.
    #[arg(
        long,
        env = "SANDBOX_SECRET_PEPPER",
        value_enum,
        default_value = "data-dir"
    )]
    pub secret_pepper: SecretKeyMode,

    /// Log format.
    #[arg(long, env = "SANDBOX_LOG_FORMAT", value_enum, default_value = "text")]
    pub log_format: LogFormat,

    /// Confirmed job quota per active region (`region=jobs,...`); unset regions of
    /// the active set get 1000. A region with quota 0 or unknown makes the
    /// capacity-retained version limit 0.
    #[arg(long, env = "SANDBOX_REGION_JOB_QUOTAS", value_delimiter = ',')]
    pub region_job_quotas: Vec<String>,

    /// Builds this process runs at once (the fleet's build slots).
    #[arg(long, env = "SANDBOX_BUILD_SLOTS", default_value_t = 2)]
    pub build_slots: usize,

    /// Runs this process executes at once (the fleet's run slots); 0 runs no
    /// executor in this process (an API-only node).
    #[arg(long, env = "SANDBOX_RUN_SLOTS", default_value_t = 4)]
    pub run_slots: usize,

    /// The buildah program.
    #[arg(long, env = "SANDBOX_BUILDAH", default_value = "buildah")]
    pub buildah: PathBuf,

    /// Where runs execute: `buildah` (this machine) or `kubernetes`.
    #[arg(long, env = "SANDBOX_EXECUTOR", value_enum, default_value = "buildah")]
    pub executor: ExecutorKind,

    /// OCI registry builds push their images to (`host[:port]/path`); runs pull
    /// them from there. Required by the Kubernetes executor; lets buildah workers on
    /// several machines share images.
    #[arg(long, env = "SANDBOX_REGISTRY")]
    pub registry: Option<String>,

    /// Namespace of the runs' Jobs (Kubernetes executor).
    #[arg(long, env = "SANDBOX_KUBE_NAMESPACE", default_value = "sandbox-runs")]
    pub kube_namespace: String,

    /// Image of the containers that move a run's workspace and results (a shell,
    /// `tar` and `curl`; Kubernetes executor).
    #[arg(
        long,
        env = "SANDBOX_KUBE_TOOLS_IMAGE",
        default_value = "docker.io/curlimages/curl:8.11.1"
    )]
    pub kube_tools_image: String,

    /// The object store's address blocks (comma separated CIDRs): the only egress
    /// a run's pod is allowed (Kubernetes executor).
    #[arg(long, env = "SANDBOX_KUBE_OBJECT_STORE_CIDRS", value_delimiter = ',')]
    pub kube_object_store_cidrs: Vec<String>,

    /// Address blocks a build's steps may reach besides the public internet
    /// (comma separated CIDRs): an internal package mirror, or the gateway this
    /// host's resolver answers with for public names. Nothing else that is not
    /// public is reachable from a build.
    #[arg(long, env = "SANDBOX_BUILD_EGRESS_ALLOW", value_delimiter = ',')]
    pub build_egress_allow: Vec<ipnet::IpNet>,

    /// Longest build before it fails as `platform_failed`.
    #[arg(long, env = "SANDBOX_BUILD_TIMEOUT", default_value = "30m")]
    pub build_timeout: humantime::Duration,

    /// How long a command waits for the read models to show its write before it
    /// answers 503 `committed_not_yet_visible` (the write stays committed).
    #[arg(long, env = "SANDBOX_READ_WAIT_TIMEOUT", default_value = "10s")]
    pub read_wait_timeout: humantime::Duration,

    /// How often the table trigger pass runs (new writes, reached dates and due
    /// schedule windows become trigger runs, pending runs run).
    #[arg(long, env = "SANDBOX_TRIGGER_INTERVAL", default_value = "2s")]
    pub trigger_interval: humantime::Duration,

    /// Lets `POST /root/custom-tables/run-due-triggers` take a `now` other than
    /// the real clock (tests only; refused with 400 otherwise).
    #[arg(long, env = "SANDBOX_ALLOW_CLOCK_OVERRIDE", default_value = "false", value_parser = BoolishValueParser::new(), action = clap::ArgAction::Set)]
    pub allow_clock_override: bool,
}

impl Config {
    /// The cluster runs execute in, checked: the Kubernetes executor needs a
    /// registry, an S3 object store (runs move their files through signed URLs)
    /// and the object store's address blocks.
    pub fn cluster(&self) -> anyhow::Result<Option<KubeSettings>> {
        if self.executor != ExecutorKind::Kubernetes {
            return Ok(None);
        }
        anyhow::ensure!(
            self.registry.is_some(),
            "the Kubernetes executor needs SANDBOX_REGISTRY: runs pull their images from it"
        );
        anyhow::ensure!(
            self.object_store.is_some(),
            "the Kubernetes executor needs SANDBOX_OBJECT_STORE=s3://...: runs move their files through it"
        );
        anyhow::ensure!(
            !self.kube_object_store_cidrs.is_empty(),
            "the Kubernetes executor needs SANDBOX_KUBE_OBJECT_STORE_CIDRS: the only egress of a run's pod"
        );
        Ok(Some(KubeSettings {
            namespace: self.kube_namespace.clone(),
            tools_image: self.kube_tools_image.clone(),
            object_store_cidrs: self.kube_object_store_cidrs.clone(),
        }))
    }

    /// The listen address as a client on this machine reaches it (an unspecified
    /// address becomes loopback).
    pub fn local_address(&self) -> SocketAddr {
        let mut address = self.listen;
        if address.ip().is_unspecified() {
            address.set_ip(match address {
                SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
            });
        }
        address
    }

    /// The base URL, defaulting to `http://` plus the listen address.
    pub fn base_url(&self) -> String {
        self.base_url
            .clone()
            .unwrap_or_else(|| format!("http://{}", self.listen))
            .trim_end_matches('/')
            .to_string()
    }

    /// The confirmed job quota of each selectable region.
    pub fn job_quotas(&self) -> Vec<(String, Option<u64>)> {
        let configured: Vec<(&str, Option<u64>)> = self
            .region_job_quotas
            .iter()
            .filter_map(|entry| entry.split_once('='))
            .map(|(region, jobs)| (region.trim(), jobs.trim().parse().ok()))
            .collect();
        self.selectable_regions()
            .into_iter()
            .map(|region| {
                let quota = if configured.is_empty() {
                    Some(DEFAULT_JOB_QUOTA)
                } else {
                    configured
                        .iter()
                        .find(|(r, _)| *r == region)
                        .and_then(|(_, q)| *q)
                };
                (region, quota)
            })
            .collect()
    }

    /// The operator's active regions: the configured ones that exist in the
    /// provider's catalog, or the whole catalog.
    pub fn selectable_regions(&self) -> Vec<String> {
        let catalog: Vec<&str> = catalog::regions_for(self.provider)
            .iter()
            .map(|r| r.code)
            .collect();
        if self.regions.is_empty() {
            return catalog.into_iter().map(String::from).collect();
        }
        self.regions
            .iter()
            .filter(|code| catalog.contains(&code.as_str()))
            .cloned()
            .collect()
    }
}
