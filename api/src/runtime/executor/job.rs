//! One run: prepare `/workspace`, start a working container of the environment
//! version's image, run `. startup.sh` then `. driver.sh` in it, classify the end,
//! store what it left, record the outcome, clean up.

use super::Executor;
use super::collect::{Collected, collect};
use super::container::WorkingContainer;
use super::steps::StepClock;
use super::workspace::prepare;
use super::{disk, in_cluster};
use super::{secrets, writeback};
use crate::runtime::buildah::{Captured, Confinement, RunError, capture};
use crate::runtime::kube::cluster::Cluster;
use crate::runtime::limits::RunCgroups;
use crate::runtime::network::IsolatedNetwork;
use crate::runtime::worker::Worker;
use domain::catalog::ResourceProfile;
use domain::environments::environment::OwnerScope;
use domain::runs::run::{RunCommand, RunEnded, TerminalClass};
use domain::secrets::owner_consumer;
use domain::secrets::resolve::SlotSources;
use domain::tasks::contents::VersionContents;
use sqlx::types::Json;
use std::path::Path;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;
use zeroize::Zeroizing;

/// Where the workspace is mounted in the container.
pub const WORKSPACE: &str = "/workspace";
/// The fixed invocation. The secrets file is read into the environment and removed
/// before any script of the task runs.
const INVOCATION: &str = "set -a && . /workspace/.secrets.env && set +a && rm -f /workspace/.secrets.env && . /workspace/startup.sh && . /workspace/driver.sh";

#[derive(sqlx::FromRow)]
pub(super) struct RunFacts {
    pub(super) input_key: String,
    pub(super) timeout_seconds: i64,
    resource_profile: String,
    pub(super) contents: Json<VersionContents>,
    image: Option<String>,
    slot_sources: Option<Json<SlotSources>>,
    task_version_id: Uuid,
    task_id: Uuid,
    owner_scope: OwnerScope,
    owner_id: Uuid,
    principal_type: String,
    principal_id: Uuid,
    /// Whether the share grant the run was submitted under (if any) is still
    /// active: a run stays pinned to its grant, and one revoked while the run was
    /// queued ends the run before it starts.
    grant_live: bool,
}

impl RunFacts {
    /// The run's resource profile (the default for a name no longer known).
    pub(super) fn profile(&self) -> ResourceProfile {
        serde_json::from_value(serde_json::Value::String(self.resource_profile.clone()))
            .unwrap_or(ResourceProfile::Standard)
    }
}

/// How the work ended, before its objects are stored.
pub(super) struct Ending {
    pub(super) class: TerminalClass,
    pub(super) error_code: Option<String>,
    pub(super) exit_code: Option<i32>,
    pub(super) log: Vec<u8>,
}

pub(super) fn ending(
    class: TerminalClass,
    code: &str,
    exit_code: Option<i32>,
    log: Vec<u8>,
) -> Ending {
    Ending {
        class,
        error_code: Some(code.into()),
        exit_code,
        log,
    }
}

/// Runs a claimed run to its end; every path records a terminal class.
pub(super) async fn run(
    executor: &Executor,
    run_id: Uuid,
    company: Uuid,
    cancel: CancellationToken,
) {
    let workdir = workdir(executor, run_id);
    let _removed = disk::WorkdirGuard::new(&workdir);
    let mut container = None;
    let executed = execute(executor, run_id, company, &workdir, &mut container, &cancel);
    let ending = match executed.await {
        Ok(ending) => ending,
        Err(error) => {
            // The details (object keys, database and cluster messages) stay in the
            // service's log; the tenant's log says what happened.
            tracing::error!(%run_id, error = format!("{error:#}"), "the run could not be executed");
            let log = b"the platform could not run the work\n".to_vec();
            ending(
                TerminalClass::PlatformFailed,
                "executor_unavailable",
                None,
                log,
            )
        }
    };
    if finish(executor, run_id, company, &workdir, ending).await
        && let Some(cluster) = &executor.cluster
    {
        in_cluster::release(executor, cluster, run_id, company).await;
    }
    if let Some(container) = container {
        container.remove(run_id).await;
    }
}

/// Where a run's workspace is prepared on this machine.
pub(super) fn workdir(executor: &Executor, run_id: Uuid) -> std::path::PathBuf {
    executor
        .state
        .builder
        .run_dir
        .join(run_id.simple().to_string())
}

/// Follows a run another worker started in the cluster to its end (see
/// `in_cluster::follow`), then records it like [`run`].
pub(super) async fn resume(
    executor: &Executor,
    cluster: &Cluster,
    run_id: Uuid,
    company: Uuid,
    cancel: CancellationToken,
) {
    let workdir = workdir(executor, run_id);
    let workspace = workdir.join("workspace");
    let followed = async {
        // What a killed worker left of the workspace is not the run's results.
        disk::remove_workdir(&workdir).await;
        tokio::fs::create_dir_all(&workspace).await?;
        in_cluster::follow(executor, cluster, run_id, company, &workspace, &cancel).await
    };
    let ending = followed.await.unwrap_or_else(|error| {
        tracing::error!(%run_id, error = format!("{error:#}"), "a re-attached run could not be followed");
        let log = b"the platform lost the run's Job\n".to_vec();
        ending(TerminalClass::PlatformFailed, "worker_lost", None, log)
    });
    if finish(executor, run_id, company, &workdir, ending).await {
        in_cluster::release(executor, cluster, run_id, company).await;
    }
}

/// Stores what the run left and records how it ended (unless this process's
/// shutdown stopped it: then the next start recovers it). Whether the run is done
/// with here (not when the shutdown stopped it).
async fn finish(
    executor: &Executor,
    run_id: Uuid,
    company: Uuid,
    workdir: &Path,
    ending: Ending,
) -> bool {
    if executor.state.shutdown.is_cancelled() && ending.class == TerminalClass::Cancelled {
        // Killed by this process's shutdown, not by the tenant: no outcome is
        // recorded, and the next start ends the run `platform_failed`
        // (`worker_lost`) once this worker's heartbeat is stale.
        tracing::info!(%run_id, "run stopped by shutdown; the next start recovers it");
        disk::remove_workdir(workdir).await;
        return false;
    }
    let mut clock = StepClock::start();
    let collected = match collect(&executor.state, company, run_id, workdir, &ending.log).await {
        Ok(collected) => collected,
        Err(error) => {
            tracing::error!(%run_id, error = format!("{error:#}"), "the run's objects could not be stored");
            Collected::default()
        }
    };
    disk::remove_workdir(workdir).await;
    clock.lap("collect");
    let command = RunCommand::Finish(Box::new(RunEnded {
        terminal_class: ending.class,
        error_code: ending.error_code,
        exit_code: ending.exit_code,
        log: collected.log,
        output: collected.output,
        bundle: collected.bundle,
        artifacts: collected.artifacts,
    }));
    executor.command(run_id, company, command).await;
    clock.lap("finish");
    true
}

async fn execute(
    executor: &Executor,
    run_id: Uuid,
    company: Uuid,
    workdir: &Path,
    container: &mut Option<WorkingContainer>,
    cancel: &CancellationToken,
) -> anyhow::Result<Ending> {
    let state = &executor.state;
    let mut clock = StepClock::start();
    let mut facts: RunFacts = sqlx::query_as(
        "SELECT r.input_key, r.timeout_seconds, r.resource_profile, v.contents, ev.image,
                r.slot_sources, r.task_version_id, t.id AS task_id, t.owner_scope, t.owner_id,
                r.principal_type, r.principal_id,
                coalesce(g.state = 'active', r.share_grant_id IS NULL) AS grant_live
           FROM runs r
           JOIN task_versions v ON v.id = r.task_version_id
           JOIN tasks t ON t.id = v.task_id
           LEFT JOIN environment_versions ev ON ev.id = v.environment_version_id
           LEFT JOIN share_grants g ON g.id = r.share_grant_id
          WHERE r.id = $1",
    )
    .bind(run_id)
    .fetch_one(&state.pool)
    .await?;
    clock.lap("facts");
    if !facts.grant_live {
        // The control surface's `share_grant_revoked`: the run simply ends failed.
        return Ok(ending(
            TerminalClass::CustomerFailed,
            "share_grant_revoked",
            None,
            b"the task's share was revoked before the run started\n".to_vec(),
        ));
    }
    let Some(image) = facts.image.take() else {
        return Ok(ending(
            TerminalClass::PlatformFailed,
            "image_unavailable",
            None,
            b"the environment version has no image\n".to_vec(),
        ));
    };
    let sources = facts.slot_sources.take().map(|s| s.0).unwrap_or_default();
    let owner = owner_consumer(facts.owner_scope, facts.owner_id);
    let mut secrets = match secrets::open(
        state,
        (facts.task_id, facts.task_version_id),
        owner,
        &sources,
    )
    .await?
    {
        Ok(secrets) => secrets,
        Err(refusal) => {
            return Ok(ending(
                TerminalClass::CustomerFailed,
                refusal.code(),
                None,
                refusal.to_string().into_bytes(),
            ));
        }
    };
    clock.lap("secrets");
    if let Some(cluster) = &executor.cluster {
        return in_cluster::start(
            executor, cluster, run_id, company, workdir, image, &facts, secrets, cancel,
        )
        .await;
    }
    let policy = facts.contents.output_policy.as_ref();
    let has_output_policy = policy.is_some();
    if has_output_policy && facts.principal_type != "user" {
        return Ok(ending(
            TerminalClass::CustomerFailed,
            "writeback_authority_denied",
            None,
            b"only a user may run a task version with an output policy\n".to_vec(),
        ));
    }
    let mut network = IsolatedNetwork::create(has_output_policy).await?;
    clock.lap("network");
    let metadata = executor.metadata(Some(company));
    let grant = writeback::Grant {
        run_id,
        company_id: company,
        submitter: format!("user:{}", facts.principal_id),
        timeout_seconds: facts.timeout_seconds,
        policy,
    };
    let credential = writeback::mint(state, grant, &metadata).await?;
    let stop_door = CancellationToken::new();
    if let (Some(credential), Some(port)) = (&credential, network.listener_port()) {
        let url = format!("http://127.0.0.1:{port}{}", credential.path);
        secrets.push((
            "SERVICE_CT_WRITEBACK_URL".into(),
            Zeroizing::new(url.into_bytes()),
        ));
        let token = credential.secret.as_bytes().to_vec();
        secrets.push(("SERVICE_CT_WRITEBACK_TOKEN".into(), Zeroizing::new(token)));
        network.open_door(state.builder.service_address, stop_door.clone());
    }
    let _closed = stop_door.drop_guard();
    clock.lap("writeback");
    let ended = work(
        executor, run_id, company, workdir, &facts, &image, &network, secrets, container, cancel,
    )
    .await;
    let mut clock = StepClock::start();
    if let Some(credential) = &credential {
        writeback::revoke(state, credential, &metadata).await?;
    }
    clock.lap("writeback_revoke");
    ended
}

/// Prepares the workspace, starts the working container and runs the work in the
/// run's network.
#[allow(clippy::too_many_arguments)]
async fn work(
    executor: &Executor,
    run_id: Uuid,
    company: Uuid,
    workdir: &Path,
    facts: &RunFacts,
    image: &str,
    network: &IsolatedNetwork,
    secrets: secrets::Opened,
    container: &mut Option<WorkingContainer>,
    cancel: &CancellationToken,
) -> anyhow::Result<Ending> {
    let state = &executor.state;
    let mut clock = StepClock::start();
    let profile = facts.profile();
    if executor.run_disks
        && let Err(error) = disk::mount(workdir, profile.spec().workspace_mib).await
    {
        // No loop device free, say: the run goes on in a plain directory.
        tracing::warn!(%run_id, error = format!("{error:#}"), "the run has no disk of its own: what it writes has no size limit");
        disk::remove_workdir(workdir).await;
    }
    clock.lap("disk");
    let workspace = workdir.join("workspace");
    prepare(state, &workspace, &facts.contents, &facts.input_key).await?;
    secrets::write(&workspace, &secrets).await?;
    drop(secrets);
    clock.lap("workspace");
    let made = WorkingContainer::create(executor, run_id, workdir, image).await;
    let made = match made {
        Ok(made) => made,
        Err(error) => {
            let log = format!("the environment image is not available: {error:#}\n");
            return Ok(ending(
                TerminalClass::PlatformFailed,
                "image_unavailable",
                None,
                log.into_bytes(),
            ));
        }
    };
    clock.lap("container");
    let container = container.insert(made);
    let cgroups = RunCgroups::create(executor.host, run_id, profile)?;
    clock.lap("cgroups");
    let started = executor.command(run_id, company, RunCommand::Start).await;
    clock.lap("start");
    if !started {
        return Ok(ending(
            TerminalClass::Cancelled,
            "cancelled",
            None,
            Vec::new(),
        ));
    }
    let timeout = Duration::from_secs(facts.timeout_seconds.max(1) as u64);
    let command = run_command(&cgroups, network, container, &workspace, &facts.contents);
    let outcome = capture(command, timeout, cancel).await;
    clock.lap("work");
    let limit = if cgroups.oom_killed() {
        Some("memory_limit_exceeded")
    } else if disk::is_full(workdir) {
        Some("workspace_limit_exceeded")
    } else {
        None
    };
    drop(cgroups);
    clock.lap("cgroups_removal");
    Ok(classify(outcome, limit))
}

/// `sh -c '<enter cgroups> exec "$@"' sh nsenter ... unshare ... buildah run ...`:
/// the whole tree runs in the run's cgroups, the run's own network namespace
/// (loopback only, so no outbound network; [`IsolatedNetwork`]) and a fresh PID
/// namespace with its own `/proc` (the work sees
/// only its own processes, and every process of the run dies with the namespace's
/// first process when the run ends, is cancelled or times out), with no
/// capabilities.
fn run_command(
    cgroups: &RunCgroups,
    network: &IsolatedNetwork,
    container: &WorkingContainer,
    workspace: &Path,
    contents: &VersionContents,
) -> tokio::process::Command {
    let mut command = container
        .buildah()
        .confined(Confinement { cgroups, network });
    command
        .args(["run", "--isolation", "chroot", "--cap-drop", "all"])
        .args(["--workingdir", WORKSPACE, "-v"])
        .arg(format!("{}:{WORKSPACE}", workspace.display()));
    for (name, value) in work_env(contents) {
        command.arg("--env").arg(format!("{name}={value}"));
    }
    command
        .arg(container.name())
        .args(["--", "/bin/sh", "-c", INVOCATION]);
    command
}

/// The work's environment: the version's ordinary variables and the `SERVICE_*`
/// paths in the workspace.
pub(super) fn work_env(contents: &VersionContents) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = contents
        .ordinary_env
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    env.extend([
        (
            "SERVICE_INPUTS_FILE".into(),
            format!("{WORKSPACE}/inputs.json"),
        ),
        ("SERVICE_OUTPUT_FILE".into(), format!("{WORKSPACE}/output")),
        (
            "SERVICE_ARTIFACTS_DIR".into(),
            format!("{WORKSPACE}/artifacts"),
        ),
    ]);
    env
}

/// The terminal class of a finished command; `limit` names the limit the work ran
/// into, if any (the cause of a failure, when it failed).
fn classify(outcome: Result<Captured, RunError>, limit: Option<&str>) -> Ending {
    match outcome {
        Ok(captured) if captured.success() => Ending {
            class: TerminalClass::Completed,
            error_code: None,
            exit_code: Some(0),
            log: captured.output,
        },
        Ok(captured) => {
            let code = limit.unwrap_or("exit_nonzero");
            ending(
                TerminalClass::CustomerFailed,
                code,
                captured.code,
                captured.output,
            )
        }
        Err(RunError::TimedOut(log)) => ending(TerminalClass::CustomerFailed, "timeout", None, log),
        Err(RunError::Cancelled(log)) => ending(TerminalClass::Cancelled, "cancelled", None, log),
        Err(RunError::Io(error)) => ending(
            TerminalClass::PlatformFailed,
            "executor_unavailable",
            None,
            format!("the platform could not start the work: {error}\n").into_bytes(),
        ),
    }
}
