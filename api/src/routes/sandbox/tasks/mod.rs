//! Catalog tasks and task versions (spec section 4, prefix `/tasks`).

pub mod bundles;
mod catalog;
pub mod draft;
pub mod output_policy;
pub mod preview;
mod scripts;
mod shares;
pub mod versions;
pub mod views;

use crate::middleware::body_limit;
use crate::state::AppState;
use axum::extract::DefaultBodyLimit;
use axum::middleware::from_fn_with_state;
use utoipa_axum::router::OpenApiRouter;

/// A version body holds two scripts of up to 1 MiB each, the environment (256 KiB)
/// and the input texts (64 KiB each), so its routes take more than the ordinary
/// limit; multipart script routes take one script plus framing.
pub const VERSION_BODY_LIMIT: usize = 4 << 20;

/// The ordinary JSON routes (the caller applies the ordinary body limit).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(catalog::router())
        .merge(preview::router())
        .merge(shares::router())
}

/// The version and script routes, which guard their own body sizes.
pub fn large_body_router() -> OpenApiRouter<AppState> {
    let versions = versions::router()
        .layer(from_fn_with_state(VERSION_BODY_LIMIT, body_limit::guard))
        .layer(DefaultBodyLimit::max(VERSION_BODY_LIMIT));
    versions.merge(scripts::router()).merge(bundles::router())
}
