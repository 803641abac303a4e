//! Task bundles: an archive of files (data, helper scripts, a small program) that a
//! run finds unpacked in `/workspace` before its startup script runs. Uploaded with
//! `POST /tasks/{id}/bundle-uploads`, named by a draft as `bundle_id`, pinned in the
//! version's contents by digest. A bundle runs only on an environment version
//! whose runner release the operator approved (`task_bundle_runner_unsupported`).

use crate::environments::archive::{ArchiveFormat, ArchiveLimits, ArchiveRejection};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Largest upload (the archive as sent).
pub const MAX_BUNDLE_BYTES: u64 = 64 << 20;

/// Root names a bundle may not hold: what the platform writes into `/workspace`.
pub const RESERVED_BUNDLE_NAMES: &[&str] = &[
    "startup.sh",
    "work.sh",
    "driver.sh",
    "input.json",
    "inputs.json",
    "output",
    "artifacts",
];

/// The rules a bundle is scanned with: the platform's names reserved, no
/// Dockerfile needed, at most 10,000 entries and 256 MiB unpacked.
pub fn limits() -> ArchiveLimits {
    ArchiveLimits {
        max_entries: 10_000,
        max_total_bytes: 256 << 20,
        max_dockerfile_bytes: 0,
        reserved_root_names: RESERVED_BUNDLE_NAMES,
        require_dockerfile: false,
    }
}

/// Whether a scan's refusal is a path rule (`bundle_path_forbidden`, the message
/// naming the entry) rather than an unreadable or oversized archive.
pub fn is_path_rule(rejection: &ArchiveRejection) -> bool {
    matches!(
        rejection,
        ArchiveRejection::HostileEntry { .. } | ArchiveRejection::SpecialEntry { .. }
    )
}

/// The bundle a task version pins.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BundleRef {
    /// The stored upload.
    pub object_id: Uuid,
    /// `sha256:` of the archive.
    pub digest: String,
    /// Archive bytes.
    pub byte_size: u64,
    /// Its format.
    pub archive_format: ArchiveFormat,
    /// Files and directories in it.
    pub entries: u64,
}
