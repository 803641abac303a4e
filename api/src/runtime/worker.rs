//! The loop of a claiming worker (the builder and the executor): every pass beats
//! the heartbeat, recovers work of workers that are gone, passes cancels on and
//! claims new work; at shutdown every job it still runs is told to stop.
//!
//! Between passes the worker is woken early, for cancels and claims only, when one
//! of its jobs ended (a slot is free) and when this process's projector moved the
//! read models on (new work may be queued), so a queued run or build does not wait
//! for the next pass.

use super::Runtime;
use super::heartbeat;
use domain::principal::{Actor, EventMetadata};
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, OwnedSemaphorePermit};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// The earliest a worker is woken again by the projector after a wake-up (a burst
/// of cycles wakes it once).
const WAKE_GAP: Duration = Duration::from_millis(20);

/// The jobs a worker runs in this process, each with the token that stops it, and
/// the wake-up of the worker's loop.
#[derive(Clone, Default)]
pub struct Running {
    jobs: Arc<Mutex<HashMap<Uuid, CancellationToken>>>,
    wake: Arc<Notify>,
}

impl Running {
    /// The token of a running job.
    pub fn token(&self, id: Uuid) -> Option<CancellationToken> {
        self.jobs.lock().expect("running lock").get(&id).cloned()
    }

    /// Whether a job runs.
    pub fn contains(&self, id: Uuid) -> bool {
        self.jobs.lock().expect("running lock").contains_key(&id)
    }

    /// Runs `work` for job `id` in the background, holding `permit` (a slot) until
    /// it ends; then wakes the worker to claim. Answers the token that stops the
    /// job, which `work` is given.
    pub fn launch<W, F>(
        &self,
        runtime: &Runtime,
        id: Uuid,
        permit: Option<OwnedSemaphorePermit>,
        work: W,
    ) -> CancellationToken
    where
        W: FnOnce(CancellationToken) -> F,
        F: Future<Output = ()> + Send + 'static,
    {
        let token = CancellationToken::new();
        self.jobs
            .lock()
            .expect("running lock")
            .insert(id, token.clone());
        let job = work(token.clone());
        let running = self.clone();
        runtime.spawn(async move {
            job.await;
            running.jobs.lock().expect("running lock").remove(&id);
            drop(permit);
            running.wake.notify_one();
        });
        token
    }

    /// Tells every job to stop.
    fn cancel_all(&self) {
        for token in self.jobs.lock().expect("running lock").values() {
            token.cancel();
        }
    }
}

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

    /// Event metadata of the worker's commands: the system actor named by its kind,
    /// its id as the request id (the same for every claiming worker).
    fn metadata(&self, company: Option<Uuid>) -> EventMetadata {
        EventMetadata {
            actor: Actor::System(Self::KIND),
            company_id: company,
            request_id: self.worker_id().to_string(),
            time: chrono::Utc::now(),
        }
    }

    /// A pass between full ones: cancels and claims.
    fn react(&self) -> impl Future<Output = anyhow::Result<()>> + Send {
        async move {
            self.dispatch_cancels().await?;
            self.claim().await
        }
    }

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
    wake_on_cycles(&worker);
    let runtime = worker.runtime().clone();
    runtime.spawn(async move {
        let shutdown = worker.runtime().shutdown.clone();
        let wake = Arc::clone(&worker.running().wake);
        'passes: loop {
            if let Err(error) = worker.tick().await {
                failed::<W>(error);
            }
            let next = tokio::time::Instant::now() + W::INTERVAL;
            loop {
                tokio::select! {
                    _ = shutdown.cancelled() => break 'passes,
                    _ = tokio::time::sleep_until(next) => break,
                    _ = wake.notified() => {
                        if let Err(error) = worker.react().await {
                            failed::<W>(error);
                        }
                    }
                }
            }
        }
        worker.running().cancel_all();
    })
}

fn failed<W: Worker>(error: anyhow::Error) {
    tracing::error!(
        worker = W::KIND,
        error = format!("{error:#}"),
        "worker pass failed"
    );
}

/// Wakes the worker when a cycle of this process's projector moved the read
/// models on, at most once per [`WAKE_GAP`].
fn wake_on_cycles<W: Worker>(worker: &W) {
    let runtime = worker.runtime();
    let mut cycles = runtime.bus.pump().cycles();
    let wake = Arc::clone(&worker.running().wake);
    let shutdown = runtime.shutdown.clone();
    runtime.spawn(async move {
        let mut seen = cycles.borrow_and_update().projected;
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => break,
                changed = cycles.changed() => if changed.is_err() { break },
            }
            let projected = cycles.borrow_and_update().projected;
            if projected > seen {
                seen = projected;
                wake.notify_one();
                tokio::time::sleep(WAKE_GAP).await;
            }
        }
    });
}
