//! Routes, grouped the way the specs group them.

pub mod chatrooms;
pub mod health;
pub mod notifications;
pub mod public;
pub mod public_links;
pub mod review;
pub mod root;
pub mod sandbox;
pub mod tables;

use crate::error::ApiError;

/// The uniform answer for paths no route serves.
pub async fn not_found() -> ApiError {
    ApiError::NotFound
}
