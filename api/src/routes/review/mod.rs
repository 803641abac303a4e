//! The review module (`/private/module/review`, [docs/approvals.md]): review groups
//! and templates (company managers), and the review processes of callback writes
//! an approval rule held, decided by the members of the templates' groups.

mod definitions;
mod processes;

use crate::state::AppState;
use utoipa_axum::router::OpenApiRouter;

/// Where the review routes live.
pub const PREFIX: &str = "/private/module/review";

/// The review routes (mounted below [`PREFIX`] behind authentication).
pub fn router() -> OpenApiRouter<AppState> {
    definitions::router().merge(processes::router())
}
