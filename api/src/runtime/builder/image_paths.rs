//! Paths inside a built image, read through its root mounted on the host.
//!
//! The image's symbolic links are the tenant's: followed by the host, an absolute
//! link (`/workspace -> /w`) would lead into the host's own filesystem. They are
//! resolved here inside the image's root instead, as the container would see them.

use crate::runtime::buildah::Buildah;
use domain::environments::RESERVED_IMAGE_PATHS;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};

/// Links followed on one path before giving up (Linux's own limit).
const MAX_LINKS: usize = 40;

/// The first platform-reserved path a built image already holds, read through a
/// working container called `container`, mounted for the check and removed after.
pub async fn reserved(
    buildah: &Buildah,
    image: &str,
    container: &str,
) -> anyhow::Result<Option<&'static str>> {
    let container = buildah.from_image(image, container).await?;
    let root = buildah.mount(&container).await;
    let reserved = root.as_ref().ok().and_then(|root| {
        RESERVED_IMAGE_PATHS
            .iter()
            .find(|path| exists(root, path))
            .copied()
    });
    buildah.remove(&container).await?;
    root?;
    Ok(reserved)
}

/// Whether `path` (relative to the image's root) exists in the image mounted at
/// `root`: its directories' links are resolved inside the image; a link as the
/// last component exists whatever it points to.
pub fn exists(root: &Path, path: &str) -> bool {
    let mut pending: VecDeque<String> = path.split('/').map(str::to_string).collect();
    let mut at = PathBuf::new();
    let mut links = 0;
    while let Some(part) = pending.pop_front() {
        match part.as_str() {
            "" | "." => continue,
            ".." => {
                at.pop();
                continue;
            }
            _ => {}
        }
        let candidate = at.join(&part);
        let Ok(meta) = root.join(&candidate).symlink_metadata() else {
            return false;
        };
        if !meta.file_type().is_symlink() || pending.iter().all(|p| p.is_empty()) {
            at = candidate;
            continue;
        }
        links += 1;
        let Ok(target) = std::fs::read_link(root.join(&candidate)) else {
            return false;
        };
        if links > MAX_LINKS {
            return false;
        }
        let target = target.to_string_lossy().into_owned();
        if target.starts_with('/') {
            at = PathBuf::new();
        }
        for part in target.rsplit('/') {
            pending.push_front(part.to_string());
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn links_resolve_inside_the_image_never_on_the_host() {
        let host = tempfile::tempdir().unwrap();
        let root = host.path().join("root");
        std::fs::create_dir_all(root.join("w")).unwrap();
        std::fs::write(root.join("w/startup.sh"), b"").unwrap();
        // Absolute: `/workspace -> /w` is the image's /w, not the host's.
        symlink("/w", root.join("workspace")).unwrap();
        assert!(exists(&root, "workspace/startup.sh"));
        // A link the host would resolve elsewhere: `/etc -> /tmp/...` on the host.
        let outside = host.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("work.sh"), b"").unwrap();
        symlink(&outside, root.join("elsewhere")).unwrap();
        assert!(!exists(&root, "elsewhere/work.sh"));
        // Relative links, `..` kept inside the root, and a last component that is
        // a dangling link.
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        symlink("../../w", root.join("a/b/up")).unwrap();
        assert!(exists(&root, "a/b/up/startup.sh"));
        symlink("../../../../../w", root.join("a/b/far")).unwrap();
        assert!(exists(&root, "a/b/far/startup.sh"));
        symlink("/nowhere", root.join("w/driver.sh")).unwrap();
        assert!(exists(&root, "w/driver.sh"));
        assert!(!exists(&root, "w/input.json"));
        // A loop ends.
        symlink("loop", root.join("loop")).unwrap();
        assert!(!exists(&root, "loop/x"));
    }
}
