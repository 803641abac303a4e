//! The loop of a claiming worker (the builder and the executor): every pass beats
//! the heartbeat, recovers work of workers that are gone, passes cancels on and
//! claims new work; at shutdown every job it still runs is told to stop.

use super::Runtime;
use super::heartbeat;
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// The jobs a worker runs in this process, each with the token that stops it.
pub type Running = Arc<Mutex<HashMap<Uuid, CancellationToken>>>;

/// A worker that claims work from the read models through its aggregate.
pub trait Worker: Clone + Send + Sync + 'static {
    /// The heartbeat kind and the name in logs.
    const KIND: &'static str;
    /// How long a pass waits for the next.
    const INTERVAL: Duration;

    /// The runtime it works on.
    fn runtime(&self) -> &Arc<Runtime>;
    /// Its id in heartbeats and claims.
    fn worker_id(&self) -> &str;
    /// Its running jobs.
    fn running(&self) -> &Running;
    /// Ends work claimed by workers that are gone.
    fn recover(&self) -> impl Future<Output = anyhow::Result<()>> + Send;
    /// Passes cancel requests on to queued and running work.
    fn dispatch_cancels(&self) -> impl Future<Output = anyhow::Result<()>> + Send;
    /// Claims and starts new work.
    fn claim(&self) -> impl Future<Output = anyhow::Result<()>> + Send;

    /// One pass: heartbeat, recovery, cancels, claims.
    fn tick(&self) -> impl Future<Output = anyhow::Result<()>> + Send {
        async move {
            let pool = &self.runtime().pool;
            heartbeat::beat(pool, self.worker_id(), Self::KIND).await?;
            self.recover().await?;
            self.dispatch_cancels().await?;
            self.claim().await
        }
    }
}

/// Runs the worker's passes until shutdown, then stops its jobs (their work is
/// recovered by the next start).
pub fn spawn<W: Worker>(worker: W) {
    let runtime = worker.runtime().clone();
    runtime.spawn(async move {
        let shutdown = worker.runtime().shutdown.clone();
        loop {
            if let Err(error) = worker.tick().await {
                tracing::error!(
                    worker = W::KIND,
                    error = format!("{error:#}"),
                    "worker pass failed"
                );
            }
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tokio::time::sleep(W::INTERVAL) => {}
            }
        }
        for token in worker.running().lock().expect("running lock").values() {
            token.cancel();
        }
    })
}
