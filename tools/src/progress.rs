//! Progress bars for long operator commands, drawn on standard error only when it is
//! a terminal, so a pipe or a log file receives nothing but the command's output.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;

/// A progress bar, or nothing when no one is watching.
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    /// A bar counting events up to `total`, when standard error is a terminal.
    pub fn events(label: &str, total: u64) -> Self {
        Self::when(std::io::stderr().is_terminal(), label, total)
    }

    /// Like [`Progress::events`] for a command whose data goes to standard output:
    /// no bar either when standard output is the same terminal (the lines would
    /// tear it).
    pub fn beside_data(label: &str, total: u64) -> Self {
        let show = std::io::stderr().is_terminal() && !std::io::stdout().is_terminal();
        Self::when(show, label, total)
    }

    fn when(show: bool, label: &str, total: u64) -> Self {
        if !show {
            return Self { bar: None };
        }
        let bar = ProgressBar::new(total);
        let style = ProgressStyle::with_template(
            "{msg} [{elapsed_precise}] {wide_bar} {pos}/{len} {per_sec} ETA {eta}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_message(label.to_string());
        Self { bar: Some(bar) }
    }

    /// Moves the bar to `position` of `total`.
    pub fn set(&self, position: u64, total: u64) {
        if let Some(bar) = &self.bar {
            bar.set_length(total);
            bar.set_position(position);
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
