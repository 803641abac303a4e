//! The kill switch (spec section 8): with `SANDBOX_ENABLED=false`, or while the
//! operator's deployment-wide switch or the caller's company switch is off
//! (`sandboxctl switch`), every non-GET sandbox change answers 503
//! `sandbox_disabled`, except paths ending in `/cancel` or `/download`. GET, HEAD
//! and OPTIONS always pass.

use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use domain::error::Code;
use domain::principal::Principal;
use projections::read_models::switches;
use uuid::Uuid;

/// Whether a request passes whatever the switches say (the spec's exceptions).
pub fn exempt(method: &Method, path: &str) -> bool {
    matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
        || path.ends_with("/cancel")
        || path.ends_with("/download")
}

/// 503 `sandbox_disabled` when a switch covering the company is off (the
/// deployment's `SANDBOX_ENABLED`, the operator's global switch, the company's).
pub async fn check(state: &AppState, company: Option<Uuid>) -> ApiResult<()> {
    if state.deployment.enabled && !switches::off_for(&state.pool, company).await? {
        return Ok(());
    }
    Err(ApiError::code(
        Code::SandboxDisabled,
        "the sandbox is disabled by the operator",
    ))
}

/// Middleware form (behind authentication: the principal names the company).
pub async fn kill_switch(State(state): State<AppState>, request: Request, next: Next) -> Response {
    if !exempt(request.method(), request.uri().path()) {
        let company = request
            .extensions()
            .get::<Principal>()
            .map(|p| p.company_id);
        if let Err(refused) = check(&state, company).await {
            return refused.into_response();
        }
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_reads_cancel_and_download_are_exempt() {
        assert!(exempt(&Method::GET, "/settings"));
        assert!(exempt(&Method::OPTIONS, "/settings"));
        assert!(exempt(&Method::POST, "/chatrooms/c/runs/r/cancel"));
        assert!(exempt(
            &Method::POST,
            "/chatrooms/c/runs/r/artifacts/a/download"
        ));
        assert!(!exempt(&Method::PUT, "/settings"));
        assert!(!exempt(&Method::POST, "/chatrooms/c/runs"));
    }
}
