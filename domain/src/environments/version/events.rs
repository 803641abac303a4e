//! Commands and events of [`super::EnvironmentVersion`].

use super::model::{BuildFailure, BuildProfile, BuildReport, BuildStatus, VersionCreated};
use chrono::{DateTime, Utc};
use cqrs_es::DomainEvent;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Days a platform-failed version may be retried.
pub const RETRY_WINDOW_DAYS: i64 = 7;

/// Commands of [`super::EnvironmentVersion`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VersionCommand {
    /// Creates the version.
    Create(VersionCreated),
    /// Queues a first build of a draft version.
    QueueBuild {
        /// The new attempt's id.
        attempt_id: Uuid,
        /// Build region.
        region: String,
        /// Build profile.
        profile: BuildProfile,
        /// Now.
        now: DateTime<Utc>,
    },
    /// Queues a new attempt of a `retryable_failed` version within its window.
    RetryBuild {
        /// The new attempt's id.
        attempt_id: Uuid,
        /// Build region (defaults; the failed attempt's are not reused).
        region: String,
        /// Build profile.
        profile: BuildProfile,
        /// Now.
        now: DateTime<Utc>,
    },
    /// A worker takes a queued attempt.
    Claim {
        /// The attempt.
        attempt_id: Uuid,
        /// The worker.
        worker_id: String,
        /// Now.
        now: DateTime<Utc>,
    },
    /// The claimed attempt moves to the next status.
    Advance {
        /// The attempt.
        attempt_id: Uuid,
        /// `build_queued`, `building` or `verifying`.
        status: BuildStatus,
        /// Now.
        now: DateTime<Utc>,
    },
    /// The image is built and verified.
    Complete {
        /// The attempt.
        attempt_id: Uuid,
        /// The image reference runs use.
        image: String,
        /// The stored report.
        report: Option<BuildReport>,
        /// Now.
        now: DateTime<Utc>,
    },
    /// The attempt failed.
    Fail {
        /// The attempt.
        attempt_id: Uuid,
        /// How.
        failure: BuildFailure,
        /// The stored report.
        report: Option<BuildReport>,
        /// Now.
        now: DateTime<Utc>,
    },
    /// The tenant asks to cancel.
    RequestCancel {
        /// The attempt.
        attempt_id: Uuid,
        /// Now.
        now: DateTime<Utc>,
    },
    /// The worker starts cancelling.
    BeginCancel {
        /// The attempt.
        attempt_id: Uuid,
        /// Now.
        now: DateTime<Utc>,
    },
    /// The attempt is cancelled.
    FinishCancel {
        /// The attempt.
        attempt_id: Uuid,
        /// The stored report, if any.
        report: Option<BuildReport>,
        /// Now.
        now: DateTime<Utc>,
    },
    /// Retires the version.
    Archive,
    /// The janitor removed the image of an archived version that nothing pinned
    /// for the company's `unreferenced_image_retention_days`.
    RemoveImage {
        /// Now.
        now: DateTime<Utc>,
    },
}

/// Events of [`super::EnvironmentVersion`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum VersionEvent {
    /// The version exists (state `draft`).
    VersionCreated(VersionCreated),
    /// An attempt is queued (status `validation_queued`).
    BuildQueued {
        /// The attempt.
        attempt_id: Uuid,
        /// Its number.
        attempt_number: i64,
        /// Build region.
        region: String,
        /// Build profile.
        profile: BuildProfile,
        /// When.
        at: DateTime<Utc>,
    },
    /// A worker took the attempt (status `validating`).
    BuildClaimed {
        /// The attempt.
        attempt_id: Uuid,
        /// The worker.
        worker_id: String,
        /// When.
        at: DateTime<Utc>,
    },
    /// The attempt moved on.
    BuildAdvanced {
        /// The attempt.
        attempt_id: Uuid,
        /// The new status.
        status: BuildStatus,
        /// When.
        at: DateTime<Utc>,
    },
    /// The version is ready.
    BuildCompleted {
        /// The attempt.
        attempt_id: Uuid,
        /// The image reference.
        image: String,
        /// The report.
        report: Option<BuildReport>,
        /// When.
        at: DateTime<Utc>,
    },
    /// The attempt failed.
    BuildFailed {
        /// The attempt.
        attempt_id: Uuid,
        /// How.
        failure: BuildFailure,
        /// The report.
        report: Option<BuildReport>,
        /// End of the retry window (platform failures only).
        retryable_until: Option<DateTime<Utc>>,
        /// When.
        at: DateTime<Utc>,
    },
    /// Cancel intent recorded (status `cancel_requested`).
    BuildCancelRequested {
        /// The attempt.
        attempt_id: Uuid,
        /// When.
        at: DateTime<Utc>,
    },
    /// The worker is cancelling (status `cancelling`).
    BuildCancelling {
        /// The attempt.
        attempt_id: Uuid,
        /// When.
        at: DateTime<Utc>,
    },
    /// The attempt is cancelled; the version is a draft again.
    BuildCancelled {
        /// The attempt.
        attempt_id: Uuid,
        /// The report.
        report: Option<BuildReport>,
        /// When.
        at: DateTime<Utc>,
        /// The retry window of the failure a cancelled retry was retrying: the
        /// version returns to `retryable_failed` until then (none: to `draft`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retryable_until: Option<DateTime<Utc>>,
    },
    /// The version is archived.
    VersionArchived,
    /// The archived version's image is deleted from image storage: it can never
    /// run again.
    ImageRemoved {
        /// The image reference that was deleted.
        image: String,
        /// When.
        at: DateTime<Utc>,
    },
}

impl DomainEvent for VersionEvent {
    fn event_type(&self) -> String {
        match self {
            Self::VersionCreated(_) => "VersionCreated",
            Self::BuildQueued { .. } => "BuildQueued",
            Self::BuildClaimed { .. } => "BuildClaimed",
            Self::BuildAdvanced { .. } => "BuildAdvanced",
            Self::BuildCompleted { .. } => "BuildCompleted",
            Self::BuildFailed { .. } => "BuildFailed",
            Self::BuildCancelRequested { .. } => "BuildCancelRequested",
            Self::BuildCancelling { .. } => "BuildCancelling",
            Self::BuildCancelled { .. } => "BuildCancelled",
            Self::VersionArchived => "VersionArchived",
            Self::ImageRemoved { .. } => "ImageRemoved",
        }
        .into()
    }
    fn event_version(&self) -> String {
        "1".into()
    }
}
