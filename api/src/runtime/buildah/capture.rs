//! Running a command to its end in its own process group, capturing its output,
//! and killing the whole tree (the command and whatever it started) on a timeout
//! or a cancel.

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

/// Output kept from one command at most; the middle of longer output is dropped.
pub const MAX_CAPTURE: usize = 4 << 20;

/// A finished command.
#[derive(Debug)]
pub struct Captured {
    /// Exit code (`None` when killed by a signal).
    pub code: Option<i32>,
    /// stdout and stderr, interleaved as they arrived.
    pub output: Vec<u8>,
}

impl Captured {
    /// Whether it exited 0.
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }
}

/// Why a command did not finish by itself.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// It ran past its time and was killed.
    #[error("timed out")]
    TimedOut(Vec<u8>),
    /// It was cancelled and killed.
    #[error("cancelled")]
    Cancelled(Vec<u8>),
    /// It could not be started or read.
    #[error("cannot run: {0}")]
    Io(#[from] std::io::Error),
}

/// Runs a command in its own process group, capturing its output, until it ends,
/// times out or is cancelled (then every process of the group is killed).
pub async fn capture(
    mut command: Command,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<Captured, RunError> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = command.spawn()?;
    let group = child.id().map(|id| Pid::from_raw(id as i32));
    let output = Arc::new(Mutex::new(Vec::new()));
    let readers = [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn AsyncRead + Send + Unpin>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn AsyncRead + Send + Unpin>),
    ];
    let tasks: Vec<_> = readers
        .into_iter()
        .flatten()
        .map(|mut reader| {
            let output = Arc::clone(&output);
            tokio::spawn(async move {
                let mut buffer = [0u8; 8192];
                while let Ok(n) = reader.read(&mut buffer).await {
                    if n == 0 {
                        break;
                    }
                    let mut output = output.lock().expect("output lock");
                    if output.len() < MAX_CAPTURE {
                        output.extend_from_slice(&buffer[..n]);
                    }
                }
            })
        })
        .collect();
    let outcome = tokio::select! {
        status = child.wait() => Ok(status?),
        _ = tokio::time::sleep(timeout) => Err(true),
        _ = cancel.cancelled() => Err(false),
    };
    if outcome.is_err() {
        if let Some(group) = group {
            let _ = killpg(group, Signal::SIGKILL);
        }
        let _ = child.wait().await;
    }
    for task in tasks {
        let _ = task.await;
    }
    let output = std::mem::take(&mut *output.lock().expect("output lock"));
    match outcome {
        Ok(status) => Ok(Captured {
            code: status.code(),
            output,
        }),
        Err(true) => Err(RunError::TimedOut(output)),
        Err(false) => Err(RunError::Cancelled(output)),
    }
}
