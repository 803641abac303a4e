//! The private sandbox API under `/private/module/sandbox`, grouped as the spec
//! groups it.

pub mod bindings;
pub mod environments;
pub mod management;
pub mod owners;
pub mod pricing;
pub mod rooms;
pub mod runs;
pub mod secrets;
pub mod settings;
pub mod tasks;

use crate::state::AppState;
use utoipa_axum::router::OpenApiRouter;

/// The prefix of every private sandbox route.
pub const PREFIX: &str = "/private/module/sandbox";

/// Every JSON sandbox route (relative to [`PREFIX`]); the caller applies the
/// ordinary body limit.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(settings::router())
        .merge(environments::router())
        .merge(tasks::router())
        .merge(bindings::router())
        .merge(rooms::router())
        .merge(management::router())
        .merge(runs::router())
        .merge(secrets::router())
}

/// Routes that stream raw bodies or take large ones, and enforce their own size
/// limits.
pub fn raw_router() -> OpenApiRouter<AppState> {
    environments::upload_bytes_router()
        .merge(tasks::large_body_router())
        .merge(runs::submit_router())
}
