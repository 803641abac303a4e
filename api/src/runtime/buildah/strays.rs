//! Working containers that a killed `buildah bud` leaves behind (a cancel, a
//! timeout, a crash of the service): its working container stays in storage with
//! its writable layer and mounts, named after the base image
//! (`working-container`, `alpine-working-container-2`), with nothing that tells
//! which build made it.
//!
//! Every `bud` holds a shared lock on `<storage>/bud.lock` while it runs (a file
//! lock: every process of the host using this storage takes part). Once no `bud`
//! runs (the exclusive lock is free), every container named the way `bud` names
//! them is such a leftover. The service's own containers (`sandbox-run-<id>`,
//! `sandbox-build-<id>`) never are: only `bud`'s names end in `working-container`.

use super::Buildah;
use nix::fcntl::{Flock, FlockArg};
use std::fs::File;

/// Whether `name` is one `bud` gives a working container: `working-container`
/// (`FROM scratch`) or `<base image>-working-container`, with `-<n>` when taken.
fn named_by_bud(name: &str) -> bool {
    let stem = name
        .rsplit_once('-')
        .filter(|(_, n)| n.parse::<u32>().is_ok())
        .map_or(name, |(stem, _)| stem);
    stem == "working-container" || stem.ends_with("-working-container")
}

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
        // An empty storage lists `null`.
        let containers: Option<Vec<serde_json::Value>> = serde_json::from_str(&listed)?;
        let mut removed = 0;
        for container in containers.into_iter().flatten() {
            let name = container["containername"].as_str().unwrap_or_default();
            if container["builder"] != true || !named_by_bud(name) {
                continue;
            }
            let id = container["id"].as_str().unwrap_or_default();
            match self.remove(id).await {
                Ok(()) => {
                    tracing::info!(
                        container = name,
                        "removed the working container of a killed build"
                    );
                    removed += 1;
                }
                Err(error) => {
                    tracing::warn!(
                        container = name,
                        error = format!("{error:#}"),
                        "a killed build's working container was not removed"
                    );
                }
            }
        }
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use super::named_by_bud;

    #[test]
    fn only_bud_s_working_container_names_are_leftovers() {
        for name in [
            "working-container",
            "working-container-2",
            "alpine-working-container",
            "sandbox-foo-working-container-12",
        ] {
            assert!(named_by_bud(name), "{name}");
        }
        for name in [
            "sandbox-run-0123456789abcdef0123456789abcdef",
            "sandbox-build-0123456789abcdef0123456789abcdef",
            "bench-bare-0123456789abcdef0123456789abcdef",
            "working-container-x",
            "my-container",
        ] {
            assert!(!named_by_bud(name), "{name}");
        }
    }
}
