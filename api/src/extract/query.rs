//! Query strings: repeated keys (`status[]=a&status[]=b`) fill vectors, and bad
//! values answer the standard 422 validation array.

use crate::error::ApiError;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use domain::validation::{Violation, ViolationKind};
use serde::de::DeserializeOwned;

/// Query parameters parsed into `T`.
#[derive(Debug, Clone)]
pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let query = parts.uri.query().unwrap_or("");
        serde_html_form::from_str(query)
            .map(ApiQuery)
            .map_err(|error| {
                ApiError::Validation(vec![Violation {
                    loc: vec!["query".to_string()],
                    kind: ViolationKind::Rule {
                        kind: "value_error",
                        message: error.to_string(),
                    },
                    input: None,
                }])
            })
    }
}
