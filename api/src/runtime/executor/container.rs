//! A run's working container. On a run's disk (`disk.rs`) with overlay storage
//! the container is kept in a storage of its own on that disk, so its writable
//! layer (whatever the work writes outside `/workspace`) counts against the disk
//! and goes with it; elsewhere it is kept in the service's storage and removed
//! with `buildah rm` after the run's end is recorded.

use super::Executor;
use super::disk;
use super::steps::StepClock;
use crate::runtime::buildah::Buildah;
use std::path::Path;
use uuid::Uuid;

/// The working container of a run and the storage it is in.
pub(super) struct WorkingContainer {
    name: String,
    buildah: Buildah,
}

impl WorkingContainer {
    /// Makes the run's working container of `image`.
    pub(super) async fn create(
        executor: &Executor,
        run_id: Uuid,
        workdir: &Path,
        image: &str,
    ) -> anyhow::Result<Self> {
        let buildah = disk::is_disk(workdir)
            .then(|| executor.buildah.own_containers(&workdir.join("storage")))
            .flatten()
            .unwrap_or_else(|| executor.buildah.clone());
        let name = buildah.from_image(image, &container_name(run_id)).await?;
        Ok(Self { name, buildah })
    }

    /// The container's name.
    pub(super) fn name(&self) -> &str {
        &self.name
    }

    /// buildah with the container's storage.
    pub(super) fn buildah(&self) -> &Buildah {
        &self.buildah
    }

    /// Removes a container of the service's storage after the run's end is
    /// recorded: its removal (a `buildah rm`, 20-40 ms) is housekeeping the tenant
    /// does not wait for. The run's slot stays taken until it is gone.
    pub(super) async fn remove(self, run_id: Uuid) {
        // A storage of its own goes with the run's disk.
        if self.buildah.keeps_containers_only() {
            return;
        }
        let mut clock = StepClock::start();
        if let Err(error) = self.buildah.remove(&self.name).await {
            tracing::warn!(%run_id, error = format!("{error:#}"), "the working container was not removed");
        }
        clock.lap("container_removal");
    }
}

/// The name of a run's working container.
pub(super) fn container_name(run_id: Uuid) -> String {
    format!("sandbox-run-{}", run_id.simple())
}
