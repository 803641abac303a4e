//! The event store, the projector and the read models.
//!
//! * [`store`] appends and loads events through cqrs-es / postgres-es and executes
//!   commands (load, decide, append, wait for the read models).
//! * [`sealer`] gives committed events their global position and hash chain, in an
//!   order that never lets a reader skip an event that committed late.
//! * [`pump`] runs the sealer and every [`projection::Projection`] in one
//!   checkpointed loop, and lets a request wait until its own events are projected.
//! * [`read_models`] are the projections themselves.

pub mod chain;
pub mod db;
pub mod log;
pub mod projection;
pub mod pump;
pub mod read_models;
pub mod sealer;
pub mod store;
#[cfg(feature = "testing")]
pub mod testing;

pub use log::StoredEvent;
pub use projection::Projection;
pub use pump::Pump;
pub use store::{CommandBus, CommandError, Committed};
