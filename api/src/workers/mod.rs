//! Background workers: they react to the read models and issue commands.

pub mod buildah;
pub mod builder;
pub mod executor;
pub mod heartbeat;
pub mod janitor;
pub mod migrations;

use crate::state::AppState;
use std::time::Duration;
use tokio::task::JoinHandle;

/// Starts every background worker; they stop when the state's shutdown fires.
pub fn start(state: &AppState) -> Vec<JoinHandle<()>> {
    let mut workers = vec![
        builder::Builder::new(state.clone()).spawn(),
        janitor::spawn(state.clone(), Duration::from_secs(60)),
        tokio::spawn(migrations::resume(state.clone())),
    ];
    if state.builder.run_slots > 0 {
        workers.push(executor::Executor::new(state.clone()).spawn());
    }
    workers
}
