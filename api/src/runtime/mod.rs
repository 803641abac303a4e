//! Background work, in one place: the image builder, the run executor, the janitor,
//! the completion of background column migrations and the writers of streamed
//! exports. Each piece runs on the [`Runtime`] (the parts it needs, not the HTTP
//! state) and is spawned through it, so shutdown cancels every piece and waits for
//! it ([`Runtime::stopped`]).

pub mod buildah;
pub mod builder;
pub mod executor;
pub mod heartbeat;
pub mod janitor;
pub mod kube;
pub mod limits;
pub mod migrations;
pub mod network;
pub mod programs;
pub mod unpack;
pub mod worker;

use crate::objects::Objects;
use crate::secrets::SecretStore;
use crate::state::BuilderSettings;
use projections::CommandBus;
use sqlx::PgPool;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// What background work needs, and the tracker of everything it spawned.
pub struct Runtime {
    /// The event store and read models.
    pub pool: PgPool,
    /// Executes commands.
    pub bus: CommandBus,
    /// The object store.
    pub objects: Objects,
    /// The secret store (runs open the values they pinned).
    pub secrets: Arc<SecretStore>,
    /// How builds and runs execute on this machine.
    pub builder: BuilderSettings,
    /// Fires at shutdown.
    pub shutdown: CancellationToken,
    tracker: TaskTracker,
}

impl Runtime {
    /// A runtime over these parts.
    pub fn new(
        pool: PgPool,
        bus: CommandBus,
        objects: Objects,
        secrets: Arc<SecretStore>,
        builder: BuilderSettings,
        shutdown: CancellationToken,
    ) -> Arc<Self> {
        Arc::new(Self {
            pool,
            bus,
            objects,
            secrets,
            builder,
            shutdown,
            tracker: TaskTracker::new(),
        })
    }

    /// Spawns a piece of background work that shutdown waits for.
    pub fn spawn<F>(&self, work: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.tracker.spawn(work);
    }

    /// Waits until every piece spawned has ended (after the shutdown token fired).
    pub async fn stopped(&self) {
        self.tracker.close();
        self.tracker.wait().await;
    }
}

/// Starts the workers of this process: the builder, the janitor, the completion of
/// migrations a previous process left, and (with run slots) the executor, on this
/// machine or, with the Kubernetes executor, in the cluster (whose runs'
/// NetworkPolicy is applied first).
pub async fn start(runtime: &Arc<Runtime>) -> anyhow::Result<()> {
    let cluster = match &runtime.builder.cluster {
        Some(settings) => {
            let cluster = kube::cluster::Cluster::connect(settings.clone()).await?;
            cluster.ensure_policy().await?;
            Some(Arc::new(cluster))
        }
        None => None,
    };
    worker::spawn(builder::Builder::new(runtime.clone()));
    janitor::spawn(runtime.clone(), Duration::from_secs(60));
    runtime.spawn(migrations::resume(runtime.clone()));
    if runtime.builder.run_slots > 0 {
        worker::spawn(executor::Executor::new(runtime.clone(), cluster));
    }
    Ok(())
}
