//! One build attempt: validate and extract the context, `buildah bud`, verify the
//! image, store the report, record the outcome.

use super::{Builder, image_paths};
use crate::runtime::buildah::{Captured, Confinement, RunError};
use crate::runtime::limits::RunCgroups;
use crate::runtime::network::IsolatedNetwork;
use crate::runtime::unpack;
use crate::runtime::worker::Worker;
use bytes::Bytes;
use domain::environments::archive::{self, ArchiveLimits};
use domain::environments::dockerfile;
use domain::environments::version::{
    BuildFailure, BuildReport, BuildStatus, EnvironmentVersion, TerminalClass, VersionCommand,
};
use domain::objects::{ObjectCommand, ObjectKind, OwnedObject, StoredObject};
use std::path::PathBuf;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// How an attempt ended.
enum Outcome {
    Ready(String),
    Failed(BuildFailure),
    Cancelled,
}

fn failed(class: TerminalClass, code: &str, detail: &str, stage: &str) -> Outcome {
    Outcome::Failed(BuildFailure {
        terminal_class: class,
        error_code: code.into(),
        error_detail: Some(detail.chars().take(128).collect()),
        stage_code: Some(stage.into()),
    })
}

fn platform(detail: &str, stage: &str) -> Outcome {
    failed(
        TerminalClass::PlatformFailed,
        "platform_failed",
        detail,
        stage,
    )
}

/// The local name of an attempt's image.
pub(super) fn local_image(version_id: Uuid, attempt_id: Uuid) -> String {
    format!("localhost/sandbox-env/{version_id}:{}", attempt_id.simple())
}

/// The name of the working container that verifies an attempt's image.
pub(super) fn container_name(attempt_id: Uuid) -> String {
    format!("sandbox-build-{}", attempt_id.simple())
}

/// Where an attempt's context is unpacked and built.
pub(super) fn work_dir(builder: &Builder, attempt_id: Uuid) -> PathBuf {
    builder.state.builder.work_dir.join(attempt_id.to_string())
}

/// What an attempt works with.
struct Job<'a> {
    builder: &'a Builder,
    attempt_id: Uuid,
    version_id: Uuid,
    environment_id: Uuid,
    company: Option<Uuid>,
    cancel: CancellationToken,
    report: Vec<u8>,
    work: PathBuf,
}

/// Runs one claimed attempt to its end.
pub(super) async fn run(
    builder: &Builder,
    attempt_id: Uuid,
    version_id: Uuid,
    environment_id: Uuid,
    company: Option<Uuid>,
    cancel: CancellationToken,
) {
    let work = work_dir(builder, attempt_id);
    let mut job = Job {
        builder,
        attempt_id,
        version_id,
        environment_id,
        company,
        cancel,
        report: Vec::new(),
        work,
    };
    let outcome = match job.steps().await {
        Ok(outcome) => outcome,
        Err(error) => {
            tracing::error!(%attempt_id, error = format!("{error:#}"), "build failed on the platform side");
            job.note(&format!("platform error: {error:#}"));
            platform("platform_error", "build")
        }
    };
    let report = job.store_report().await;
    let now = chrono::Utc::now();
    match outcome {
        Outcome::Ready(image) => job.complete(image, report).await,
        Outcome::Failed(failure) => {
            job.command(VersionCommand::Fail {
                attempt_id,
                failure,
                report,
                now,
            })
            .await;
        }
        Outcome::Cancelled => job.finish_cancel(report).await,
    }
    let _ = tokio::fs::remove_dir_all(&job.work).await;
}

impl Job<'_> {
    /// Ends a cancelled attempt.
    async fn finish_cancel(&self, report: Option<BuildReport>) {
        let (attempt_id, now) = (self.attempt_id, chrono::Utc::now());
        self.command(VersionCommand::BeginCancel { attempt_id, now })
            .await;
        self.command(VersionCommand::FinishCancel {
            attempt_id,
            report,
            now,
        })
        .await;
    }

    /// Records the built image. A refusal is read from the version: a cancel
    /// that came once the work was done (the attempt waits in `cancel_requested`
    /// for this worker, which finishes it here) or another worker that ended the
    /// attempt leave the image to no version, and it is removed; an attempt still
    /// running (the recording failed on the way) is tried again, three times,
    /// then left to the recovery of a lost attempt.
    async fn complete(&self, image: String, report: Option<BuildReport>) {
        let state = &self.builder.state;
        for pause in [1, 2, 4, 0] {
            let complete = VersionCommand::Complete {
                attempt_id: self.attempt_id,
                image: image.clone(),
                report: report.clone(),
                now: chrono::Utc::now(),
            };
            if self.command(complete).await {
                return;
            }
            let Ok(version) = state
                .bus
                .load::<EnvironmentVersion>(&self.version_id.to_string())
                .await
            else {
                tokio::time::sleep(std::time::Duration::from_secs(pause)).await;
                continue;
            };
            if version.image.as_deref() == Some(image.as_str()) {
                return;
            }
            let Some(status) = version.attempt(self.attempt_id).map(|a| a.status) else {
                return;
            };
            let cancelling = matches!(
                status,
                BuildStatus::CancelRequested | BuildStatus::Cancelling
            );
            if cancelling || status.is_terminal() {
                if let Err(error) = self.builder.buildah.remove_image(&image).await {
                    tracing::warn!(attempt_id = %self.attempt_id, error = format!("{error:#}"), "an unrecorded image was not removed");
                }
                if cancelling {
                    self.finish_cancel(report).await;
                }
                return;
            }
            tokio::time::sleep(std::time::Duration::from_secs(pause)).await;
        }
    }

    /// Pulls the base images and checks their `ONBUILD` triggers, then builds
    /// the image, all in the build's confinement and within its time limit;
    /// `Some` outcome when the attempt ends here.
    async fn build_image(
        &mut self,
        context: &std::path::Path,
        image: &str,
        base_images: &[String],
    ) -> anyhow::Result<Option<Outcome>> {
        let builder = self.builder;
        let (state, buildah) = (&builder.state, &builder.buildah);
        let deadline = std::time::Instant::now() + state.builder.timeout;
        let left = || deadline.saturating_duration_since(std::time::Instant::now());
        let cgroups = RunCgroups::for_build(builder.host, self.attempt_id)?;
        let mut network = IsolatedNetwork::create(true).await?;
        let stop_egress = CancellationToken::new();
        network.open_egress(state.builder.egress.clone(), stop_egress.clone());
        let _egress = stop_egress.drop_guard();
        let confinement = Confinement {
            cgroups: &cgroups,
            network: &network,
        };
        for base in base_images {
            let pulled = buildah
                .pull_base(base, confinement, left(), &self.cancel)
                .await;
            if let Some(ended) = self.ended(pulled, "base_image_unavailable") {
                return Ok(Some(ended));
            }
            let triggers = buildah.onbuild_triggers(base).await?;
            if let Err(rejection) = dockerfile::check_triggers(&triggers) {
                self.note(&format!("ONBUILD of {base}: {rejection}"));
                return Ok(Some(failed(
                    TerminalClass::CustomerFailed,
                    "policy_reject",
                    rejection.rule,
                    "validation",
                )));
            }
        }
        let built = buildah
            .build(
                self.environment_id,
                confinement,
                context,
                image,
                left(),
                &self.cancel,
            )
            .await;
        Ok(self.ended(built, "build_step_failed"))
    }

    /// How a buildah command of the build ended: `None` when it succeeded, else
    /// the attempt's outcome (`failure` names a step that exited non-zero, unless
    /// its output shows a base image could not be pulled).
    fn ended(&mut self, finished: Result<Captured, RunError>, failure: &str) -> Option<Outcome> {
        match finished {
            Ok(captured) => {
                self.report.extend_from_slice(&captured.output);
                if captured.success() {
                    return None;
                }
                let detail = match classify_build_failure(&captured.output) {
                    "build_step_failed" => failure,
                    pull => pull,
                };
                Some(failed(
                    TerminalClass::CustomerFailed,
                    "dockerfile_exit",
                    detail,
                    "build",
                ))
            }
            Err(RunError::TimedOut(output)) => {
                self.report.extend_from_slice(&output);
                self.note("the build ran past its time limit");
                Some(failed(
                    TerminalClass::CustomerFailed,
                    "dockerfile_exit",
                    "build_timeout",
                    "build",
                ))
            }
            Err(RunError::Cancelled(output)) => {
                self.report.extend_from_slice(&output);
                Some(Outcome::Cancelled)
            }
            Err(RunError::Io(error)) => {
                self.note(&format!("buildah cannot run: {error}"));
                Some(platform("builder_unavailable", "build"))
            }
        }
    }

    fn note(&mut self, line: &str) {
        self.report.extend_from_slice(line.as_bytes());
        self.report.push(b'\n');
    }

    async fn command(&self, command: VersionCommand) -> bool {
        self.builder
            .command(self.version_id, self.company, command)
            .await
    }

    /// Moves the attempt on; `false` when it was cancelled meanwhile.
    async fn advance(&self, status: BuildStatus) -> bool {
        let now = chrono::Utc::now();
        self.command(VersionCommand::Advance {
            attempt_id: self.attempt_id,
            status,
            now,
        })
        .await
    }

    async fn steps(&mut self) -> anyhow::Result<Outcome> {
        let state = &self.builder.state;
        let version = state
            .bus
            .load::<EnvironmentVersion>(&self.version_id.to_string())
            .await?;
        let Some(object_id) = version.created.as_ref().and_then(|c| c.owned_object_id) else {
            self.note("the version names no uploaded archive (source_digest alone binds none)");
            return Ok(failed(
                TerminalClass::CustomerFailed,
                "context_invalid",
                "no_bound_archive",
                "validation",
            ));
        };
        let key: Option<String> = sqlx::query_scalar(
            "SELECT key FROM owned_objects WHERE id = $1 AND deletion_state = 'active'",
        )
        .bind(object_id)
        .fetch_optional(&state.pool)
        .await?;
        let Some(key) = key else {
            return Ok(failed(
                TerminalClass::CustomerFailed,
                "context_invalid",
                "archive_unavailable",
                "validation",
            ));
        };
        let context = self.work.join("context");
        tokio::fs::create_dir_all(&context).await?;
        let spooled = state.objects.spool(&key).await?;
        let target = context.clone();
        let scanned = tokio::task::spawn_blocking(move || {
            let mut file = std::fs::File::open(spooled.path())?;
            let format = archive::sniff(&mut file)?;
            Ok::<_, std::io::Error>(archive::scan(
                format,
                std::io::BufReader::new(file),
                ArchiveLimits::default(),
                |entry, reader| unpack::extract(&target, entry, reader),
            ))
        })
        .await??;
        let manifest = match scanned {
            Ok(manifest) => manifest,
            Err(rejection) => {
                self.note(&rejection.to_string());
                let detail = rejection.error_detail();
                return Ok(failed(
                    TerminalClass::CustomerFailed,
                    "context_invalid",
                    detail,
                    "validation",
                ));
            }
        };
        let Some(dockerfile_bytes) = manifest.dockerfile.as_deref() else {
            self.note(&format!(
                "the Dockerfile has {} bytes; at most 1 MiB",
                manifest.dockerfile_bytes
            ));
            return Ok(failed(
                TerminalClass::CustomerFailed,
                "policy_reject",
                "dockerfile_too_large",
                "validation",
            ));
        };
        let base_images = match dockerfile::check(dockerfile_bytes) {
            Ok(base_images) => base_images,
            Err(rejection) => {
                self.note(&rejection.to_string());
                return Ok(failed(
                    TerminalClass::CustomerFailed,
                    "policy_reject",
                    rejection.rule,
                    "validation",
                ));
            }
        };
        self.note(&format!(
            "validation passed: {} entries, {} bytes of content",
            manifest.entries, manifest.total_bytes
        ));
        if self.cancel.is_cancelled()
            || !self.advance(BuildStatus::BuildQueued).await
            || !self.advance(BuildStatus::Building).await
        {
            return Ok(Outcome::Cancelled);
        }
        let image = local_image(self.version_id, self.attempt_id);
        if let Some(ended) = self.build_image(&context, &image, &base_images).await? {
            return Ok(ended);
        }
        let buildah = &self.builder.buildah;
        if !self.advance(BuildStatus::Verifying).await {
            let _ = buildah.remove_image(&image).await;
            return Ok(Outcome::Cancelled);
        }
        let container = container_name(self.attempt_id);
        let reserved = match image_paths::reserved(buildah, &image, &container).await {
            Ok(reserved) => reserved,
            Err(error) => {
                // No version records the image: nothing else would remove it.
                let _ = buildah.remove_image(&image).await;
                return Err(error);
            }
        };
        if let Some(path) = reserved {
            self.note(&format!(
                "the image already holds /{path}, which the platform writes at run time"
            ));
            let _ = buildah.remove_image(&image).await;
            return Ok(failed(
                TerminalClass::CustomerFailed,
                "context_invalid",
                "reserved_path_in_image",
                "verify",
            ));
        }
        self.note("verification passed");
        let Some(registry) = &state.builder.registry else {
            return Ok(Outcome::Ready(image));
        };
        let pushed = format!(
            "{}/sandbox-env/{}:{}",
            registry.trim_end_matches('/'),
            self.version_id,
            self.attempt_id.simple()
        );
        match buildah.push(&image, &pushed).await {
            Ok(()) => {
                self.note(&format!("pushed to {pushed}"));
                Ok(Outcome::Ready(pushed))
            }
            Err(error) => {
                self.note(&format!("the image could not be pushed: {error:#}"));
                let _ = buildah.remove_image(&image).await;
                Ok(platform("registry_unavailable", "push"))
            }
        }
    }

    /// Stores the report as an owned object.
    async fn store_report(&self) -> Option<BuildReport> {
        let state = &self.builder.state;
        let object_id = Uuid::new_v4();
        let owner = self
            .company
            .map_or_else(|| "curated".to_string(), |c| c.to_string());
        let key = format!("reports/{owner}/{object_id}");
        let written = state
            .objects
            .put_bytes(&key, Bytes::from(self.report.clone()))
            .await
            .ok()?;
        let stored = StoredObject {
            object_id,
            company_id: self.company,
            kind: ObjectKind::Report,
            digest: written.digest,
            byte_size: written.byte_size,
            key,
        };
        let meta = self.builder.metadata(self.company);
        state
            .bus
            .record::<OwnedObject>(&object_id.to_string(), ObjectCommand::Record(stored), &meta)
            .await
            .ok()?;
        Some(BuildReport {
            object_id,
            total_bytes: written.byte_size as i64,
        })
    }
}

/// A short name for why `buildah bud` failed.
fn classify_build_failure(output: &[u8]) -> &'static str {
    let text = String::from_utf8_lossy(output).to_ascii_lowercase();
    let pulls = [
        "pinging container registry",
        "initializing source",
        "unable to pull",
        "error pulling",
        "manifest unknown",
    ];
    if pulls.iter().any(|p| text.contains(p)) {
        "base_image_unavailable"
    } else {
        "build_step_failed"
    }
}
