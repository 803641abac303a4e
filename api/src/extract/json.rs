//! JSON bodies: unknown fields, duplicate keys, type errors and missing fields all
//! answer the standard 422 validation array, with the path to the offending field.

use crate::error::ApiError;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use domain::error::Code;
use domain::validation::{Violation, ViolationKind};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// A JSON body parsed into `T` (which should deny unknown fields).
#[derive(Debug, Clone)]
pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(req, state).await.map_err(body_error)?;
        parse_json(&bytes).map(ApiJson)
    }
}

/// An optional JSON body: an empty body (or `null`) is `T::default()`, anything else is parsed
/// like [`ApiJson`] (for routes whose request fields are all optional, such as
/// revokes and enable).
#[derive(Debug, Clone)]
pub struct OptionalJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Default> FromRequest<S> for OptionalJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(req, state).await.map_err(body_error)?;
        if bytes.iter().all(u8::is_ascii_whitespace) || bytes.trim_ascii() == b"null" {
            return Ok(OptionalJson(T::default()));
        }
        parse_json(&bytes).map(OptionalJson)
    }
}

fn body_error(rejection: BytesRejection) -> ApiError {
    if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::code(Code::RequestTooLarge, "the request body is too large")
    } else {
        ApiError::code(Code::InvalidBody, rejection.body_text())
    }
}

/// Parses a JSON document into `T`, mapping every failure to a validation array.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::invalid(&["body"], ViolationKind::Missing, None));
    }
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = match serde_path_to_error::deserialize(&mut deserializer) {
        Err(error) if is_whole_float_for_integer(error.inner()) => {
            return parse_with_whole_floats(bytes);
        }
        parsed => parsed.map_err(path_violation)?,
    };
    deserializer
        .end()
        .map_err(|e| ApiError::Validation(vec![violation(vec!["body".into()], &e)]))?;
    Ok(value)
}

fn path_violation(error: serde_path_to_error::Error<serde_json::Error>) -> ApiError {
    let mut loc = vec!["body".to_string()];
    loc.extend(
        error
            .path()
            .iter()
            .map(|segment| segment.to_string())
            .filter(|s| s != "?" && s != "."),
    );
    ApiError::Validation(vec![violation(loc, error.inner())])
}

/// `2.0` where an integer is expected: JSON Schema (and so the OpenAPI document)
/// counts a number without a fraction as an integer, and pydantic, whose error
/// shape the spec follows, accepts it too.
fn is_whole_float_for_integer(error: &serde_json::Error) -> bool {
    let text = error.to_string();
    text.starts_with("invalid type: floating point `")
        && (text.contains("expected i") || text.contains("expected u"))
}

/// The slow path, taken only after such a refusal: the document again, with every
/// number that has no fraction (and fits an `i64` exactly) read as an integer.
fn parse_with_whole_floats<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let mut document: Value = serde_json::from_slice(bytes)
        .map_err(|e| ApiError::Validation(vec![violation(vec!["body".into()], &e)]))?;
    integers_for_whole_floats(&mut document);
    serde_path_to_error::deserialize(document).map_err(path_violation)
}

fn integers_for_whole_floats(value: &mut Value) {
    /// 2^53: above it an `f64` no longer holds every integer.
    const EXACT: f64 = 9_007_199_254_740_992.0;
    match value {
        Value::Number(number) => {
            if let Some(float) = number.as_f64().filter(|_| number.is_f64())
                && float.fract() == 0.0
                && float.abs() <= EXACT
            {
                *value = Value::from(float as i64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integers_for_whole_floats),
        Value::Object(fields) => fields.values_mut().for_each(integers_for_whole_floats),
        _ => {}
    }
}

/// Classifies a serde_json error the way pydantic names its error types.
fn violation(mut loc: Vec<String>, error: &serde_json::Error) -> Violation {
    let message = error.to_string();
    let text = without_string_input(message.split(" at line ").next().unwrap_or(&message));
    let field = |prefix: &str| {
        text.strip_prefix(prefix)
            .and_then(|rest| rest.split('`').nth(1))
            .map(str::to_string)
    };
    let kind = if error.is_syntax() || error.is_eof() {
        ViolationKind::Rule {
            kind: "json_invalid",
            message: format!("Invalid JSON: {text}"),
        }
    } else if let Some(name) = field("unknown field") {
        if loc.last() != Some(&name) {
            loc.push(name);
        }
        ViolationKind::Rule {
            kind: "extra_forbidden",
            message: "Extra inputs are not permitted".into(),
        }
    } else if let Some(name) = field("missing field") {
        if loc.last() != Some(&name) {
            loc.push(name);
        }
        ViolationKind::Missing
    } else if text.starts_with("duplicate field") {
        ViolationKind::Rule {
            kind: "duplicate_key",
            message: text,
        }
    } else if text.starts_with("unknown variant") {
        ViolationKind::Rule {
            kind: "enum",
            message: text,
        }
    } else if text.starts_with("invalid type") {
        ViolationKind::Rule {
            kind: "type_error",
            message: text,
        }
    } else {
        ViolationKind::Rule {
            kind: "value_error",
            message: text,
        }
    };
    Violation {
        loc,
        kind,
        input: None,
    }
}

/// serde's message without the string it was given: `invalid type: string
/// "hunter2", expected struct X` names the type only, so a secret sent in the
/// wrong place is never echoed in a 422.
fn without_string_input(text: &str) -> String {
    let start = text.find(": string \"").map(|at| at + ": string".len());
    let end = text.rfind("\", expected ");
    match (start, end) {
        (Some(start), Some(end)) if end >= start => {
            format!("{}{}", &text[..start], &text[end + 1..])
        }
        _ => text.to_string(),
    }
}

/// Distinguishes an absent field (`None`) from an explicit `null` (`Some(None)`)
/// (use with `#[serde(default, deserialize_with = ...)]`).
pub fn double_option<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Body {
        a: i32,
        inner: Option<Inner>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Inner {
        b: String,
    }

    fn first(json: &str) -> Violation {
        match parse_json::<Body>(json.as_bytes()) {
            Err(ApiError::Validation(mut v)) => v.remove(0),
            other => panic!("expected a validation error, got {other:?}"),
        }
    }

    #[test]
    fn a_whole_float_is_an_integer_and_a_fraction_is_not() {
        let body = parse_json::<Body>(br#"{"a": 42.0, "inner": {"b": "2.0"}}"#).unwrap();
        assert_eq!(body.a, 42);
        assert_eq!(body.inner.unwrap().b, "2.0");
        let v = first(r#"{"a": 42.5}"#);
        assert_eq!(v.loc, vec!["body", "a"]);
        let v = first(r#"{"a": 1.0, "inner": {"b": "x", "zz": 1}}"#);
        assert_eq!(v.loc, vec!["body", "inner", "zz"]);
    }

    #[test]
    fn unknown_fields_name_their_path() {
        let v = first(r#"{"a": 1, "inner": {"b": "x", "zz": 1}}"#);
        assert_eq!(v.loc, vec!["body", "inner", "zz"]);
        assert!(matches!(
            v.kind,
            ViolationKind::Rule {
                kind: "extra_forbidden",
                ..
            }
        ));
    }

    #[test]
    fn a_mistyped_string_is_not_echoed() {
        let v = first(r#"{"a": "hunter2, expected"}"#);
        match v.kind {
            ViolationKind::Rule { message, .. } => {
                assert_eq!(message, "invalid type: string, expected i32");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn missing_and_mistyped_fields() {
        assert_eq!(first(r#"{}"#).loc, vec!["body", "a"]);
        assert_eq!(first(r#"{}"#).kind, ViolationKind::Missing);
        assert!(matches!(
            first(r#"{"a": "x"}"#).kind,
            ViolationKind::Rule {
                kind: "type_error",
                ..
            }
        ));
        assert!(matches!(
            first(r#"{"a": 1, "a": 2}"#).kind,
            ViolationKind::Rule {
                kind: "duplicate_key",
                ..
            }
        ));
        assert!(matches!(
            first(r#"{"a": "#).kind,
            ViolationKind::Rule {
                kind: "json_invalid",
                ..
            }
        ));
        assert_eq!(first("  ").kind, ViolationKind::Missing);
    }
}
