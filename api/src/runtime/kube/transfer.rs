//! The workspace a run starts from, packed for the cluster, and the results it
//! leaves, unpacked for the collection the local executor does too.
//!
//! The results archive was written inside the run's pod, so nothing in it is
//! trusted: only regular files and directories under plain relative paths are
//! unpacked (no links, devices, absolute paths or `..`), at most `limit` bytes in
//! all.

use anyhow::Context;
use std::path::{Component, Path, PathBuf};

/// A tar archive of what `workspace` holds (links are stored as links, never
/// followed). The directory itself is not an entry: the pod unpacks into a
/// directory it does not own, whose mode it could not set.
pub fn pack(workspace: &Path, scratch: &Path) -> anyhow::Result<tempfile::NamedTempFile> {
    let file = tempfile::NamedTempFile::new_in(scratch)?;
    let mut builder = tar::Builder::new(std::io::BufWriter::new(file.reopen()?));
    builder.follow_symlinks(false);
    for entry in std::fs::read_dir(workspace)? {
        let entry = entry?;
        let name = entry.file_name();
        if entry.file_type()?.is_dir() {
            builder.append_dir_all(&name, entry.path())?;
        } else {
            builder.append_path_with_name(entry.path(), &name)?;
        }
    }
    builder.into_inner()?.into_inner()?.sync_all()?;
    Ok(file)
}

/// The archive's entry path, if it is a plain relative path.
fn plain(path: &Path) -> Option<PathBuf> {
    let mut clean = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => clean.push(part),
            Component::CurDir => {}
            _ => return None,
        }
    }
    (!clean.as_os_str().is_empty()).then_some(clean)
}

/// Unpacks the regular files and directories of `archive` into `workspace`;
/// everything else is skipped. Fails past `limit` bytes.
pub fn unpack_results(archive: &Path, workspace: &Path, limit: u64) -> anyhow::Result<()> {
    let mut archive = tar::Archive::new(std::fs::File::open(archive)?);
    let mut total = 0u64;
    for entry in archive.entries()? {
        let mut entry = entry?;
        let Some(relative) = plain(&entry.path()?) else {
            continue;
        };
        let target = workspace.join(&relative);
        match entry.header().entry_type() {
            tar::EntryType::Directory => std::fs::create_dir_all(&target)?,
            tar::EntryType::Regular => {
                total += entry.size();
                anyhow::ensure!(total <= limit, "the results pass {limit} bytes");
                if let Some(parent) = target.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                let mut file = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&target)
                    .with_context(|| format!("{} twice in the results", relative.display()))?;
                std::io::copy(&mut entry, &mut file)?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// The exit code the work recorded, if it did.
pub fn exit_code(workspace: &Path) -> Option<i32> {
    std::fs::read_to_string(workspace.join(super::manifest::EXIT_FILE))
        .ok()?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn archive(entries: &[(&str, tar::EntryType, &[u8])]) -> tempfile::NamedTempFile {
        let file = tempfile::NamedTempFile::new().unwrap();
        let mut builder = tar::Builder::new(file.reopen().unwrap());
        for (path, kind, content) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(*kind);
            header.set_size(content.len() as u64);
            header.set_mode(0o644);
            if *kind == tar::EntryType::Symlink {
                header.set_link_name("/etc/passwd").unwrap();
            }
            // `append_data` refuses `..`; the raw name is what a hostile pod writes.
            let name = header.as_gnu_mut().unwrap();
            name.name[..path.len()].copy_from_slice(path.as_bytes());
            header.set_cksum();
            builder.append(&header, *content).unwrap();
        }
        builder.finish().unwrap();
        file
    }

    #[test]
    fn only_plain_files_and_directories_come_back() {
        let results = archive(&[
            (".sandbox-exit", tar::EntryType::Regular, b"3\n"),
            ("artifacts/", tar::EntryType::Directory, b""),
            ("artifacts/report.txt", tar::EntryType::Regular, b"report"),
            ("artifacts/leak", tar::EntryType::Symlink, b""),
            ("../escape", tar::EntryType::Regular, b"x"),
            ("/abs", tar::EntryType::Regular, b"x"),
        ]);
        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path().join("workspace");
        std::fs::create_dir(&workspace).unwrap();
        unpack_results(results.path(), &workspace, 1 << 20).unwrap();
        assert_eq!(exit_code(&workspace), Some(3));
        let report = std::fs::read(workspace.join("artifacts/report.txt")).unwrap();
        assert_eq!(report, b"report");
        assert!(workspace.join("artifacts/leak").symlink_metadata().is_err());
        assert!(!dir.path().join("escape").exists());
    }

    #[test]
    fn results_past_the_limit_are_refused() {
        let results = archive(&[("output", tar::EntryType::Regular, &[7u8; 100])]);
        let workspace = tempfile::tempdir().unwrap();
        assert!(unpack_results(results.path(), workspace.path(), 99).is_err());
    }

    #[test]
    fn a_packed_workspace_unpacks_to_the_same_files() {
        let source = tempfile::tempdir().unwrap();
        std::fs::create_dir(source.path().join("artifacts")).unwrap();
        std::fs::write(source.path().join("startup.sh"), "echo hi\n").unwrap();
        let packed = pack(source.path(), &std::env::temp_dir()).unwrap();
        let mut archive = tar::Archive::new(std::fs::File::open(packed.path()).unwrap());
        let mut names: Vec<String> = archive
            .entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().display().to_string())
            .collect();
        names.sort();
        assert_eq!(
            names,
            ["artifacts/", "startup.sh"],
            "no entry for the directory itself"
        );
        let target = tempfile::tempdir().unwrap();
        unpack_results(packed.path(), target.path(), 1 << 20).unwrap();
        let script = std::fs::read_to_string(target.path().join("startup.sh")).unwrap();
        assert_eq!(script, "echo hi\n");
        assert!(target.path().join("artifacts").is_dir());
    }
}
