//! How each event moves the version and its attempt. The aggregate and the read
//! model both use these functions, so the states they show cannot drift apart.

use super::events::VersionEvent;
use super::model::{BuildStatus, TerminalClass, VersionState};
use uuid::Uuid;

impl TerminalClass {
    /// The attempt status a failure of this class ends in.
    pub fn failed_status(self) -> BuildStatus {
        match self {
            Self::PlatformFailed => BuildStatus::PlatformFailed,
            _ => BuildStatus::CustomerFailed,
        }
    }
}

/// The version state after an event.
pub fn version_state_after(event: &VersionEvent, current: VersionState) -> VersionState {
    match event {
        VersionEvent::VersionCreated(_) => VersionState::Draft,
        VersionEvent::BuildQueued { .. } => VersionState::BuildQueued,
        VersionEvent::BuildClaimed { .. } => VersionState::Building,
        VersionEvent::BuildAdvanced {
            status: BuildStatus::Verifying,
            ..
        } => VersionState::Verifying,
        VersionEvent::BuildCompleted { .. } => VersionState::Ready,
        VersionEvent::BuildFailed { failure, .. } => match failure.terminal_class {
            TerminalClass::PlatformFailed => VersionState::RetryableFailed,
            _ => VersionState::Rejected,
        },
        VersionEvent::BuildCancelled {
            retryable_until: Some(_),
            ..
        } => VersionState::RetryableFailed,
        VersionEvent::BuildCancelled { .. } => VersionState::Draft,
        VersionEvent::VersionArchived => VersionState::Archived,
        VersionEvent::BuildAdvanced { .. }
        | VersionEvent::BuildCancelRequested { .. }
        | VersionEvent::BuildCancelling { .. }
        | VersionEvent::ImageRemoved { .. } => current,
    }
}

/// The attempt an event moves, and its status afterwards.
pub fn attempt_status_after(event: &VersionEvent) -> Option<(Uuid, BuildStatus)> {
    Some(match event {
        VersionEvent::BuildQueued { attempt_id, .. } => {
            (*attempt_id, BuildStatus::ValidationQueued)
        }
        VersionEvent::BuildClaimed { attempt_id, .. } => (*attempt_id, BuildStatus::Validating),
        VersionEvent::BuildAdvanced {
            attempt_id, status, ..
        } => (*attempt_id, *status),
        VersionEvent::BuildCompleted { attempt_id, .. } => (*attempt_id, BuildStatus::Completed),
        VersionEvent::BuildFailed {
            attempt_id,
            failure,
            ..
        } => (*attempt_id, failure.terminal_class.failed_status()),
        VersionEvent::BuildCancelRequested { attempt_id, .. } => {
            (*attempt_id, BuildStatus::CancelRequested)
        }
        VersionEvent::BuildCancelling { attempt_id, .. } => (*attempt_id, BuildStatus::Cancelling),
        VersionEvent::BuildCancelled { attempt_id, .. } => (*attempt_id, BuildStatus::Cancelled),
        VersionEvent::VersionCreated(_)
        | VersionEvent::VersionArchived
        | VersionEvent::ImageRemoved { .. } => return None,
    })
}
