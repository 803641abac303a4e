//! A run's disk: its work directory is a filesystem of its own, of the resource
//! profile's `workspace_mib` (standard: 512 MiB), an ext4 image file beside the
//! directory (`<run>.img`) mounted through a loop device. It holds the workspace
//! and, with overlay storage, the run's working container (its writable layer:
//! whatever the work writes outside `/workspace`; `buildah::Buildah::own_containers`).
//! Writing past it fails with ENOSPC inside the run instead of filling the host's
//! disk, which builds, other runs and the event store share. The image file is
//! sparse: it takes only what is written, and it goes with the work directory.
//!
//! A host that cannot make such filesystems (no loop devices, no `mkfs.ext4`) runs
//! in plain directories; the executor logs it once at start.

use crate::runtime::programs::sbin;
use anyhow::Context;
use nix::mount::{MntFlags, umount2};
use sqlx::PgPool;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use uuid::Uuid;

/// How old a probe's directory is before it counts as left by a crash (a probe
/// takes milliseconds).
const PROBE_AGE: Duration = Duration::from_secs(60);
/// Free bytes below which the disk of a failed run counts as full.
const FULL_BELOW: u64 = 1 << 20;

/// Whether this host can give runs a disk: makes, mounts and removes a small one
/// under `dir`. Blocking (a few milliseconds, once at start).
pub(super) fn probe(dir: &Path) -> anyhow::Result<()> {
    let workdir = dir.join(format!("probe-{}", Uuid::new_v4().simple()));
    let made = make(&workdir, 1);
    remove(&workdir);
    made
}

/// Makes the disk of a run and mounts it at `workdir`.
pub(super) async fn mount(workdir: &Path, workspace_mib: u32) -> anyhow::Result<()> {
    let workdir = workdir.to_path_buf();
    tokio::task::spawn_blocking(move || make(&workdir, workspace_mib)).await?
}

/// Whether `workdir` is a run's disk (not a plain directory).
pub(super) fn is_disk(workdir: &Path) -> bool {
    workdir
        .parent()
        .is_some_and(|parent| is_mount_point(parent, workdir))
}

/// Whether the work filled its disk (its bytes or its inodes); false for a plain
/// directory.
pub(super) fn is_full(workdir: &Path) -> bool {
    if !is_disk(workdir) {
        return false;
    }
    match nix::sys::statvfs::statvfs(workdir) {
        Ok(stats) => {
            let free = stats.blocks_available() * stats.fragment_size();
            free < FULL_BELOW || stats.files_available() == 0
        }
        Err(_) => false,
    }
}

/// Removes the work directories under `run_dir` that no run needs: those of runs
/// that ended (a crashed server's run that another host recovered leaves its disk
/// mounted here) or that no run owns, and the probes a crash interrupted. A run not
/// ended yet keeps its directory: another server of this host may share the
/// directory and run it.
pub(super) async fn remove_leftovers(pool: &PgPool, run_dir: &Path) -> anyhow::Result<()> {
    let mut entries = match tokio::fs::read_dir(run_dir).await {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(error.into()),
    };
    let mut runs = Vec::new();
    while let Some(entry) = entries.next_entry().await? {
        // A work directory, or its disk's image file.
        let path = entry.path().with_extension("");
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if let Ok(run_id) = Uuid::parse_str(&name) {
            runs.push((run_id, path));
        } else if name.starts_with("probe-") && is_older_than(&entry.path(), PROBE_AGE) {
            remove_workdir(&path).await;
        }
    }
    runs.sort();
    runs.dedup();
    let ids: Vec<Uuid> = runs.iter().map(|(id, _)| *id).collect();
    let open: Vec<Uuid> =
        sqlx::query_scalar("SELECT id FROM runs WHERE id = ANY($1) AND terminal_at IS NULL")
            .bind(&ids)
            .fetch_all(pool)
            .await?;
    for (run_id, path) in runs {
        if !open.contains(&run_id) {
            tracing::info!(%run_id, "removing the work directory of an ended run");
            remove_workdir(&path).await;
        }
    }
    Ok(())
}

fn is_older_than(path: &Path, age: Duration) -> bool {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .is_ok_and(|at| at.elapsed().is_ok_and(|elapsed| elapsed > age))
}

/// Removes a run's work directory and its disk, unmounting the disk first (which
/// frees the loop device: `mount -o loop` sets it to detach with its last user).
pub(super) async fn remove_workdir(workdir: &Path) {
    let workdir = workdir.to_path_buf();
    let _ = tokio::task::spawn_blocking(move || remove(&workdir)).await;
}

/// Removes a run's work directory (as [`remove_workdir`]) when dropped: a run's
/// task dropped with its runtime (a process shutting down) would otherwise leave
/// the disk mounted and its loop device taken. Blocking, and cheap once the
/// directory is gone.
pub(super) struct WorkdirGuard(PathBuf);

impl WorkdirGuard {
    pub(super) fn new(workdir: &Path) -> Self {
        Self(workdir.to_path_buf())
    }
}

impl Drop for WorkdirGuard {
    fn drop(&mut self) {
        remove(&self.0);
    }
}

fn make(workdir: &Path, workspace_mib: u32) -> anyhow::Result<()> {
    std::fs::create_dir_all(workdir)?;
    let image = image_file(workdir);
    std::fs::File::create(&image)?.set_len(image_bytes(workspace_mib))?;
    // No journal (nothing survives a crash of the run anyway), nothing reserved for
    // root, inode tables initialised lazily: an empty 512 MiB image takes ~400 KiB
    // and a few milliseconds.
    run(Command::new(sbin("mkfs.ext4"))
        .args(["-q", "-F", "-O", "^has_journal", "-m", "0"])
        .args(["-E", "nodiscard,lazy_itable_init=1"])
        .arg(&image))?;
    run(Command::new(sbin("mount"))
        .args(["-t", "ext4", "-o", "loop,nosuid,nodev,noinit_itable"])
        .arg(&image)
        .arg(workdir))?;
    std::fs::remove_dir(workdir.join("lost+found")).context("lost+found")?;
    Ok(())
}

/// The disk's image file, beside the work directory.
fn image_file(workdir: &Path) -> PathBuf {
    workdir.with_extension("img")
}

/// The image's size: `workspace_mib` plus ext4's own tables, so that at least
/// `workspace_mib` is free for the work (measured: 528 MiB free for 512).
fn image_bytes(workspace_mib: u32) -> u64 {
    let mib = u64::from(workspace_mib);
    (mib + mib / 16 + 4) << 20
}

fn run(command: &mut Command) -> anyhow::Result<()> {
    let output = command
        .output()
        .with_context(|| format!("{:?} could not be started", command.get_program()))?;
    anyhow::ensure!(
        output.status.success(),
        "{:?} failed ({}): {}",
        command.get_program(),
        output.status,
        String::from_utf8_lossy(&output.stderr).trim()
    );
    Ok(())
}

fn is_mount_point(outer: &Path, inner: &Path) -> bool {
    match (std::fs::metadata(outer), std::fs::metadata(inner)) {
        (Ok(outer), Ok(inner)) => outer.dev() != inner.dev(),
        _ => false,
    }
}

fn remove(workdir: &Path) {
    // The disk at the work directory; a work directory of an earlier version of
    // the service has it at its workspace instead.
    let workspace = workdir.join("workspace");
    if is_mount_point(workdir, &workspace) && !unmount(&workspace) {
        return;
    }
    if is_disk(workdir) && !unmount(workdir) {
        return;
    }
    let _ = std::fs::remove_dir_all(workdir);
    let _ = std::fs::remove_file(image_file(workdir));
}

/// Unmounts a disk; one still in use (a process of the run that outlived it) is
/// detached now and gone with its last user. Whether it is unmounted.
fn unmount(at: &Path) -> bool {
    if umount2(at, MntFlags::empty()).is_ok() {
        return true;
    }
    match umount2(at, MntFlags::MNT_DETACH) {
        Ok(()) => true,
        Err(error) => {
            tracing::warn!(disk = %at.display(), %error, "a run's disk could not be unmounted");
            false
        }
    }
}
