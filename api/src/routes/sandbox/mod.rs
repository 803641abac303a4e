//! The private sandbox API under `/private/module/sandbox`, grouped as the spec
//! groups it.

pub mod settings;

use crate::state::AppState;
use utoipa_axum::router::OpenApiRouter;

/// The prefix of every private sandbox route.
pub const PREFIX: &str = "/private/module/sandbox";

/// Every sandbox route (relative to [`PREFIX`]).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().merge(settings::router())
}
