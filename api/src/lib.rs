//! The sandbox-api server: HTTP routes that mirror the two specifications, their
//! authentication and error mapping, and the operator functions `sandboxctl` shares.

pub mod access;
pub mod admin;
pub mod admission;
pub mod agent;
pub mod answer_cache;
pub mod auth;
pub mod capability;
pub mod config;
pub mod download;
pub mod error;
pub mod extract;
pub mod idempotency;
pub mod keys;
pub mod limits;
pub mod links;
pub mod middleware;
pub mod objects;
pub mod openapi;
pub mod pagination;
pub mod request;
pub mod routes;
pub mod runtime;
pub mod secrets;
pub mod server;
pub mod state;
pub mod throttle;
