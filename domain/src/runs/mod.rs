//! Runs (spec sections 2 and 3): one execution of a published task version in a
//! room, from submission through the executor to a terminal class, with the objects
//! it leaves behind (log, output, artifact bundle) and their public links.

pub mod link;
pub mod run;
