//! The `Content-Length` guard (spec section 7): a malformed length answers 400
//! `invalid_content_length` and a length above the route's limit answers 413
//! `request_too_large`, both before any byte of the body is read. Bodies without a
//! length (chunked) are capped while they are read by axum's body limit, which the
//! JSON extractor maps to the same 413.

use crate::error::ApiError;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use domain::error::Code;

/// Body limit of ordinary JSON routes.
pub const DEFAULT_LIMIT: usize = 1024 * 1024;

/// The declared `Content-Length` (`None` without one); 400 `invalid_content_length`
/// when it is malformed or repeated with different values.
pub fn declared_length(headers: &HeaderMap) -> Result<Option<u64>, ApiError> {
    let mut values = headers.get_all(header::CONTENT_LENGTH).iter();
    let Some(first) = values.next() else {
        return Ok(None);
    };
    let malformed = || {
        ApiError::code(
            Code::InvalidContentLength,
            "the Content-Length header is malformed",
        )
    };
    let text = first.to_str().map_err(|_| malformed())?;
    if text.is_empty()
        || !text.bytes().all(|b| b.is_ascii_digit())
        || values.any(|other| other != first)
    {
        return Err(malformed());
    }
    text.parse().map(Some).map_err(|_| malformed())
}

/// Checks the declared length against `limit`.
pub fn check(request: &Request, limit: usize) -> Result<(), ApiError> {
    let length = declared_length(request.headers())?;
    if length.is_some_and(|length| length > limit as u64) {
        return Err(ApiError::code(
            Code::RequestTooLarge,
            format!("the request body may be at most {limit} bytes"),
        ));
    }
    Ok(())
}

/// Reads a raw body of at most `limit` bytes: a declared length above it is refused
/// before any byte is read, a longer body while it is read (413
/// `body exceeds <limit> bytes`). For routes that must see the exact bytes (public
/// queries, signed callbacks).
pub async fn read_capped(
    headers: &HeaderMap,
    body: axum::body::Body,
    limit: usize,
) -> Result<axum::body::Bytes, ApiError> {
    let too_large = || ApiError::code(Code::RequestTooLarge, format!("body exceeds {limit} bytes"));
    if declared_length(headers)?.is_some_and(|length| length > limit as u64) {
        return Err(too_large());
    }
    axum::body::to_bytes(body, limit)
        .await
        .map_err(|_| too_large())
}

/// Middleware form; the state is the route group's limit. Pair it with
/// `DefaultBodyLimit::max` of the same size for bodies without a length.
pub async fn guard(State(limit): State<usize>, request: Request, next: Next) -> Response {
    match check(&request, limit) {
        Ok(()) => next.run(request).await,
        Err(error) => error.into_response(),
    }
}
