//! The run executor: claims queued runs (at most `run_slots` at once in this process
//! and the company's run concurrency), runs each in its environment version's image
//! with `buildah run` in a network namespace of its own, and records how it ended with
//! its log, output and artifacts.
//!
//! With the Kubernetes executor each run is a Job of a cluster instead
//! (`in_cluster.rs`).
//!
//! Claims go through the Run aggregate, so two workers never run the same run.
//! Runs claimed by a worker whose heartbeat went stale (a crash, a restart) end
//! `platform_failed` (`worker_lost`), or `cancelled` when a cancel was pending: a
//! run is never left in `starting` or `running`. A run whose Job still runs in the
//! cluster is re-attached instead: this worker takes it over and follows it.

mod collect;
mod container;
mod disk;
mod in_cluster;
mod job;
mod secrets;
mod steps;
mod workspace;
mod writeback;

pub use steps::{STEP_SECONDS, STEPS};

use crate::admission;
use crate::limits::company_limits;
use crate::runtime::Runtime;
use crate::runtime::buildah::Buildah;
use crate::runtime::heartbeat::{self, WORKER_GONE};
use crate::runtime::kube::cluster::Cluster;
use crate::runtime::limits::HostLimits;
use crate::runtime::worker::{Running, Worker};
use domain::runs::run::{Run, RunCommand, RunEnded, TerminalClass};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;
use uuid::Uuid;

/// The claim pass's view of the queue: the oldest queued runs, each with its
/// company and whether its version is still runnable (public for the benchmark
/// that times it under an old snapshot).
pub const QUEUED_RUNS: &str = "SELECT r.id, r.company_id,
        coalesce(v.state = 'published' AND v.content_state = 'active', false)
   FROM runs r LEFT JOIN task_versions v ON v.id = r.task_version_id
  WHERE r.status = 'queued' ORDER BY r.queued_at, r.id LIMIT 500";

/// The executor's shared parts.
#[derive(Clone)]
pub struct Executor {
    state: Arc<Runtime>,
    worker_id: String,
    buildah: Buildah,
    host: HostLimits,
    /// Whether runs get a disk of their profile's workspace size (`disk.rs`).
    run_disks: bool,
    /// Set once the work directories a crash left are removed (the first pass
    /// that could).
    leftovers: Arc<tokio::sync::OnceCell<()>>,
    slots: Arc<Semaphore>,
    running: Running,
    /// The cluster runs execute in (the Kubernetes executor), if any.
    cluster: Option<Arc<Cluster>>,
}

/// Whether this host can give runs a disk (logged once when it cannot).
fn run_disks(state: &Runtime) -> bool {
    let probed = std::fs::create_dir_all(&state.builder.run_dir)
        .map_err(anyhow::Error::from)
        .and_then(|()| disk::probe(&state.builder.run_dir));
    if let Err(error) = &probed {
        tracing::warn!(
            error = format!("{error:#}"),
            "runs cannot get a disk of their own: what a run writes is not limited to its profile's workspace size"
        );
    }
    probed.is_ok()
}

/// A started run whose worker stopped heartbeating.
#[derive(sqlx::FromRow)]
struct LostRun {
    id: Uuid,
    company_id: Uuid,
    status: String,
    worker_id: String,
}

impl Executor {
    /// An executor for this process, running work in `cluster` when given.
    pub fn new(state: Arc<Runtime>, cluster: Option<Arc<Cluster>>) -> Self {
        let host = HostLimits::detect();
        if !(host.memory && host.cpu && host.pids && host.devices) {
            tracing::warn!(
                memory = host.memory,
                cpu = host.cpu,
                pids = host.pids,
                devices = host.devices,
                "cgroup v1 controllers missing: runs are not limited by the missing ones"
            );
        }
        let run_disks = cluster.is_none() && run_disks(&state);
        Self {
            buildah: Buildah::new(&state.builder),
            slots: Arc::new(Semaphore::new(state.builder.run_slots)),
            worker_id: heartbeat::worker_id("executor"),
            running: Running::default(),
            host,
            run_disks,
            leftovers: Arc::default(),
            state,
            cluster,
        }
    }

    /// Takes over a started run whose worker (`lost`) is gone while its Job still
    /// runs in the cluster (`jobs`: the runs with a Job); answers whether the run
    /// is taken care of: re-attached here, or by another worker that found it lost
    /// first (then this one leaves it alone).
    async fn reattach(&self, lost: &LostRun, jobs: &[Uuid]) -> bool {
        let Some(cluster) = self.cluster.clone() else {
            return false;
        };
        let (run_id, company, status) = (lost.id, lost.company_id, lost.status.as_str());
        if !jobs.contains(&run_id) {
            return false;
        }
        let command = RunCommand::Reattach {
            worker_id: self.worker_id.clone(),
            from: Some(lost.worker_id.clone()),
        };
        if !self.command(run_id, company, command).await {
            return true;
        }
        tracing::info!(%run_id, "re-attached to a run whose Job outlived its worker");
        if status == "starting" {
            self.command(run_id, company, RunCommand::Start).await;
        }
        let executor = self.clone();
        let token = self
            .running
            .launch(&self.state, run_id, None, |stop| async move {
                job::resume(&executor, &cluster, run_id, company, stop).await;
            });
        if status == "cancel_requested" {
            token.cancel();
        }
        true
    }

    /// Claims one run if its company is under its run concurrency. The lock is held
    /// until the read models show the claim, which the next claim counts.
    async fn claim_one(&self, run_id: Uuid, company: Uuid) -> anyhow::Result<bool> {
        let _lock = admission::lock(&self.state.pool, company, "run-concurrency").await?;
        let limit = company_limits(&self.state.pool, company)
            .await
            .map_err(|e| anyhow::anyhow!("{e:?}"))?
            .run_concurrency_limit;
        let active: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM runs
              WHERE company_id = $1 AND status IN ('starting', 'running', 'cancel_requested')",
        )
        .bind(company)
        .fetch_one(&self.state.pool)
        .await?;
        if active >= limit {
            return Ok(false);
        }
        let command = RunCommand::Claim {
            worker_id: self.worker_id.clone(),
        };
        let meta = self.metadata(Some(company));
        let recorded = self
            .state
            .bus
            .record_until_visible::<Run>(&run_id.to_string(), command, &meta, &self.state.shutdown)
            .await;
        if let Err(error) = &recorded {
            tracing::info!(%run_id, %error, "run claim not recorded");
        }
        Ok(recorded.is_ok())
    }

    /// Issues a command on a run, logging a refusal (a cancel or another worker may
    /// have moved the run on).
    async fn command(&self, run_id: Uuid, company: Uuid, command: RunCommand) -> bool {
        let result = self
            .state
            .bus
            .record::<Run>(&run_id.to_string(), command, &self.metadata(Some(company)))
            .await;
        match result {
            Ok(_) => true,
            Err(error) => {
                tracing::info!(%run_id, %error, "run step not recorded");
                false
            }
        }
    }

    /// Ends a run without objects.
    async fn finish_bare(&self, run_id: Uuid, company: Uuid, class: TerminalClass, code: &str) {
        let command = RunCommand::Finish(Box::new(RunEnded::bare(class, code)));
        self.command(run_id, company, command).await;
    }
}

impl Worker for Executor {
    const KIND: &'static str = "executor";
    const INTERVAL: Duration = Duration::from_millis(250);

    fn runtime(&self) -> &Arc<Runtime> {
        &self.state
    }

    fn worker_id(&self) -> &str {
        &self.worker_id
    }

    fn running(&self) -> &Running {
        &self.running
    }

    /// Ends runs held by workers that are gone, and runs of this worker whose job
    /// ended without its outcome being recorded (the store refused the `Finish`):
    /// a job leaves the running set only after it tried to record its end, and
    /// claims happen later in the same pass, so such a run has no job any more.
    async fn recover(&self) -> anyhow::Result<()> {
        let run_dir = &self.state.builder.run_dir;
        let swept = self
            .leftovers
            .get_or_try_init(|| disk::remove_leftovers(&self.state.pool, run_dir))
            .await;
        if let Err(error) = swept {
            tracing::warn!(
                error = format!("{error:#}"),
                "leftover work directories were not removed; the next pass tries again"
            );
        }
        let mine: Vec<(Uuid, Uuid, String)> = sqlx::query_as(
            "SELECT id, company_id, status FROM runs
              WHERE worker_id = $1 AND status IN ('starting', 'running', 'cancel_requested')",
        )
        .bind(&self.worker_id)
        .fetch_all(&self.state.pool)
        .await?;
        let orphaned: Vec<(Uuid, Uuid, String)> = mine
            .into_iter()
            .filter(|(id, ..)| !self.running.contains(*id))
            .collect();
        for (run_id, company, status) in orphaned {
            let (class, code) = if status == "cancel_requested" {
                (TerminalClass::Cancelled, "cancelled")
            } else {
                (TerminalClass::PlatformFailed, "outcome_not_recorded")
            };
            tracing::warn!(%run_id, "ending a run whose outcome was not recorded");
            self.finish_bare(run_id, company, class, code).await;
        }
        let lost: Vec<LostRun> = sqlx::query_as(&format!(
            "SELECT a.id, a.company_id, a.status, a.worker_id FROM runs a
              WHERE a.worker_id IS NOT NULL AND a.worker_id <> $1
                AND a.status IN ('starting', 'running', 'cancel_requested')
                AND {WORKER_GONE}"
        ))
        .bind(&self.worker_id)
        .fetch_all(&self.state.pool)
        .await?;
        let jobs = match &self.cluster {
            Some(cluster) if !lost.is_empty() => cluster.runs().await?,
            _ => Vec::new(),
        };
        for run in lost {
            if self.reattach(&run, &jobs).await {
                continue;
            }
            let (run_id, company, status) = (run.id, run.company_id, run.status);
            let (class, code) = if status == "cancel_requested" {
                (TerminalClass::Cancelled, "cancelled")
            } else {
                (TerminalClass::PlatformFailed, "worker_lost")
            };
            tracing::warn!(%run_id, "recovering a run whose worker is gone");
            // Its processes and files, if it ran on this host (a crashed server of
            // this machine): nothing of a run ended as lost goes on running.
            crate::runtime::limits::end_leftover_run(run_id).await;
            disk::remove_workdir(&job::workdir(self, run_id)).await;
            let _ = self
                .buildah
                .remove(&container::container_name(run_id))
                .await;
            self.finish_bare(run_id, company, class, code).await;
        }
        Ok(())
    }

    /// Signals the runs of this worker whose cancel was requested.
    async fn dispatch_cancels(&self) -> anyhow::Result<()> {
        let requested: Vec<Uuid> = sqlx::query_scalar(
            "SELECT id FROM runs WHERE status = 'cancel_requested' AND worker_id = $1",
        )
        .bind(&self.worker_id)
        .fetch_all(&self.state.pool)
        .await?;
        for run_id in requested {
            if let Some(token) = self.running.token(run_id) {
                token.cancel();
            }
        }
        Ok(())
    }

    /// Claims queued runs, oldest first, while slots and company limits allow; a
    /// company at its run concurrency is skipped for the rest of the pass, and a
    /// queued run whose version stopped being runnable (its task was archived
    /// meanwhile) is cancelled instead of started.
    async fn claim(&self) -> anyhow::Result<()> {
        if self.slots.available_permits() == 0 {
            return Ok(());
        }
        let queued: Vec<(Uuid, Uuid, bool)> = sqlx::query_as(QUEUED_RUNS)
            .fetch_all(&self.state.pool)
            .await?;
        let mut saturated = std::collections::HashSet::new();
        for (run_id, company, runnable) in queued {
            if !runnable {
                self.command(run_id, company, RunCommand::Cancel).await;
                continue;
            }
            if saturated.contains(&company) {
                continue;
            }
            let Ok(permit) = Arc::clone(&self.slots).try_acquire_owned() else {
                break;
            };
            let mut clock = steps::StepClock::start();
            let claimed = self.claim_one(run_id, company).await?;
            clock.lap("claim");
            if !claimed {
                saturated.insert(company);
                drop(permit);
                continue;
            }
            let executor = self.clone();
            self.running
                .launch(&self.state, run_id, Some(permit), |stop| async move {
                    job::run(&executor, run_id, company, stop).await;
                });
        }
        Ok(())
    }
}
