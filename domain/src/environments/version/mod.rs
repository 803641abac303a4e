//! Environment versions and their build attempts, in one aggregate so that "one
//! non-terminal attempt per version" and the version's state move together.

mod aggregate;
mod events;
mod model;
#[cfg(test)]
mod tests;
mod transitions;

pub use aggregate::{EnvironmentVersion, VersionError};
pub use events::{RETRY_WINDOW_DAYS, VersionCommand, VersionEvent};
pub use model::{
    Attempt, BuildFailure, BuildPhase, BuildProfile, BuildReport, BuildStatus, SecurityState,
    TerminalClass, VersionCreated, VersionState,
};
pub use transitions::{attempt_status_after, version_state_after};
