//! The event store, the projector and the read models.
//!
//! * [`store`] appends and loads events through cqrs-es / postgres-es and executes
//!   commands (load, decide, append, wait for the read models).
//! * [`sealer`] gives committed events their global position and hash chain, in an
//!   order that never lets a reader skip an event that committed late;
//!   [`chain_epoch`] moves a log sealed under an older chain rule to the current one.
//! * [`pump`] runs the sealer and every [`projection::Projection`] in one
//!   checkpointed loop, and lets a request wait until its own events are projected.
//! * [`read_models`] are the projections themselves.
//! * [`audit`] exports the log and verifies its hash chain; [`rebuild`] rebuilds a
//!   projection beside the live one (or as it stood at a position); [`digest`]
//!   compares read models.

pub mod audit;
pub mod chain;
pub mod chain_epoch;
pub mod db;
pub mod digest;
pub mod log;
pub mod projection;
pub mod pump;
pub mod read_models;
pub mod rebuild;
pub mod sealer;
pub mod store;
#[cfg(feature = "testing")]
pub mod testing;

pub use log::StoredEvent;
pub use projection::Projection;
pub use pump::Pump;
pub use store::{CommandBus, CommandError, Committed};
