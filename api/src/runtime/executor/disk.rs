//! A run's workspace as a filesystem of its own, of the resource profile's
//! `workspace_mib` (standard: 512 MiB): an ext4 image file in the run's work
//! directory, mounted through a loop device at `<workdir>/workspace`. Writing past
//! it fails with ENOSPC inside the run instead of filling the host's disk, which
//! builds, other runs and the event store share. The image file is sparse: it takes
//! only what is written, and it goes with the work directory.
//!
//! A host that cannot make such filesystems (no loop devices, no `mkfs.ext4`) runs
//! workspaces as plain directories; the executor logs it once at start.

use crate::runtime::programs::sbin;
use anyhow::Context;
use nix::mount::{MntFlags, umount2};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The image file, beside the workspace in the run's work directory.
const IMAGE: &str = "workspace.img";
/// Free bytes below which the workspace of a failed run counts as full.
const FULL_BELOW: u64 = 1 << 20;

/// Whether this host can give workspaces a size: makes, mounts and removes a small
/// one under `dir`. Blocking (a few milliseconds, once at start).
pub(super) fn probe(dir: &Path) -> anyhow::Result<()> {
    let workdir = dir.join(format!("probe-{}", uuid::Uuid::new_v4().simple()));
    let made = make(&workdir, 1);
    remove(&workdir);
    made
}

/// Makes the workspace filesystem of `workdir` and mounts it at
/// `<workdir>/workspace`.
pub(super) async fn mount(workdir: &Path, workspace_mib: u32) -> anyhow::Result<()> {
    let workdir = workdir.to_path_buf();
    tokio::task::spawn_blocking(move || make(&workdir, workspace_mib)).await?
}

/// Whether the work filled its workspace filesystem (its bytes or its inodes);
/// false for a plain directory.
pub(super) fn is_full(workdir: &Path) -> bool {
    let workspace = workdir.join("workspace");
    if !is_mounted(workdir, &workspace) {
        return false;
    }
    match nix::sys::statvfs::statvfs(&workspace) {
        Ok(stats) => {
            let free = stats.blocks_available() * stats.fragment_size();
            free < FULL_BELOW || stats.files_available() == 0
        }
        Err(_) => false,
    }
}

/// Removes a run's work directory, unmounting its workspace first (which frees the
/// loop device: `mount -o loop` sets it to detach with its last user).
pub(super) async fn remove_workdir(workdir: &Path) {
    let workdir = workdir.to_path_buf();
    let _ = tokio::task::spawn_blocking(move || remove(&workdir)).await;
}

/// Removes a run's work directory (as [`remove_workdir`]) when dropped: a run's
/// task dropped with its runtime (a process shutting down) would otherwise leave
/// the workspace mounted and its loop device taken. Blocking, and cheap once the
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
    let workspace = workdir.join("workspace");
    std::fs::create_dir_all(&workspace)?;
    let image = workdir.join(IMAGE);
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
        .arg(&workspace))?;
    std::fs::remove_dir(workspace.join("lost+found")).context("lost+found")?;
    Ok(())
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

fn is_mounted(workdir: &Path, workspace: &Path) -> bool {
    match (std::fs::metadata(workdir), std::fs::metadata(workspace)) {
        (Ok(outer), Ok(inner)) => outer.dev() != inner.dev(),
        _ => false,
    }
}

fn remove(workdir: &Path) {
    let workspace = workdir.join("workspace");
    if is_mounted(workdir, &workspace) && umount2(&workspace, MntFlags::empty()).is_err() {
        // Still in use (a process of the run that outlived it): detached now, gone
        // with its last user.
        if let Err(error) = umount2(&workspace, MntFlags::MNT_DETACH) {
            tracing::warn!(workspace = %workspace.display(), %error, "a run's workspace could not be unmounted");
            return;
        }
    }
    let _ = std::fs::remove_dir_all(workdir);
}
