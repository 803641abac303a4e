//! Which `FROM` images are not public base images.
//!
//! Spec section 2 allows "any public base image". buildah resolves a `FROM` in its
//! local storage before any registry, and that storage also holds every company's
//! built environment images. Measured with buildah 1.28, each of these built on
//! another tenant's image and read everything in it: `FROM
//! localhost/sandbox-env/<version>:<attempt>`, the short name without
//! `localhost/`, the last components alone (`<version>:<attempt>`: a name is also
//! matched as a suffix of a local one), `FROM sha256:<id>`, a bare image id prefix
//! as short as `FROM 3f2`, the same in quotes (`FROM "3f2"`: buildah removes
//! quotes and backslashes, the Dockerfile parser keeps them), and transports
//! (`containers-storage:3f2`; `oci:`, `dir:` and the archive transports read host
//! paths).
//!
//! So a `FROM` image must be a well-formed reference in the image reference
//! grammar (no quotes, backslashes or transports), and neither an image id nor a
//! name with the platform's `sandbox-env` component or a UUID component (the
//! platform names versions by UUID), nor on a registry at `localhost` or an
//! address that is not public (the build host's or its network's). A name only a
//! registry answers (`alpine`, `ghcr.io/o/i:tag`) passes. So does a digest
//! (`debian@sha256:...`), though buildah also matches a digest against every local
//! image: another tenant's image is reached that way only by its full manifest
//! digest, which this service never shows.

use crate::public_address;
use std::net::IpAddr;

/// The path component the platform names its environment images under, locally
/// (`localhost/sandbox-env/...`) and in the image registry
/// (`<SANDBOX_REGISTRY>/sandbox-env/...`, where the registry may carry a path of
/// its own); a reference with this component anywhere in its path is refused.
pub const PLATFORM_REPOSITORY: &str = "sandbox-env";

/// Names that, before a `:`, make buildah read the rest as a transport's
/// reference or as an image id (`docker:` is the Docker image: its transport
/// needs `docker://`, which the grammar refuses).
const TRANSPORTS: [&str; 11] = [
    "containers-storage",
    "docker-archive",
    "docker-daemon",
    "oci",
    "oci-archive",
    "dir",
    "sif",
    "tarball",
    "ostree",
    "sha256",
    "sha512",
];

/// Whether `image` (a `FROM` reference that names no stage) is not a public
/// image reference: malformed, an image id, a transport, a platform image, or a
/// registry on `localhost` or an address that is not public.
pub fn is_private(image: &str) -> bool {
    let Some(reference) = Reference::parse(image) else {
        return true;
    };
    if let [only] = reference.path.as_slice()
        && reference.registry.is_none()
        && (only.bytes().all(|b| b.is_ascii_hexdigit())
            || (reference.tag.is_some() && TRANSPORTS.contains(only)))
    {
        return true;
    }
    if reference.registry.is_some_and(is_host_local) {
        return true;
    }
    reference.path.iter().any(|component| {
        *component == PLATFORM_REPOSITORY || uuid::Uuid::try_parse(component).is_ok()
    })
}

/// A reference of the image reference grammar (`[registry/]path[:tag][@digest]`).
struct Reference<'a> {
    registry: Option<&'a str>,
    path: Vec<&'a str>,
    tag: Option<&'a str>,
}

impl<'a> Reference<'a> {
    /// The reference, or `None` when `image` breaks the grammar.
    fn parse(image: &'a str) -> Option<Self> {
        let (rest, digest) = match image.split_once('@') {
            Some((rest, digest)) => (rest, Some(digest)),
            None => (image, None),
        };
        if digest.is_some_and(|digest| !is_digest(digest)) {
            return None;
        }
        let last_slash = rest.rfind('/');
        let (name, tag) = match rest.rfind(':') {
            Some(colon) if last_slash.is_none_or(|slash| colon > slash) => {
                (&rest[..colon], Some(&rest[colon + 1..]))
            }
            _ => (rest, None),
        };
        if tag.is_some_and(|tag| !is_tag(tag)) {
            return None;
        }
        let mut path: Vec<&str> = name.split('/').collect();
        let registry = match path.as_slice() {
            [first, _, ..] if first.contains(['.', ':', '[']) || *first == "localhost" => {
                Some(path.remove(0))
            }
            _ => None,
        };
        if registry.is_some_and(|registry| !is_registry(registry))
            || !path.iter().all(|component| is_path_component(component))
        {
            return None;
        }
        Some(Self {
            registry,
            path,
            tag,
        })
    }
}

/// `[a-z0-9]+` runs joined by `.`, `_`, `__` or any number of `-`.
fn is_path_component(component: &str) -> bool {
    let bytes = component.as_bytes();
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    if !bytes.first().is_some_and(|b| alnum(*b)) || !bytes.last().is_some_and(|b| alnum(*b)) {
        return false;
    }
    let mut separator = String::new();
    for &b in bytes {
        if alnum(b) {
            if !(separator.is_empty()
                || separator == "."
                || separator == "_"
                || separator == "__"
                || separator.bytes().all(|s| s == b'-'))
            {
                return false;
            }
            separator.clear();
        } else if matches!(b, b'.' | b'_' | b'-') {
            separator.push(b as char);
        } else {
            return false;
        }
    }
    true
}

/// `[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`.
fn is_tag(tag: &str) -> bool {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    tag.len() <= 128
        && tag.bytes().next().is_some_and(word)
        && tag.bytes().all(|b| word(b) || b == b'.' || b == b'-')
}

/// `sha256:` and 64 lowercase hex digits, or `sha512:` and 128.
fn is_digest(digest: &str) -> bool {
    let hex = |text: &str, length: usize| {
        text.len() == length
            && text
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    match digest.split_once(':') {
        Some(("sha256", value)) => hex(value, 64),
        Some(("sha512", value)) => hex(value, 128),
        _ => false,
    }
}

/// `host[:port]`: dot-separated labels of letters, digits and inner `-`, or an
/// IPv6 address in brackets; the port, 1 to 5 digits.
fn is_registry(registry: &str) -> bool {
    let (host, port) = match registry.strip_prefix('[') {
        Some(bracketed) => match bracketed.split_once(']') {
            Some((host, after)) if host.parse::<std::net::Ipv6Addr>().is_ok() => match after {
                "" => (host, None),
                _ => match after.strip_prefix(':') {
                    Some(port) => (host, Some(port)),
                    None => return false,
                },
            },
            _ => return false,
        },
        None => match registry.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (registry, None),
        },
    };
    let label = |label: &str| {
        !label.is_empty()
            && !label.starts_with('-')
            && !label.ends_with('-')
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
    };
    let host_ok = registry.starts_with('[') || host.split('.').all(label);
    let port_ok = port.is_none_or(|port| {
        (1..=5).contains(&port.len()) && port.bytes().all(|b| b.is_ascii_digit())
    });
    host_ok && port_ok
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
            "8.8.8.8:5000/tools/x",
            "docker:27-cli",
            "registry.example.com:5000/a/b__c/d-e.f:v1.2_3",
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
            "sandbox-env",
            "sha256:8859c868391174b5e13237deb28ed5f15a2080e1db302737403a9dba616a09dd",
            "8859c868391174b5e13237deb28ed5f15a2080e1db302737403a9dba616a09dd",
            "3f2",
            "3f2:latest",
            "DEADBEEF",
            "0190c7d2-0000-7000-8000-000000000000:ab12",
            "team/0190c7d2-0000-7000-8000-000000000000",
        ] {
            assert!(is_private(image), "{image}");
        }
    }

    #[test]
    fn malformed_references_and_transports_are_private() {
        for image in [
            "\"3f2\"",
            "'alpine'",
            "3\\f2",
            "Alpine",
            "containers-storage:3f2",
            "containers-storage:[vfs@/var/lib/containers/storage]alpine",
            "docker-daemon:alpine",
            "oci:/var/lib/images/x",
            "oci-archive:/etc/x.tar",
            "dir:/root",
            "docker://127.0.0.1:5000/x",
            "docker://alpine",
            "alpine@sha256:00",
            "alpine:",
            "a//b",
            "a/-b",
            "host:port/x",
            "[::1/x",
            "",
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
