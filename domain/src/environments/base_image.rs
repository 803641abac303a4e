//! Which `FROM` images are not public base images.
//!
//! Spec section 2 allows "any public base image". buildah resolves a `FROM` in its
//! local storage before any registry, and that storage also holds every company's
//! built environment images: `FROM sandbox-env/<version>:<attempt>`, `FROM
//! localhost/...`, `FROM sha256:<id>` or a bare image id prefix as short as `FROM
//! 3f2` would build on another tenant's image and read everything in it. A
//! registry on `localhost` or an address that is not public is the build host's
//! or its network's, not a public one. All of these are refused; a name that only a registry can
//! answer (`alpine`, `ghcr.io/o/i:tag`, `debian@sha256:...`) is not.

use crate::public_address;
use std::net::IpAddr;

/// The path component the platform names its environment images under, locally
/// (`localhost/sandbox-env/...`) and in the image registry
/// (`<SANDBOX_REGISTRY>/sandbox-env/...`, where the registry may carry a path of
/// its own); a reference with this component anywhere in its path is refused.
pub const PLATFORM_REPOSITORY: &str = "sandbox-env";

/// Whether `image` (a `FROM` reference that names no stage) would not come from a
/// public registry: an image id, the platform's own images, or a registry on
/// `localhost` or an address that is not public.
pub fn is_private(image: &str) -> bool {
    let image = image.to_ascii_lowercase();
    if image.starts_with("sha256:") || is_id_prefix(&image) {
        return true;
    }
    let (path, registry) = match image.split_once('/') {
        Some((first, rest)) if names_registry(first) => (rest, Some(first)),
        _ => (image.as_str(), None),
    };
    if registry.is_some_and(is_host_local) {
        return true;
    }
    path.split('/')
        .any(|component| component.split([':', '@']).next() == Some(PLATFORM_REPOSITORY))
}

/// A bare run of hex digits: buildah takes it as (a prefix of) a local image id.
fn is_id_prefix(image: &str) -> bool {
    !image.is_empty() && image.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Whether a reference's first component is a registry rather than a path
/// component (the rule of the image reference grammar).
fn names_registry(first: &str) -> bool {
    first.contains(['.', ':']) || first == "localhost"
}

/// Whether a registry (`host[:port]`) is this host or at an address that is not
/// public (a private network's, a metadata service's).
fn is_host_local(registry: &str) -> bool {
    let host = match registry.strip_prefix('[') {
        Some(bracketed) => bracketed.split(']').next().unwrap_or_default(),
        None => registry.split(':').next().unwrap_or_default(),
    };
    if host == "localhost" || host.ends_with(".localhost") {
        return true;
    }
    host.parse::<IpAddr>()
        .is_ok_and(|ip| !public_address::is_public(ip))
}

#[cfg(test)]
mod tests {
    use super::is_private;

    #[test]
    fn public_names_are_not_private() {
        for image in [
            "alpine",
            "alpine:3.20",
            "library/debian:12-slim",
            "ghcr.io/astral-sh/uv:python3.12-bookworm-slim",
            "mcr.microsoft.com/windows/nanoserver:ltsc2022",
            "debian@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "docker.io/library/busybox",
            "sandbox-environment/tool",
            "cafe:1",
            "8.8.8.8:5000/tools/x",
        ] {
            assert!(!is_private(image), "{image}");
        }
    }

    #[test]
    fn platform_images_and_image_ids_are_private() {
        for image in [
            "sandbox-env/0190c7d2-0000-7000-8000-000000000000:ab12",
            "localhost/sandbox-env/0190c7d2-0000-7000-8000-000000000000:ab12",
            "registry.internal:5000/sandbox-env/x:y",
            "registry.internal:5000/team/sandbox/sandbox-env/x:y",
            "Sandbox-Env/x",
            "sandbox-env@sha256:00",
            "sha256:8859c868391174b5e13237deb28ed5f15a2080e1db302737403a9dba616a09dd",
            "8859c868391174b5e13237deb28ed5f15a2080e1db302737403a9dba616a09dd",
            "3f2",
            "DEADBEEF",
        ] {
            assert!(is_private(image), "{image}");
        }
    }

    #[test]
    fn host_local_registries_are_private() {
        for image in [
            "localhost/alpine",
            "localhost:5000/alpine:3",
            "registry.localhost/x",
            "127.0.0.1:5000/alpine",
            "10.1.2.3/x/y",
            "192.168.0.10:443/x",
            "172.16.0.1/x",
            "169.254.169.254/x",
            "0.0.0.0/x",
            "[::1]:5000/x",
            "[fd00::1]/x",
            "[fe80::1]:80/x",
            "[::ffff:127.0.0.1]/x",
        ] {
            assert!(is_private(image), "{image}");
        }
    }
}
