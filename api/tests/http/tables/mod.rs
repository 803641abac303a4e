//! Custom tables over HTTP (spec `custom-tables.md` sections 1, 2, 4, 5, 7, 8).

mod attachments;
mod callback;
mod channels;
mod columns;
mod commands;
mod commands_only;
mod coverage;
mod deliveries;
mod deployment;
mod deployment_roundtrip;
pub mod fixture;
mod formulas;
mod grant_refusals;
mod matrix;
mod migrations;
mod passphrase;
mod policies;
mod public_read;
mod records;
mod refusals;
mod replay;
mod rollups;
mod scopes;
mod tags;
mod triggers;
mod types;
