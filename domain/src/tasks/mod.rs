//! Catalog tasks and task versions (spec sections 2 and 3), and the pure rules of
//! the job contract: bounded inputs and their canonical form, input schemas, version
//! contents and their digests.

pub mod bundle;
pub mod contents;
pub mod input;
pub mod schema;
pub mod scrub;
pub mod task;
pub mod version;
