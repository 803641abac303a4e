//! Authenticating a callback request (spec `custom-tables.md` section 5):
//! `Authorization: Bearer <secret>`, or `X-Callback-Timestamp` (Unix seconds,
//! within ±300 s) with `X-Callback-Signature`, the hex HMAC-SHA256 of
//! `<timestamp>.<raw body>` keyed with the 32 raw bytes of the secret's SHA-256.
//!
//! Every failure (unknown, revoked or expired token, a wrong or missing secret, a
//! bad or stale signature) is the same [`ApiError::NotFound`]. Secrets and
//! signatures are compared in constant time; tokens are found by a hash of their
//! id.

use crate::error::{ApiError, ApiResult};
use crate::routes::tables::public_tokens::{bearer, proves_secret};
use crate::state::AppState;
use crate::throttle::Admission;
use axum::http::{HeaderMap, HeaderValue, header};
use chrono::{DateTime, Utc};
use domain::error::Code;
use domain::tables::token_lifecycle::readable;
use hmac::{Hmac, Mac};
use projections::read_models::public_tokens::callback::{self as tokens, CallbackTokenRow};
use sha2::Sha256;
use std::time::Instant;
use uuid::Uuid;

/// How far a signature's timestamp may lie from the server's clock.
pub const CLOCK_TOLERANCE_SECONDS: i64 = 300;
/// Requests per minute of one token (all its write requests).
pub const CALLBACK_RPM: i64 = 60;

/// The HMAC-SHA256 of `<timestamp>.<body>` keyed with the raw bytes of the
/// secret's SHA-256 (a client sends it in hex).
fn mac(secret_sha256: &[u8], timestamp: &str, body: &[u8]) -> Hmac<Sha256> {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret_sha256).expect("any key length");
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(body);
    mac
}

fn header<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// Whether the request carries the secret or a fresh signature of `body`.
fn carries_credentials(
    headers: &HeaderMap,
    secret_sha256: &str,
    body: &[u8],
    now: DateTime<Utc>,
) -> bool {
    if let Some(presented) = bearer(headers) {
        return proves_secret(presented, secret_sha256);
    }
    let Ok(key) = hex::decode(secret_sha256) else {
        return false;
    };
    let (Some(timestamp), Some(sent)) = (
        header(headers, "x-callback-timestamp"),
        header(headers, "x-callback-signature"),
    ) else {
        return false;
    };
    let fresh = timestamp
        .parse::<i64>()
        .is_ok_and(|at| now.timestamp().abs_diff(at) <= CLOCK_TOLERANCE_SECONDS.unsigned_abs());
    let Ok(sent) = hex::decode(sent) else {
        return false;
    };
    fresh && mac(&key, timestamp, body).verify_slice(&sent).is_ok()
}

/// The live token `raw` names, when the request proves it holds its secret.
pub async fn authenticate(
    state: &AppState,
    raw: &str,
    headers: &HeaderMap,
    body: &[u8],
) -> ApiResult<CallbackTokenRow> {
    let now = Utc::now();
    let token_id = Uuid::parse_str(raw).map_err(|_| ApiError::NotFound)?;
    let token = tokens::by_id(&state.pool, token_id)
        .await?
        .ok_or(ApiError::NotFound)?;
    // A command-output credential runs its Command only, on its own route.
    let live = readable(token.revoked, token.valid_until, now) && token.command_id.is_none();
    if !live || !carries_credentials(headers, &token.secret_sha256, body, now) {
        return Err(ApiError::NotFound);
    }
    Ok(token)
}

/// Counts a write request in the token's minute window (429 when it is full).
pub fn admit(state: &AppState, token: &CallbackTokenRow) -> ApiResult<()> {
    match state.throttle.admit(token.id, CALLBACK_RPM, Instant::now()) {
        Admission::Allowed { .. } => Ok(()),
        Admission::Limited { retry_after } => Err(ApiError::code(
            Code::CallbackRateLimited,
            format!("rate limit exceeded ({CALLBACK_RPM}/min per token)"),
        )
        .with_header(header::RETRY_AFTER, HeaderValue::from(retry_after))),
    }
}
