//! The one place where failures become HTTP responses.
//!
//! Tenant errors answer `{detail: {code, message}}`; request validation answers the
//! standard validation array `{detail: [{type, loc, msg, input, ctx}]}`; hidden
//! resources answer the uniform `404 {detail: "Not found"}`; authentication-layer
//! refusals answer a plain string detail. Internal failures are logged with the
//! request id and answer a generic 500 without their cause.

use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use domain::error::Code;
use domain::validation::{Violation, ViolationKind};
use domain::{ErrorClass, SpecError};
use projections::CommandError;
use projections::pump::NotYetVisible;
use serde_json::{Map, Value, json};

/// Every way a request can fail.
#[derive(Debug)]
pub enum ApiError {
    /// Missing, cross-company or not visible to the caller.
    NotFound,
    /// A 404 whose detail names what is missing, where the spec gives the text
    /// (custom tables: `Custom table not found`, `View not found`, `Token not
    /// found`); as uniform as [`ApiError::NotFound`] between missing and hidden.
    Missing(&'static str),
    /// Neither credential was sent, or the one sent is not valid (418).
    Unauthenticated,
    /// An authentication-layer or role refusal with a plain message.
    Forbidden(&'static str),
    /// The route exists but not for this principal (restricted keys).
    MethodNotAllowed,
    /// A 403 whose body is `{error: <code>}` (custom tables' channel floor:
    /// `scp_scope_undeclared`).
    Refused(Code),
    /// Request validation failed.
    Validation(Vec<Violation>),
    /// A spec error code with its status.
    Coded(Coded),
    /// The command committed, but the read models did not show it in time: 503
    /// `committed_not_yet_visible` with `committed: true` and `Retry-After`, never
    /// an answer built from a read model that lacks the write.
    NotYetVisible(NotYetVisible),
    /// A bug or a broken dependency; logged, never shown.
    Internal(anyhow::Error),
}

/// A `{detail: {code, message, ...}}` error.
#[derive(Debug)]
pub struct Coded {
    /// HTTP status.
    pub status: StatusCode,
    /// Error code.
    pub code: Code,
    /// Human message.
    pub message: String,
    /// Further `detail` fields (for example `limit`, `errors`).
    pub extra: Map<String, Value>,
    /// Extra response headers (for example `Retry-After`).
    pub headers: Vec<(HeaderName, HeaderValue)>,
}

impl ApiError {
    /// A one-line account of the refusal, for a list of per-item errors (an
    /// import's rows); internal errors say no more than that.
    pub fn describe(&self) -> String {
        match self {
            ApiError::NotFound => "not found".into(),
            ApiError::Missing(what) => (*what).into(),
            ApiError::Unauthenticated => "not authenticated".into(),
            ApiError::Forbidden(message) => (*message).into(),
            ApiError::MethodNotAllowed => "not allowed".into(),
            ApiError::Refused(code) => code.as_str().into(),
            ApiError::Validation(violations) => violations
                .iter()
                .map(|v| {
                    let item = render_violation(v);
                    format!(
                        "{}: {}",
                        v.loc.join("."),
                        item["msg"].as_str().unwrap_or("")
                    )
                })
                .collect::<Vec<_>>()
                .join("; "),
            ApiError::Coded(coded) => format!("{}: {}", coded.code.as_str(), coded.message),
            ApiError::NotYetVisible(_) => "not yet visible".into(),
            ApiError::Internal(_) => "internal error".into(),
        }
    }

    /// A coded error, answered with its code's status.
    pub fn code(code: Code, message: impl Into<String>) -> Self {
        Self::Coded(Coded {
            status: status_of(code.class()),
            code,
            message: message.into(),
            extra: Map::new(),
            headers: Vec::new(),
        })
    }

    /// Answers a coded error with another status than its code's (the spec names
    /// a few codes under two statuses).
    pub fn with_status(mut self, status: StatusCode) -> Self {
        if let Self::Coded(coded) = &mut self {
            coded.status = status;
        }
        self
    }

    /// Adds a field to `detail` of a coded error.
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        if let Self::Coded(coded) = &mut self {
            coded.extra.insert(key.to_string(), value.into());
        }
        self
    }

    /// Adds a response header to a coded error.
    pub fn with_header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        if let Self::Coded(coded) = &mut self {
            coded.headers.push((name, value));
        }
        self
    }

    /// A single validation problem.
    pub fn invalid(loc: &[&str], kind: ViolationKind, input: Option<Value>) -> Self {
        Self::Validation(vec![Violation {
            loc: loc.iter().map(|s| s.to_string()).collect(),
            kind,
            input,
        }])
    }

    /// An internal error from anything displayable.
    pub fn internal(error: impl Into<anyhow::Error>) -> Self {
        Self::Internal(error.into())
    }
}

/// The status of a domain error class.
pub fn status_of(class: ErrorClass) -> StatusCode {
    match class {
        ErrorClass::BadRequest => StatusCode::BAD_REQUEST,
        ErrorClass::Validation => StatusCode::UNPROCESSABLE_ENTITY,
        ErrorClass::Forbidden => StatusCode::FORBIDDEN,
        ErrorClass::NotFound => StatusCode::NOT_FOUND,
        ErrorClass::Conflict => StatusCode::CONFLICT,
        ErrorClass::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        ErrorClass::Locked => StatusCode::LOCKED,
        ErrorClass::RateLimited => StatusCode::TOO_MANY_REQUESTS,
        ErrorClass::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        ErrorClass::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
    }
}

/// Converts a domain error that carries a spec code.
pub fn from_spec<E: SpecError>(error: &E) -> ApiError {
    if let Some(violations) = error.violations() {
        return ApiError::Validation(violations.0.clone());
    }
    match error.class() {
        ErrorClass::NotFound => ApiError::NotFound,
        class => {
            let answer =
                ApiError::code(error.code(), error.to_string()).with_status(status_of(class));
            error
                .details()
                .into_iter()
                .fold(answer, |answer, (key, value)| answer.with(key, value))
        }
    }
}

/// A failed command: its refusal in the error's own terms, a lost race as
/// `concurrent_modification`, a text holding NUL as a 422, a late read model as 503.
impl<E: SpecError> From<CommandError<E>> for ApiError {
    fn from(error: CommandError<E>) -> Self {
        match error {
            CommandError::Rejected(e) => from_spec(&e),
            CommandError::Conflict => ApiError::code(
                Code::ConcurrentModification,
                "the resource was modified concurrently; nothing changed, resend the request",
            ),
            CommandError::Store(e) => ApiError::Internal(e),
            CommandError::Unstorable(refused) => ApiError::invalid(
                &["body"],
                ViolationKind::Rule {
                    kind: "value_error",
                    message: format!("Value error, {refused}"),
                },
                None,
            ),
            CommandError::NotYetVisible(pending) => ApiError::NotYetVisible(pending),
        }
    }
}

impl From<domain::tables::TableError> for ApiError {
    fn from(error: domain::tables::TableError) -> Self {
        from_spec(&error)
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(error: sqlx::Error) -> Self {
        ApiError::Internal(error.into())
    }
}

/// Renders one violation as a validation-array item.
pub fn render_violation(v: &Violation) -> Value {
    let (kind, msg, ctx): (&str, String, Option<Value>) = match &v.kind {
        ViolationKind::Missing => ("missing", "Field required".into(), None),
        ViolationKind::GreaterThanEqual(n) => (
            "greater_than_equal",
            format!("Input should be greater than or equal to {n}"),
            Some(json!({"ge": n})),
        ),
        ViolationKind::LessThanEqual(n) => (
            "less_than_equal",
            format!("Input should be less than or equal to {n}"),
            Some(json!({"le": n})),
        ),
        ViolationKind::TooShort(n) => (
            "too_short",
            format!("Input should have at least {n} item(s) or character(s)"),
            Some(json!({"min_length": n})),
        ),
        ViolationKind::TooLong(n) => (
            "too_long",
            format!("Input should have at most {n} item(s) or character(s)"),
            Some(json!({"max_length": n})),
        ),
        ViolationKind::Enum(expected) => {
            let list = expected
                .iter()
                .map(|e| format!("'{e}'"))
                .collect::<Vec<_>>()
                .join(", ");
            (
                "enum",
                format!("Input should be one of {list}"),
                Some(json!({"expected": list})),
            )
        }
        ViolationKind::Rule { kind, message } => (kind, message.clone(), None),
    };
    let mut item = json!({"type": kind, "loc": v.loc, "msg": msg});
    if let Some(input) = &v.input {
        item["input"] = input.clone();
    }
    if let Some(ctx) = ctx {
        item["ctx"] = ctx;
    }
    item
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, body, headers) = match self {
            ApiError::NotFound => (
                StatusCode::NOT_FOUND,
                json!({"detail": "Not found"}),
                vec![],
            ),
            ApiError::Missing(what) => (StatusCode::NOT_FOUND, json!({"detail": what}), vec![]),
            ApiError::Unauthenticated => (
                StatusCode::IM_A_TEAPOT,
                json!({"detail": "Not authenticated"}),
                vec![(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"))],
            ),
            ApiError::Forbidden(message) => {
                (StatusCode::FORBIDDEN, json!({"detail": message}), vec![])
            }
            ApiError::Refused(code) => (
                StatusCode::FORBIDDEN,
                json!({"error": code.as_str()}),
                vec![],
            ),
            ApiError::MethodNotAllowed => (
                StatusCode::METHOD_NOT_ALLOWED,
                json!({"detail": "Method Not Allowed"}),
                vec![],
            ),
            ApiError::Validation(violations) => {
                let items: Vec<Value> = violations.iter().map(render_violation).collect();
                (
                    StatusCode::UNPROCESSABLE_ENTITY,
                    json!({"detail": items}),
                    vec![],
                )
            }
            ApiError::Coded(coded) => {
                let mut detail = Map::new();
                detail.insert("code".into(), coded.code.as_str().into());
                detail.insert("message".into(), coded.message.into());
                detail.extend(coded.extra);
                (coded.status, json!({"detail": detail}), coded.headers)
            }
            ApiError::NotYetVisible(pending) => {
                tracing::warn!(key = ?pending.key, waited = ?pending.waited, "answered a committed write as not yet visible");
                let mut detail = json!({
                    "code": Code::CommittedNotYetVisible.as_str(),
                    "message": format!(
                        "the change was committed and is durable, but the read models did not show it within {} s; do not resend it: read the resource again",
                        pending.waited.as_secs()
                    ),
                    "committed": true,
                });
                if let Ok(id) = uuid::Uuid::parse_str(&pending.key.aggregate_id) {
                    detail["resource_id"] = json!(id);
                }
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    json!({"detail": detail}),
                    vec![(header::RETRY_AFTER, HeaderValue::from_static("1"))],
                )
            }
            ApiError::Internal(error) => {
                tracing::error!(error = format!("{error:#}"), "internal error");
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    json!({"detail": {"code": Code::InternalError.as_str(), "message": "internal error; see the service log for this request id"}}),
                    vec![],
                )
            }
        };
        let mut response = (status, axum::Json(body)).into_response();
        response.headers_mut().extend(headers);
        response
    }
}

/// Result type of handlers.
pub type ApiResult<T> = Result<T, ApiError>;
