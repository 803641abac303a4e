//! What auditors read: the log exported as JSON Lines, and the hash chain verified.
//!
//! * [`export`] streams sealed events by position, filtered by range, aggregate or
//!   company, in a stable line format that [`ExportedEvent`] also reads back (the
//!   replay tests import recorded logs with it).
//! * [`verify`] recomputes the chain from position 1 and names the first position
//!   where the stored log no longer matches it, a gap in positions, a recorded
//!   checkpoint or a hash the auditor kept elsewhere.

pub mod export;
pub mod verify;

pub use export::{ExportFilter, ExportedEvent, Exporter};
pub use verify::{ChainBreak, Expectation, Verification};
