//! (b): single-event commands per second through the real HTTP command path.
//!
//! An in-process server runs on the scratch database; each client is the manager of
//! its own company and changes its settings (`PUT /settings`, one event per call,
//! carrying `policy_version` forward), so the clients never conflict.

use super::raw::Scratch;
use super::stats::{Summary, summarize};
use api::admin::directory::{Applier, DirectoryFile};
use api::admin::operator_metadata;
use api::config::{Config, LogFormat, SecretKeyMode, TransitKeyMode};
use api::state::AppState;
use domain::catalog::Provider;
use serde_json::json;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Runs `clients` concurrent managers for `duration`.
pub async fn commands(
    scratch: &Scratch,
    clients: usize,
    duration: Duration,
) -> anyhow::Result<Summary> {
    let data = std::env::temp_dir().join(format!("sandbox-bench-{}", uuid::Uuid::new_v4()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let config = bench_config(scratch, listener.local_addr()?, data.clone());
    let cancel = CancellationToken::new();
    let started = AppState::start(&config, scratch.pool.clone(), cancel.clone()).await?;
    let state = started.state.clone();
    let server_cancel = cancel.clone();
    tokio::spawn(async move {
        let app = api::server::app(started.state);
        let stopped = async move { server_cancel.cancelled().await };
        let _ = api::server::serve_router(listener, app, stopped).await;
    });
    let run = uuid::Uuid::new_v4().simple().to_string();
    let companies: Vec<_> = (0..clients)
        .map(|i| json!({"ref": format!("bench-{run}-{i}"), "name": "bench", "users": [{"ref": "m", "username": "m", "role": 3}]}))
        .collect();
    let file: DirectoryFile = serde_json::from_value(json!({"companies": companies}))?;
    let applied = Applier {
        bus: &state.bus,
        jwt: &state.jwt,
        token_ttl: chrono::Duration::hours(1),
        metadata: operator_metadata("bench"),
    }
    .apply(&file)
    .await?;
    let url = format!("{}/private/module/sandbox/settings", config.base_url());
    let client = reqwest::Client::new();
    let tokens: Vec<String> = applied
        .companies
        .values()
        .map(|c| c.users["m"].token.clone())
        .collect();
    for token in &tokens {
        client
            .get(&url)
            .bearer_auth(token)
            .send()
            .await?
            .error_for_status()?;
    }
    let begin = Instant::now();
    let tasks: Vec<_> = tokens
        .into_iter()
        .map(|token| {
            let (client, url) = (client.clone(), url.clone());
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                let mut version = 1;
                while begin.elapsed() < duration {
                    let body = json!({"run_content_retention_days": 1 + version % 300, "policy_version": version});
                    let sent = Instant::now();
                    let response = client.put(&url).bearer_auth(&token).json(&body).send().await?;
                    anyhow::ensure!(response.status().is_success(), "PUT /settings answered {}", response.status());
                    response.bytes().await?;
                    latencies.push(sent.elapsed());
                    version += 1;
                }
                Ok::<_, anyhow::Error>(latencies)
            })
        })
        .collect();
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await??);
    }
    let elapsed = begin.elapsed();
    cancel.cancel();
    let _ = std::fs::remove_dir_all(data);
    Ok(summarize(latencies, elapsed))
}

/// The configuration of an in-process benchmark server on a scratch database: no
/// transit key, one build slot.
pub fn bench_config(
    scratch: &Scratch,
    listen: std::net::SocketAddr,
    data: std::path::PathBuf,
) -> Config {
    Config {
        role: api::config::Role::All,
        object_store: None,
        executor: api::config::ExecutorKind::Buildah,
        registry: None,
        kube_namespace: "sandbox-runs".into(),
        kube_tools_image: String::new(),
        kube_object_store_cidrs: Vec::new(),
        build_egress_allow: Vec::new(),
        data_dir: data,
        database_url: Some(scratch.url.clone()),
        listen,
        base_url: None,
        provider: Provider::Onprem,
        regions: Vec::new(),
        enabled: true,
        jwt_secret: Some("bench-secret-bench-secret-bench-secret!".into()),
        turn_key: None,
        receipt_key: None,
        transit_key: TransitKeyMode::Off,
        secret_store: SecretKeyMode::DataDir,
        secret_pepper: SecretKeyMode::DataDir,
        log_format: LogFormat::Text,
        region_job_quotas: Vec::new(),
        build_slots: 1,
        run_slots: 4,
        buildah: "buildah".into(),
        build_timeout: std::time::Duration::from_secs(300).into(),
        read_wait_timeout: std::time::Duration::from_secs(10).into(),
        trigger_interval: std::time::Duration::from_secs(2).into(),
        allow_clock_override: false,
    }
}
