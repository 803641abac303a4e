//! The executor's step profile over a window of a benchmark: the
//! `sandbox_run_step_seconds` histogram of this process (the in-process server's
//! executor records it) read before and after, so the window's runs alone are
//! counted.

use api::middleware::observe::metrics_handle;
use api::runtime::executor::{STEP_SECONDS, STEPS};
use std::collections::BTreeMap;
use std::time::Duration;

/// Per step: total seconds and count, as rendered so far.
#[derive(Debug, Clone, Default)]
pub struct StepTotals(BTreeMap<String, (f64, u64)>);

impl StepTotals {
    /// The totals recorded so far.
    pub fn now() -> Self {
        let rendered = metrics_handle().render();
        let mut totals = BTreeMap::<String, (f64, u64)>::new();
        for line in rendered.lines() {
            let Some((series, value)) = line.rsplit_once(' ') else {
                continue;
            };
            let Ok(value) = value.parse::<f64>() else {
                continue;
            };
            let (kind, labels) =
                if let Some(rest) = series.strip_prefix(&format!("{STEP_SECONDS}_sum")) {
                    ("sum", rest)
                } else if let Some(rest) = series.strip_prefix(&format!("{STEP_SECONDS}_count")) {
                    ("count", rest)
                } else {
                    continue;
                };
            let Some(step) = labels
                .strip_prefix("{step=\"")
                .and_then(|rest| rest.strip_suffix("\"}"))
            else {
                continue;
            };
            let entry = totals.entry(step.to_string()).or_default();
            match kind {
                "sum" => entry.0 = value,
                _ => entry.1 = value as u64,
            }
        }
        Self(totals)
    }

    /// The mean duration of each step recorded since `before`, in the order a run
    /// goes through them.
    pub fn since(&self, before: &StepTotals) -> Vec<(String, Duration, u64)> {
        let mut steps: Vec<(String, Duration, u64)> = self
            .0
            .iter()
            .filter_map(|(step, (sum, count))| {
                let (sum_before, count_before) = before.0.get(step).copied().unwrap_or_default();
                let count = count.checked_sub(count_before).filter(|c| *c > 0)?;
                let mean = (sum - sum_before).max(0.0) / count as f64;
                Some((step.clone(), Duration::from_secs_f64(mean), count))
            })
            .collect();
        steps.sort_by_key(|(step, _, _)| {
            STEPS.iter().position(|s| s == step).unwrap_or(STEPS.len())
        });
        steps
    }
}

/// One line per step: its mean in milliseconds and how many runs it covers.
pub fn print(title: &str, steps: &[(String, Duration, u64)]) {
    let total: Duration = steps.iter().map(|(_, mean, _)| *mean).sum();
    println!(
        "{title} (mean per run; the steps sum to {:.1} ms):",
        total.as_secs_f64() * 1e3
    );
    for (step, mean, count) in steps {
        println!(
            "    {step:<18} {:>8.1} ms   ({count} runs)",
            mean.as_secs_f64() * 1e3
        );
    }
}
