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
        let pairs: Vec<(String, String)> = serde_html_form::from_str(query).unwrap_or_default();
        if let Some((name, _)) = pairs.iter().find(|(_, value)| !storable(value)) {
            return Err(ApiError::invalid(
                &["query", name.trim_end_matches("[]")],
                ViolationKind::Rule {
                    kind: "value_error",
                    message: "Value error, PostgreSQL cannot hold this value".into(),
                },
                None,
            ));
        }
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

/// Whether PostgreSQL can take a text as a parameter: not with NUL, nor (read as a
/// timestamp) with a year outside its range, 4713 BC to 294276 AD (chrono reads
/// years far past both). A query would fail on either, as an internal error.
pub fn storable(text: &str) -> bool {
    !text.contains('\0')
        && !text
            .parse::<chrono::DateTime<chrono::Utc>>()
            .is_ok_and(|at| !(-4712..=294_275).contains(&chrono::Datelike::year(&at)))
}
