//! Where a run's time goes on this worker: each step of a run (claim, workspace,
//! working container, `buildah run`, collection, ...) is recorded in the
//! [`STEP_SECONDS`] histogram, labelled by step, so an operator reads the
//! executor's overhead around the work from `/metrics` and `sandboxctl bench runs`
//! prints it beside a bare `buildah` run.

use std::time::Instant;

/// The histogram of step durations, in seconds, labelled `step`.
pub const STEP_SECONDS: &str = "sandbox_run_step_seconds";

/// The steps, in the order a run goes through them on a worker.
pub const STEPS: [&str; 16] = [
    "claim",
    "facts",
    "secrets",
    "network",
    "writeback",
    "disk",
    "workspace",
    "container",
    "cgroups",
    "start",
    "work",
    "cgroups_removal",
    "writeback_revoke",
    "collect",
    "finish",
    "container_removal",
];

/// Times consecutive steps: each lap records the time since the previous one.
pub(super) struct StepClock {
    last: Instant,
}

impl StepClock {
    /// A clock whose first step starts now.
    pub(super) fn start() -> Self {
        Self {
            last: Instant::now(),
        }
    }

    /// Records the time since the previous lap (or the start) as `step`.
    pub(super) fn lap(&mut self, step: &'static str) {
        let now = Instant::now();
        metrics::histogram!(STEP_SECONDS, "step" => step).record((now - self.last).as_secs_f64());
        self.last = now;
    }
}
