//! What a finished run leaves: its log, its output file and its artifact bundle,
//! stored in the object store.
//!
//! The workspace was writable by the work, so nothing in it is trusted: the output
//! and every artifact are opened without following symbolic links, only regular
//! files count, the artifacts directory itself must be a real directory, and at
//! most [`MAX_ARTIFACTS`] files are kept (the first in path order). The bundle is the
//! kept files' bytes concatenated in path order; each file records its offset,
//! size and SHA-256, so one file can be served as a verified byte range.

use crate::runtime::Runtime;
use bytes::Bytes;
use domain::runs::run::{Artifact, StoredObject};
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use uuid::Uuid;

/// Most artifact files a run keeps.
pub const MAX_ARTIFACTS: usize = 1000;
/// Largest output file kept.
pub const MAX_OUTPUT_BYTES: u64 = 1 << 30;

/// The stored objects of a run.
#[derive(Debug, Default)]
pub struct Collected {
    /// The log.
    pub log: Option<StoredObject>,
    /// The output file.
    pub output: Option<StoredObject>,
    /// The artifact bundle.
    pub bundle: Option<StoredObject>,
    /// Its files.
    pub artifacts: Vec<Artifact>,
}

/// Opens a regular file without following a symbolic link at its last component.
fn open_regular(path: &Path) -> Option<File> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    file.metadata().ok()?.is_file().then_some(file)
}

/// The regular files under the artifacts directory, relative paths in order.
fn artifact_files(dir: &Path) -> Vec<(String, PathBuf)> {
    let is_dir = std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_dir());
    if !is_dir {
        return Vec::new();
    }
    let mut files: Vec<(String, PathBuf)> = walkdir::WalkDir::new(dir)
        .follow_links(false)
        .follow_root_links(false)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_file())
        .filter_map(|entry| {
            let relative = entry.path().strip_prefix(dir).ok()?.to_str()?.to_string();
            Some((relative, entry.into_path()))
        })
        .collect();
    files.sort();
    files.truncate(MAX_ARTIFACTS);
    files
}

/// Writes the bundle to `target` and describes its files.
fn bundle(
    run_id: Uuid,
    files: &[(String, PathBuf)],
    target: &Path,
) -> std::io::Result<Vec<Artifact>> {
    let mut out = std::io::BufWriter::new(File::create(target)?);
    let mut artifacts = Vec::new();
    let mut offset = 0i64;
    for (relative, path) in files {
        let Some(mut file) = open_regular(path) else {
            continue;
        };
        let mut hasher = Sha256::new();
        let mut size = 0i64;
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            let n = file.read(&mut buffer)?;
            if n == 0 {
                break;
            }
            hasher.update(&buffer[..n]);
            out.write_all(&buffer[..n])?;
            size += n as i64;
        }
        artifacts.push(Artifact {
            artifact_id: domain::ids::derive("artifact", &[&run_id.to_string(), relative]),
            relative_path: relative.clone(),
            offset,
            byte_size: size,
            digest: format!("sha256:{}", hex::encode(hasher.finalize())),
            declared_content_type: mime_guess::from_path(relative)
                .first_or_octet_stream()
                .essence_str()
                .to_string(),
        });
        offset += size;
    }
    out.flush()?;
    Ok(artifacts)
}

async fn put_file(
    state: &Runtime,
    key: &str,
    path: PathBuf,
    limit: u64,
) -> anyhow::Result<StoredObject> {
    let file = tokio::task::spawn_blocking(move || open_regular(&path))
        .await?
        .ok_or_else(|| anyhow::anyhow!("not a regular file"))?;
    let stream = tokio_util::io::ReaderStream::new(tokio::fs::File::from_std(file));
    let written = state
        .objects
        .put_stream(key, stream, limit)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(StoredObject {
        key: key.to_string(),
        byte_size: written.byte_size as i64,
        digest: written.digest,
    })
}

/// Stores the log, the output and the artifact bundle of a run.
pub async fn collect(
    state: &Runtime,
    company: Uuid,
    run_id: Uuid,
    workdir: &Path,
    log: &[u8],
) -> anyhow::Result<Collected> {
    let prefix = format!("runs/{company}/{run_id}");
    let workspace = workdir.join("workspace");
    let log_key = format!("{prefix}/log");
    let written = state
        .objects
        .put_bytes(&log_key, Bytes::copy_from_slice(log))
        .await?;
    let mut collected = Collected {
        log: Some(StoredObject {
            key: log_key,
            byte_size: written.byte_size as i64,
            digest: written.digest,
        }),
        ..Collected::default()
    };
    let output = workspace.join("output");
    if std::fs::symlink_metadata(&output).is_ok_and(|m| m.file_type().is_file()) {
        let key = format!("{prefix}/output");
        collected.output = put_file(state, &key, output, MAX_OUTPUT_BYTES).await.ok();
    }
    let dir = workspace.join("artifacts");
    let target = workdir.join("bundle");
    let (artifacts, target) = tokio::task::spawn_blocking(move || {
        let files = artifact_files(&dir);
        let artifacts = if files.is_empty() {
            Ok(Vec::new())
        } else {
            bundle(run_id, &files, &target)
        };
        artifacts.map(|a| (a, target))
    })
    .await??;
    if !artifacts.is_empty() {
        let key = format!("{prefix}/artifacts");
        collected.bundle = Some(put_file(state, &key, target, u64::MAX).await?);
        collected.artifacts = artifacts;
    }
    Ok(collected)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn artifacts_are_regular_files_in_path_order_and_links_are_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("artifacts");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("b.txt"), "b").unwrap();
        std::fs::write(root.join("sub/a.csv"), "a,b\n").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", root.join("leak")).unwrap();
        let files = artifact_files(&root);
        let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["b.txt", "sub/a.csv"]);
        let target = dir.path().join("bundle");
        let artifacts = bundle(Uuid::nil(), &files, &target).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"ba,b\n");
        assert_eq!((artifacts[1].offset, artifacts[1].byte_size), (1, 4));
        assert_eq!(artifacts[1].declared_content_type, "text/csv");

        let linked = dir.path().join("linked");
        std::os::unix::fs::symlink(&root, &linked).unwrap();
        assert!(
            artifact_files(&linked).is_empty(),
            "a linked directory is not followed"
        );
    }
}
