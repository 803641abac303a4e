//! The domain layer: aggregates decide (`handle` → events) and evolve (`apply`).
//!
//! Nothing in this crate performs I/O: facts from outside (directory lookups,
//! clocks, random secrets) are looked up by the caller and passed in commands, so
//! every aggregate can be replayed from its events alone.

pub mod agent;
pub mod aggregate_ext;
pub mod build_fence;
pub mod catalog;
pub mod codes;
pub mod directory;
pub mod environments;
pub mod error;
pub mod ids;
pub mod notifications;
pub mod objects;
pub mod pricing;
pub mod principal;
pub mod public_address;
pub mod registry;
pub mod review;
pub mod runner_release;
pub mod runs;
pub mod secrets;
pub mod settings;
pub mod sharing;
pub mod switch;
pub mod tables;
pub mod tasks;
pub mod upcast;
pub mod validation;
pub mod wire;

pub use aggregate_ext::AggregateExt;
pub use error::{ErrorClass, SpecError};
