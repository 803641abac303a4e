//! A run as a Job of a Kubernetes cluster (the Kubernetes executor). The workspace
//! the local executor would mount is prepared the same way, packed and put in the
//! object store; the Job fetches it through a short-lived URL, runs the work and
//! puts its results through another; they are unpacked into the same workspace, so
//! what is collected and recorded is decided by the local executor's code.
//!
//! The Job outlives this process: at a shutdown it is left running, and the next
//! worker re-attaches to it ([`super::Executor::reattach`]).

use super::Executor;
use super::job::{Ending, RunFacts, ending, work_env};
use super::secrets;
use super::workspace::prepare;
use crate::runtime::kube::cluster::{Cluster, JobEnd};
use crate::runtime::kube::manifest::{
    RESULTS_URL_KEY, RunSpec, SECRETS_KEY, TRANSFER_GRACE_SECONDS, WORKSPACE_URL_KEY,
};
use crate::runtime::kube::transfer;
use axum::http::Method;
use domain::runs::run::{RunCommand, TerminalClass};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// How long the workspace URL is valid: the pod fetches it when it starts.
const FETCH_WINDOW: Duration = Duration::from_secs(15 * 60);
/// The most bytes of results unpacked (output, artifacts and exit code).
const MAX_RESULTS_BYTES: u64 = 4 << 30;

/// The object keys a run's files move through.
struct Keys {
    workspace: String,
    results: String,
}

impl Keys {
    fn of(company: Uuid, run_id: Uuid) -> Self {
        let base = format!("runs/{company}/{run_id}/transfer");
        Self {
            workspace: format!("{base}/workspace.tar"),
            results: format!("{base}/results.tar"),
        }
    }
}

/// Prepares the workspace, creates the run's Job and follows it to its end.
#[allow(clippy::too_many_arguments)]
pub(super) async fn start(
    executor: &Executor,
    cluster: &Cluster,
    run_id: Uuid,
    company: Uuid,
    workdir: &Path,
    image: String,
    facts: &RunFacts,
    secrets: secrets::Opened,
    cancel: &CancellationToken,
) -> anyhow::Result<Ending> {
    if facts.contents.output_policy.is_some() {
        let log = b"command-output write-back is not available on the Kubernetes executor\n";
        return Ok(ending(
            TerminalClass::PlatformFailed,
            "executor_unavailable",
            None,
            log.to_vec(),
        ));
    }
    let state = &executor.state;
    let workspace = workdir.join("workspace");
    prepare(state, &workspace, &facts.contents, &facts.input_key).await?;
    let keys = Keys::of(company, run_id);
    let scratch = workdir.to_path_buf();
    let source = workspace.clone();
    let packed = tokio::task::spawn_blocking(move || transfer::pack(&source, &scratch)).await??;
    state
        .objects
        .put_file(&keys.workspace, packed.path())
        .await?;
    let results_window = Duration::from_secs(
        (facts.timeout_seconds.max(1) + TRANSFER_GRACE_SECONDS) as u64 + FETCH_WINDOW.as_secs(),
    );
    let data = BTreeMap::from([
        (
            SECRETS_KEY.to_string(),
            String::from_utf8_lossy(&secrets::env_file(&secrets)).into_owned(),
        ),
        (
            WORKSPACE_URL_KEY.to_string(),
            state
                .objects
                .signed_url(Method::GET, &keys.workspace, FETCH_WINDOW)
                .await?,
        ),
        (
            RESULTS_URL_KEY.to_string(),
            state
                .objects
                .signed_url(Method::PUT, &keys.results, results_window)
                .await?,
        ),
    ]);
    drop(secrets);
    let spec = RunSpec {
        run_id,
        image,
        profile: facts.profile(),
        timeout_seconds: facts.timeout_seconds,
        env: work_env(&facts.contents),
    };
    cluster.start(&spec, data).await?;
    if !executor.command(run_id, company, RunCommand::Start).await {
        cluster.delete(run_id).await?;
        remove(executor, &keys).await;
        return Ok(ending(
            TerminalClass::Cancelled,
            "cancelled",
            None,
            Vec::new(),
        ));
    }
    follow(executor, cluster, run_id, company, &workspace, cancel).await
}

/// Watches the run's Job to its end and brings its results into `workspace`; the
/// Job and the transfer objects stay until the end is recorded ([`release`]), and
/// at this process's shutdown the Job goes on (the next worker re-attaches).
pub(super) async fn follow(
    executor: &Executor,
    cluster: &Cluster,
    run_id: Uuid,
    company: Uuid,
    workspace: &Path,
    cancel: &CancellationToken,
) -> anyhow::Result<Ending> {
    let end = cluster.watch(run_id, cancel).await?;
    if end == JobEnd::Cancelled && executor.state.shutdown.is_cancelled() {
        return Ok(ending(
            TerminalClass::Cancelled,
            "cancelled",
            None,
            Vec::new(),
        ));
    }
    let keys = Keys::of(company, run_id);
    let mut log = cluster.log(run_id).await.unwrap_or_else(|error| {
        tracing::warn!(%run_id, error = format!("{error:#}"), "the work's log could not be read");
        b"the work's log could not be read\n".to_vec()
    });
    let ended = match end {
        JobEnd::Succeeded => match results(executor, &keys, workspace).await {
            Ok(()) => match transfer::exit_code(workspace) {
                Some(0) => Ending {
                    class: TerminalClass::Completed,
                    error_code: None,
                    exit_code: Some(0),
                    log,
                },
                Some(code) => ending(
                    TerminalClass::CustomerFailed,
                    "exit_nonzero",
                    Some(code),
                    log,
                ),
                None => {
                    log.extend_from_slice(b"the work left no exit code\n");
                    ending(
                        TerminalClass::PlatformFailed,
                        "executor_unavailable",
                        None,
                        log,
                    )
                }
            },
            Err(error) => {
                tracing::warn!(%run_id, error = format!("{error:#}"), "the run's results could not be read");
                log.extend_from_slice(b"the results could not be read\n");
                ending(
                    TerminalClass::PlatformFailed,
                    "executor_unavailable",
                    None,
                    log,
                )
            }
        },
        JobEnd::DeadlineExceeded => ending(TerminalClass::CustomerFailed, "timeout", None, log),
        JobEnd::OutOfMemory => ending(
            TerminalClass::CustomerFailed,
            "memory_limit_exceeded",
            None,
            log,
        ),
        JobEnd::Cancelled => ending(TerminalClass::Cancelled, "cancelled", None, log),
        JobEnd::Failed(reason) => {
            log.extend_from_slice(format!("the run's Job failed: {reason}\n").as_bytes());
            ending(
                TerminalClass::PlatformFailed,
                "executor_unavailable",
                None,
                log,
            )
        }
        JobEnd::Gone => {
            log.extend_from_slice(b"the run's Job was deleted outside the service\n");
            ending(
                TerminalClass::PlatformFailed,
                "executor_unavailable",
                None,
                log,
            )
        }
    };
    Ok(ended)
}

/// Removes a run's Job and its transfer objects, once its end is recorded: removed
/// before, a crash between the two would leave a run that completed with nothing to
/// collect again from (the next worker finds no Job and ends it `worker_lost`).
pub(super) async fn release(executor: &Executor, cluster: &Cluster, run_id: Uuid, company: Uuid) {
    if let Err(error) = cluster.delete(run_id).await {
        tracing::warn!(%run_id, error = format!("{error:#}"), "the run's Job was not deleted");
    }
    remove(executor, &Keys::of(company, run_id)).await;
}

/// Fetches the results archive and unpacks it into the workspace.
async fn results(executor: &Executor, keys: &Keys, workspace: &Path) -> anyhow::Result<()> {
    let spooled = executor.state.objects.spool(&keys.results).await?;
    let target = workspace.to_path_buf();
    tokio::task::spawn_blocking(move || {
        transfer::unpack_results(spooled.path(), &target, MAX_RESULTS_BYTES)
    })
    .await?
}

async fn remove(executor: &Executor, keys: &Keys) {
    for key in [&keys.workspace, &keys.results] {
        if let Err(error) = executor.state.objects.delete(key).await {
            tracing::warn!(
                key,
                error = format!("{error:#}"),
                "a transfer object was not removed"
            );
        }
    }
}
