//! Path parameters that answer the service's own error shape: a segment that does
//! not parse (`/tasks/not-a-uuid`) is the standard 422 validation array naming
//! `["path", <name>]`, as the custom-table mounts answer, instead of the framework's
//! plain-text 400.

use crate::error::ApiError;
use axum::extract::path::ErrorKind;
use axum::extract::rejection::PathRejection;
use axum::extract::{FromRequestParts, Path, RawPathParams};
use axum::http::request::Parts;
use domain::validation::ViolationKind;
use serde::de::DeserializeOwned;

/// Path parameters parsed into `T`.
#[derive(Debug, Clone)]
pub struct ApiPath<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let error = match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(value)) => return Ok(ApiPath(value)),
            Err(PathRejection::FailedToDeserializePathParams(error)) => error.into_kind(),
            Err(_) => return Err(ApiError::NotFound),
        };
        // What was expected: a type name, or the parser's own message.
        let (name, value, expected) = match error {
            ErrorKind::ParseErrorAtKey {
                key,
                value,
                expected_type,
            } => (key, value, expected_type.to_string()),
            ErrorKind::ParseErrorAtIndex {
                index,
                value,
                expected_type,
            } => (
                name_at(parts, state, index).await,
                value,
                expected_type.to_string(),
            ),
            // A single parameter read as one value.
            ErrorKind::ParseError {
                value,
                expected_type,
            } => (
                name_at(parts, state, 0).await,
                value,
                expected_type.to_string(),
            ),
            ErrorKind::DeserializeError {
                key,
                value,
                message,
            } => (key, value, message),
            _ => return Err(ApiError::NotFound),
        };
        let kind = if expected.ends_with("Uuid") || expected.starts_with("UUID") {
            ViolationKind::Rule {
                kind: "uuid_parsing",
                message: "Input should be a valid UUID".into(),
            }
        } else {
            ViolationKind::Rule {
                kind: "value_error",
                message: expected,
            }
        };
        Err(ApiError::invalid(
            &["path", &name],
            kind,
            Some(value.into()),
        ))
    }
}

/// The name of the `index`-th parameter of the matched route.
async fn name_at<S: Send + Sync>(parts: &mut Parts, state: &S, index: usize) -> String {
    RawPathParams::from_request_parts(parts, state)
        .await
        .ok()
        .and_then(|raw| raw.iter().nth(index).map(|(key, _)| key.to_string()))
        .unwrap_or_default()
}
