//! HTTP-level tests: the real server on a real socket against a fresh database.

mod support;

mod auth;
mod general;
mod public;
mod restricted;
mod settings;
mod tables;
