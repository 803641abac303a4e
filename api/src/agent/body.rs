//! The input bounds of a tool call's body (spec section 8: depth, nodes, NUL,
//! duplicate keys). The MCP server parses the body itself, merging duplicate keys
//! on the way, so this layer reads the raw bytes first with the same bounded parser
//! as REST submission. A body that breaks a bound still reaches the server (a
//! JSON-RPC answer is owed), marked so that a tool call answers `validation_error`.

use crate::routes::sandbox::runs::SUBMIT_BODY_LIMIT;
use axum::body::Body;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use domain::tasks::input::{self, InputLimits};

/// The largest tool call: an input of up to 1 MiB plus the JSON-RPC envelope.
pub const MCP_BODY_LIMIT: usize = SUBMIT_BODY_LIMIT + 16 * 1024;

/// Why a body broke the input bounds.
#[derive(Debug, Clone)]
pub struct BrokenBounds(pub String);

/// The bounds of a body whose input sits at `params.arguments.input`.
fn limits() -> InputLimits {
    let input = InputLimits::default();
    InputLimits {
        max_bytes: MCP_BODY_LIMIT,
        max_depth: input.max_depth + 3,
        max_nodes: input.max_nodes + 64,
    }
}

/// Reads the body, marks it when it breaks a bound, and passes it on.
pub async fn check_bounds(request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MCP_BODY_LIMIT).await else {
        return StatusCode::PAYLOAD_TOO_LARGE.into_response();
    };
    let broken = input::parse_value(&bytes, limits()).err();
    let mut request = Request::from_parts(parts, Body::from(bytes));
    if let Some(error) = broken {
        request
            .extensions_mut()
            .insert(BrokenBounds(error.to_string()));
    }
    next.run(request).await
}
