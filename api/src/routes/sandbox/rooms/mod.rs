//! Routes under `/chatrooms/{chatroom_id}` (spec section 4, "Runs"): the room menu
//! and the granted jobs a room manager enables.

mod granted_jobs;
pub mod menu;

use crate::state::AppState;
use utoipa_axum::router::OpenApiRouter;

/// The room routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(menu::router())
        .merge(granted_jobs::router())
}
