//! Environments, context uploads, versions and builds (spec section 4, prefix
//! `/environments`).

mod builds;
mod catalog;
mod uploads;
mod versions;

pub use uploads::check_upload_rate;
mod views;

use crate::state::AppState;
use utoipa_axum::router::OpenApiRouter;

/// The JSON routes (the caller applies the ordinary body limit).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(catalog::router())
        .merge(uploads::router())
        .merge(versions::router())
        .merge(builds::router())
}

/// The raw-bytes PUT of context uploads, which enforces each session's declared size
/// itself.
pub fn upload_bytes_router() -> OpenApiRouter<AppState> {
    uploads::bytes_router()
}
