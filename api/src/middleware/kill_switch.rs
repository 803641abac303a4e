//! The kill switch (`SANDBOX_ENABLED=false`, spec section 8): every non-GET sandbox
//! change answers 503 `sandbox_disabled`, except paths ending in `/cancel` or
//! `/download`. GET, HEAD and OPTIONS always pass.

use crate::error::ApiError;
use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use domain::error::Code;

/// Whether the switch lets the request through.
pub fn passes(enabled: bool, method: &Method, path: &str) -> bool {
    enabled
        || matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
        || path.ends_with("/cancel")
        || path.ends_with("/download")
}

/// Middleware form; the state is whether the sandbox is enabled.
pub async fn kill_switch(State(enabled): State<bool>, request: Request, next: Next) -> Response {
    if passes(enabled, request.method(), request.uri().path()) {
        next.run(request).await
    } else {
        ApiError::code(
            Code::SandboxDisabled,
            "the sandbox is disabled by the operator",
        )
        .into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_reads_cancel_and_download_pass_when_disabled() {
        assert!(passes(false, &Method::GET, "/settings"));
        assert!(passes(false, &Method::OPTIONS, "/settings"));
        assert!(passes(false, &Method::POST, "/chatrooms/c/runs/r/cancel"));
        assert!(passes(
            false,
            &Method::POST,
            "/chatrooms/c/runs/r/artifacts/a/download"
        ));
        assert!(!passes(false, &Method::PUT, "/settings"));
        assert!(!passes(false, &Method::POST, "/chatrooms/c/runs"));
        assert!(passes(true, &Method::PUT, "/settings"));
    }
}
