//! The operator of the `/root` routes: `Authorization: Bearer <operator token>`
//! (`sandboxctl token mint --root`). No credential, or one that is not valid, is
//! the usual 418; a valid user token is 403 (a user is not the operator).

use crate::error::ApiError;
use crate::state::AppState;
use axum::extract::FromRequestParts;
use axum::http::header;
use axum::http::request::Parts;

/// Proof that the request carries a valid operator token.
#[derive(Debug, Clone, Copy)]
pub struct Operator;

impl FromRequestParts<AppState> for Operator {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let token = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                v.strip_prefix("Bearer ")
                    .or_else(|| v.strip_prefix("bearer "))
            })
            .map(str::trim)
            .ok_or(ApiError::Unauthenticated)?;
        if state.jwt.verify_operator(token) {
            Ok(Operator)
        } else if state.jwt.verify(token).is_some() {
            Err(ApiError::Forbidden("an operator token is required"))
        } else {
            Err(ApiError::Unauthenticated)
        }
    }
}
