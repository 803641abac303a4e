//! Operator functions shared by `sandboxctl` and the tests: applying a directory
//! file, minting tokens, changing company limits, publishing curated environments,
//! scrubbing task versions.

pub mod curated;
pub mod directory;
pub mod scrub;

use domain::principal::{Actor, EventMetadata};

/// Event metadata for an operator action.
pub fn operator_metadata(operator: &str) -> EventMetadata {
    EventMetadata {
        actor: Actor::Operator(operator.to_string()),
        company_id: None,
        request_id: format!("cli-{}", uuid::Uuid::new_v4()),
        time: chrono::Utc::now(),
    }
}
