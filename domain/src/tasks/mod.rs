//! Catalog tasks and task versions (spec sections 2 and 3), and the pure rules of
//! the job contract: bounded inputs and their canonical form, input schemas.

pub mod input;
pub mod schema;
