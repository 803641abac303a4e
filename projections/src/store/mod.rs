//! Appending and loading events, and executing commands against aggregates.

mod batch;
mod bus;
mod repository;
mod snapshot;
mod upcast;

pub use batch::{Batch, Working};
pub use bus::{CommandBus, CommandError, Committed, EventKey};
pub use repository::{LogRepository, NulInText};
pub use snapshot::SNAPSHOT_EVERY;
pub use upcast::upcast;
