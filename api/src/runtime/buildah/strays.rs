//! Working containers that a killed `buildah bud` leaves behind (a cancel, a
//! timeout, a crash of the service): its working container stays in storage with
//! its writable layer and mounts, named after the base image
//! (`working-container`, `alpine-working-container-2`), with nothing that tells
//! which build made it.
//!
//! Every `bud` holds a shared lock on `<storage>/bud.lock` while it runs (a file
//! lock: every process of the host using this storage takes part). Once no `bud`
//! runs (the exclusive lock is free), every builder container that is not one the
//! service named itself (`sandbox-run-*`, `sandbox-build-*`) is such a leftover.

use super::Buildah;
use nix::fcntl::{Flock, FlockArg};
use std::fs::File;

/// The service's own working containers start with this; `bud`'s never do.
const NAMED: &str = "sandbox-";

/// A shared hold on the storage's `bud` lock, released when dropped.
pub struct BudLock {
    _held: Flock<File>,
}

impl Buildah {
    fn bud_lock_file(&self) -> std::io::Result<File> {
        let path = self.root.with_file_name("bud.lock");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
    }

    /// Takes the shared lock a `bud` holds while it runs (waiting while a removal
    /// of leftovers holds it exclusively).
    pub(super) async fn bud_lock(&self) -> std::io::Result<BudLock> {
        let file = self.bud_lock_file()?;
        tokio::task::spawn_blocking(move || {
            Flock::lock(file, FlockArg::LockShared)
                .map(|held| BudLock { _held: held })
                .map_err(|(_, errno)| std::io::Error::from(errno))
        })
        .await?
    }

    /// Removes the working containers killed `bud`s left, when no `bud` of this
    /// storage runs (otherwise nothing: a later call does it); answers how many
    /// went.
    pub async fn remove_stray_containers(&self) -> anyhow::Result<usize> {
        if !self.root.exists() {
            return Ok(0);
        }
        let file = self.bud_lock_file()?;
        let Ok(_exclusive) = Flock::lock(file, FlockArg::LockExclusiveNonblock) else {
            return Ok(0);
        };
        let listed = self.simple(&["containers", "--json"]).await?;
        let containers: Vec<serde_json::Value> = serde_json::from_str(&listed)?;
        let mut removed = 0;
        for container in containers {
            let name = container["containername"].as_str().unwrap_or_default();
            if container["builder"] != true || name.starts_with(NAMED) {
                continue;
            }
            let id = container["id"].as_str().unwrap_or_default();
            self.remove(id).await?;
            tracing::info!(
                container = name,
                "removed the working container of a killed build"
            );
            removed += 1;
        }
        Ok(removed)
    }
}
