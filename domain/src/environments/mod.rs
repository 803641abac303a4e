//! Environments (spec sections 2 and 3): environments, context upload sessions,
//! versions with their build attempts, and the archive and Dockerfile rules.

pub mod archive;
pub mod dockerfile;
pub mod environment;
pub mod upload;
pub mod version;
