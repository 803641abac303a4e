//! The build worker: claims queued build attempts (at most `slots` at once in this
//! process and `active_build_limit` per company), runs each through validation,
//! `buildah bud` and verification, and records the outcome on the version.
//!
//! Claims go through the version aggregate, so two workers never run the same
//! attempt. Attempts claimed by a worker whose heartbeat went stale (a crash, a
//! restart) end `platform_failed` with a 7-day retry window, or `cancelled` when a
//! cancel was pending: a build is never left stuck.

mod image_paths;
mod job;

use crate::admission;
use crate::limits::company_limits;
use crate::runtime::Runtime;
use crate::runtime::buildah::Buildah;
use crate::runtime::heartbeat::{self, WORKER_GONE};
use crate::runtime::limits::{self, HostLimits};
use crate::runtime::worker::{Running, Worker};
use domain::environments::version::{
    BuildFailure, EnvironmentVersion, TerminalClass, VersionCommand,
};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;
use uuid::Uuid;

/// The worker's shared parts.
#[derive(Clone)]
pub struct Builder {
    state: Arc<Runtime>,
    worker_id: String,
    buildah: Buildah,
    /// The cgroup controllers a build's limits use.
    host: HostLimits,
    slots: Arc<Semaphore>,
    running: Running,
}

#[derive(sqlx::FromRow)]
struct Queued {
    id: Uuid,
    version_id: Uuid,
    environment_id: Uuid,
    company_id: Option<Uuid>,
}

impl Builder {
    /// A builder for this process.
    pub fn new(state: Arc<Runtime>) -> Self {
        let buildah = Buildah::new(&state.builder);
        let slots = Arc::new(Semaphore::new(state.builder.slots));
        Self {
            state,
            worker_id: heartbeat::worker_id("builder"),
            buildah,
            host: HostLimits::detect(),
            slots,
            running: Running::default(),
        }
    }

    /// Claims one attempt if its company is under its active-build limit.
    async fn claim_one(&self, attempt: &Queued) -> anyhow::Result<bool> {
        let company_lock = match attempt.company_id {
            Some(company) => {
                let lock = admission::lock(&self.state.pool, company, "active-builds").await?;
                let limit = company_limits(&self.state.pool, company)
                    .await
                    .map_err(api_error)?
                    .active_build_limit;
                let active: i64 = sqlx::query_scalar(
                    "SELECT count(*) FROM build_attempts
                      WHERE company_id = $1 AND status IN ('validating', 'build_queued', 'building', 'verifying', 'cancelling')",
                )
                .bind(company)
                .fetch_one(&self.state.pool)
                .await?;
                if active >= limit {
                    return Ok(false);
                }
                Some(lock)
            }
            None => None,
        };
        let command = VersionCommand::Claim {
            attempt_id: attempt.id,
            worker_id: self.worker_id.clone(),
            now: chrono::Utc::now(),
        };
        // Under the company's lock until the read models show the claim, which the
        // next claim counts.
        let claimed = self
            .state
            .bus
            .record_until_visible::<EnvironmentVersion>(
                &attempt.version_id.to_string(),
                command,
                &self.metadata(attempt.company_id),
                &self.state.shutdown,
            )
            .await
            .is_ok();
        drop(company_lock);
        Ok(claimed)
    }

    /// Issues a command on a version, logging a refusal (another worker or a cancel
    /// may have moved the attempt on).
    async fn command(
        &self,
        version_id: Uuid,
        company: Option<Uuid>,
        command: VersionCommand,
    ) -> bool {
        let result = self
            .state
            .bus
            .record::<EnvironmentVersion>(&version_id.to_string(), command, &self.metadata(company))
            .await;
        match result {
            Ok(_) => true,
            Err(error) => {
                tracing::info!(%version_id, %error, "build step not recorded");
                false
            }
        }
    }
}

fn api_error(error: crate::error::ApiError) -> anyhow::Error {
    anyhow::anyhow!("{error:?}")
}

impl Worker for Builder {
    const KIND: &'static str = "builder";
    const INTERVAL: Duration = Duration::from_millis(500);

    fn runtime(&self) -> &Arc<Runtime> {
        &self.state
    }

    fn worker_id(&self) -> &str {
        &self.worker_id
    }

    fn running(&self) -> &Running {
        &self.running
    }

    /// Ends attempts claimed by workers that are gone.
    async fn recover(&self) -> anyhow::Result<()> {
        let lost: Vec<(Uuid, Uuid, Option<Uuid>, String)> = sqlx::query_as(&format!(
            "SELECT a.id, a.version_id, a.company_id, a.status FROM build_attempts a
              WHERE a.worker_id IS NOT NULL AND a.worker_id <> $1
                AND a.status IN ('validating', 'build_queued', 'building', 'verifying', 'cancel_requested', 'cancelling')
                AND {WORKER_GONE}"
        ))
        .bind(&self.worker_id)
        .fetch_all(&self.state.pool)
        .await?;
        for (attempt_id, version_id, company, status) in lost {
            let now = chrono::Utc::now();
            let command = if status == "cancel_requested" || status == "cancelling" {
                VersionCommand::FinishCancel {
                    attempt_id,
                    report: None,
                    now,
                }
            } else {
                let failure = BuildFailure {
                    terminal_class: TerminalClass::PlatformFailed,
                    error_code: "platform_failed".into(),
                    error_detail: Some("worker_lost".into()),
                    stage_code: Some(status),
                };
                VersionCommand::Fail {
                    attempt_id,
                    failure,
                    report: None,
                    now,
                }
            };
            tracing::warn!(%attempt_id, "recovering a build attempt whose worker is gone");
            // Its processes, files, container and image, if it ran on this host (a crashed
            // server of this machine): nothing of an attempt ended as lost goes on.
            limits::end_leftover_build(attempt_id).await;
            let _ = tokio::fs::remove_dir_all(job::work_dir(self, attempt_id)).await;
            let _ = self.buildah.remove(&job::container_name(attempt_id)).await;
            let image = job::local_image(version_id, attempt_id);
            if self.buildah.image_exists(&image).await {
                let _ = self.buildah.remove_image(&image).await;
            }
            self.command(version_id, company, command).await;
        }
        Ok(())
    }

    /// Cancels unclaimed attempts at once and signals the running ones.
    async fn dispatch_cancels(&self) -> anyhow::Result<()> {
        let requested: Vec<(Uuid, Uuid, Option<Uuid>, Option<String>)> = sqlx::query_as(
            "SELECT id, version_id, company_id, worker_id FROM build_attempts WHERE status = 'cancel_requested'",
        )
        .fetch_all(&self.state.pool)
        .await?;
        for (attempt_id, version_id, company, worker) in requested {
            match worker {
                None => {
                    let command = VersionCommand::FinishCancel {
                        attempt_id,
                        report: None,
                        now: chrono::Utc::now(),
                    };
                    self.command(version_id, company, command).await;
                }
                Some(worker) if worker == self.worker_id => {
                    if let Some(token) = self.running.token(attempt_id) {
                        token.cancel();
                    }
                }
                Some(_) => {}
            }
        }
        Ok(())
    }

    /// Claims queued attempts while slots and company limits allow.
    async fn claim(&self) -> anyhow::Result<()> {
        if self.slots.available_permits() == 0 {
            return Ok(());
        }
        let queued: Vec<Queued> = sqlx::query_as(
            "SELECT id, version_id, environment_id, company_id FROM build_attempts
              WHERE status = 'validation_queued' ORDER BY queued_at, id LIMIT 50",
        )
        .fetch_all(&self.state.pool)
        .await?;
        for attempt in queued {
            let Ok(permit) = Arc::clone(&self.slots).try_acquire_owned() else {
                break;
            };
            if !self.claim_one(&attempt).await? {
                drop(permit);
                continue;
            }
            let builder = self.clone();
            self.running
                .launch(&self.state, attempt.id, Some(permit), |stop| async move {
                    job::run(
                        &builder,
                        attempt.id,
                        attempt.version_id,
                        attempt.environment_id,
                        attempt.company_id,
                        stop,
                    )
                    .await;
                });
        }
        Ok(())
    }
}
