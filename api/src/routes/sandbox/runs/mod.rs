//! Runs (spec section 4, paths under `/chatrooms/{cid}`): submission and retry,
//! reading and cancelling runs, artifacts and public links.

pub mod admission;
mod artifacts;
mod budget;
pub mod detail;
mod history;
mod lifecycle;
mod links;
mod quick_run;
mod submit;
mod together;
pub mod views;

use crate::middleware::body_limit;
use crate::state::AppState;
use axum::extract::DefaultBodyLimit;
use axum::middleware::from_fn_with_state;
use utoipa_axum::router::OpenApiRouter;

/// A submission body holds an input of up to 1 MiB plus the other fields; it is
/// guarded by `Content-Length` before it is read.
pub const SUBMIT_BODY_LIMIT: usize = (1 << 20) + 4096;

/// The ordinary JSON routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(lifecycle::router())
        .merge(artifacts::router())
        .merge(links::router())
        .merge(history::router())
}

/// Submission, retry and Quick Run, which guard their own body sizes.
pub fn submit_router() -> OpenApiRouter<AppState> {
    submit::router()
        .layer(from_fn_with_state(SUBMIT_BODY_LIMIT, body_limit::guard))
        .layer(DefaultBodyLimit::max(SUBMIT_BODY_LIMIT))
        .merge(quick_run::router())
}
