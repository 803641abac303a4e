//! Environments (spec sections 2 and 3): environments, context upload sessions,
//! versions with their build attempts, and the archive and Dockerfile rules.

pub mod archive;
pub mod base_image;
pub mod dockerfile;
pub mod environment;
mod run_mounts;
pub mod upload;
pub mod version;

/// Paths the platform writes into `/workspace` at run time; a built image that
/// already holds one of them is refused (`context_invalid`).
pub const RESERVED_IMAGE_PATHS: &[&str] = &[
    "workspace/startup.sh",
    "workspace/work.sh",
    "workspace/driver.sh",
    "workspace/input.json",
];
