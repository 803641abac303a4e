//! Writing a validated archive (a build context, a task bundle) into a directory.

use domain::environments::archive::Entry;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Writes one validated entry under the context directory. Paths are already
/// normalized (relative, no `..`), links never reach here, and files are created
/// new, so nothing outside the directory can be written or followed.
pub fn extract(context: &Path, entry: &Entry, reader: &mut dyn Read) -> std::io::Result<()> {
    match entry {
        Entry::Directory(path) => std::fs::create_dir_all(context.join(path)),
        Entry::File {
            path, executable, ..
        } => {
            let target = context.join(path);
            if !target.starts_with(context) {
                return Err(std::io::Error::other("entry outside the context"));
            }
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent)?;
            }
            let mode = if *executable { 0o755 } else { 0o644 };
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(mode)
                .open(&target)?;
            std::io::copy(reader, &mut file)?;
            Ok(())
        }
    }
}
