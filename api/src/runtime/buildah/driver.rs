//! The storage driver buildah uses under the service's storage directory.
//!
//! `overlay` lets a working container share its image's layers; `vfs` copies the
//! whole image for every `buildah from` and deletes the copy at `buildah rm`. Here
//! a bare trivial run (from + run + rm) took ~240 ms with overlay against ~500 ms
//! with vfs, and four at once ran 433 against 203 per minute. vfs needs no mount, so
//! it stays where overlay cannot be mounted (a storage directory on overlayfs, as in
//! many containers, or a process without the right to mount) and where an earlier
//! version of the service already stored images with it (buildah opens a storage
//! root only with the driver that made it). The choice is written to
//! `<storage dir>/driver` the first time and read from there after: an operator's
//! own `buildah` commands use it, and an operator may write it before the first
//! start to choose.

use std::path::Path;

/// A containers/storage driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageDriver {
    /// Layers shared through overlay mounts.
    Overlay,
    /// Full copies, no mounts.
    Vfs,
}

impl StorageDriver {
    /// The name buildah's `--storage-driver` takes.
    pub fn name(self) -> &'static str {
        match self {
            Self::Overlay => "overlay",
            Self::Vfs => "vfs",
        }
    }

    /// The driver of the storage under `storage_dir` (its root in `root/`): the
    /// recorded one, else chosen now and recorded.
    pub fn of(storage_dir: &Path) -> Self {
        let record = storage_dir.join("driver");
        if let Ok(text) = std::fs::read_to_string(&record) {
            match text.trim() {
                "overlay" => return Self::Overlay,
                "vfs" => return Self::Vfs,
                other => tracing::warn!(
                    path = %record.display(),
                    recorded = other,
                    "unknown storage driver recorded; choosing again"
                ),
            }
        }
        let chosen = if storage_dir.join("root").join("vfs-images").exists() {
            Self::Vfs
        } else if overlay_mounts(storage_dir) {
            Self::Overlay
        } else {
            Self::Vfs
        };
        if let Err(error) = write_record(&record, chosen) {
            tracing::warn!(%error, path = %record.display(), "cannot record the storage driver");
        }
        tracing::info!(driver = chosen.name(), "buildah storage driver chosen");
        chosen
    }
}

/// Whether an overlay file system can be mounted in `storage_dir` (on its file
/// system, by this process).
fn overlay_mounts(storage_dir: &Path) -> bool {
    use nix::mount::{MntFlags, MsFlags, mount, umount2};
    let probe = storage_dir.join(format!("overlay-probe-{}", uuid::Uuid::new_v4().simple()));
    let [lower, upper, work, merged] =
        ["lower", "upper", "work", "merged"].map(|name| probe.join(name));
    let mounted = (|| -> anyhow::Result<()> {
        for dir in [&lower, &upper, &work, &merged] {
            std::fs::create_dir_all(dir)?;
        }
        let options = format!(
            "lowerdir={},upperdir={},workdir={}",
            lower.display(),
            upper.display(),
            work.display()
        );
        mount(
            Some("overlay"),
            &merged,
            Some("overlay"),
            MsFlags::empty(),
            Some(options.as_str()),
        )?;
        umount2(&merged, MntFlags::MNT_DETACH)?;
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&probe);
    mounted.is_ok()
}

/// Writes the record whole (a reader never sees half of it).
fn write_record(record: &Path, driver: StorageDriver) -> std::io::Result<()> {
    if let Some(dir) = record.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let partial = record.with_extension(format!("partial-{}", uuid::Uuid::new_v4().simple()));
    std::fs::write(&partial, driver.name())?;
    std::fs::rename(&partial, record)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_driver_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("driver"), "vfs\n").unwrap();
        assert_eq!(StorageDriver::of(dir.path()), StorageDriver::Vfs);
    }

    #[test]
    fn storage_made_with_vfs_stays_vfs() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("root/vfs-images")).unwrap();
        assert_eq!(StorageDriver::of(dir.path()), StorageDriver::Vfs);
        let recorded = std::fs::read_to_string(dir.path().join("driver")).unwrap();
        assert_eq!(recorded, "vfs");
    }

    #[test]
    fn a_new_storage_records_its_choice() {
        let dir = tempfile::tempdir().unwrap();
        let chosen = StorageDriver::of(dir.path());
        let recorded = std::fs::read_to_string(dir.path().join("driver")).unwrap();
        assert_eq!(recorded, chosen.name());
        assert_eq!(StorageDriver::of(dir.path()), chosen);
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "only the record is left");
    }
}
