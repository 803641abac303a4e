//! HTTP-level tests: the real server on a real socket against a fresh database.

mod support;

mod agent;
mod audit;
mod auth;
mod chatrooms;
mod coverage;
mod environments;
mod error_codes;
mod general;
mod log_stall;
mod notifications;
mod public;
mod restricted;
mod retention;
mod runs;
mod sandbox;
mod secrets;
mod settings;
mod sharing;
mod tables;
mod tasks;
