//! Custom tables (spec `custom-tables.md`): tables owned by a chatroom, department
//! or company scope, their typed columns, stored views and records.
//!
//! A [`table::CustomTable`] aggregate holds the schema (columns with their internal
//! `col_<hex>` keys, views, the migration that holds it); every record is its own
//! [`record::Record`] aggregate. Value rules ([`values`]), column rules ([`column`]),
//! scope rules ([`scope`]) and query rules ([`query`]) are pure functions: facts that
//! need the database (does this user exist, is that record live) are looked up by
//! the caller and passed in.

pub mod access;
pub mod agent_delivery;
pub mod callback_delivery;
pub mod callback_token;
pub mod column;
pub mod command;
pub mod deployment;
pub mod error;
pub mod formula;
pub mod grants;
pub mod import;
pub mod policy;
pub mod public_token;
pub mod query;
pub mod record;
pub mod rule;
pub mod scope;
pub mod staged_change;
pub mod table;
pub mod tag;
pub mod token_lifecycle;
pub mod trigger;
pub mod values;

pub use error::TableError;

/// Tables with more live records than this migrate in the background.
pub const BACKGROUND_THRESHOLD: i64 = 10_000;
