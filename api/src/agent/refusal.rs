//! The agent tools' error shape `{status: error, error, message}` and the one
//! mapping from the service's errors to the agent error codes (spec section 7,
//! "Agent tool error codes"): a 401/403 refusal is `unauthorized`; a hidden
//! resource is `not_found`; a 400/409/422 refusal is `validation_error`; a queue
//! limit, the kill switch or a dependency is `provider_unavailable`; a write that
//! committed but is not visible yet is `retryable`; anything unexpected is
//! `internal_error` with a generic message (the cause goes to the log).

use crate::error::ApiError;
use axum::http::StatusCode;
use domain::error::Code;
use serde_json::{Value, json};

/// A tool's refusal.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolError {
    /// The agent error code.
    pub code: Code,
    /// What went wrong, for the agent.
    pub message: String,
}

/// A tool's answer: the `ok` object's fields, or a refusal.
pub type ToolResult = Result<Value, ToolError>;

impl ToolError {
    /// A refusal with its code.
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// The missing or invalid trusted context (principal, turn, room, job).
    pub fn unauthorized() -> Self {
        Self::new(
            Code::Unauthorized,
            "the sandbox tools need a trusted principal and a valid turn in a room with the sandbox job",
        )
    }

    /// Bad tool arguments.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(Code::ValidationError, message)
    }

    /// The error shape.
    pub fn to_value(&self) -> Value {
        json!({"status": "error", "error": self.code.as_str(), "message": self.message})
    }
}

/// The codes only the agent tools answer; a refusal carrying one keeps it.
const AGENT_CODES: [Code; 9] = [
    Code::ForgedReceipt,
    Code::ConfirmationRejected,
    Code::AlreadyCommitted,
    Code::ProposalNotPending,
    Code::SameTurn,
    Code::NotLater,
    Code::ReceiptReused,
    Code::Retryable,
    Code::ConfirmationInputUnavailable,
];

impl From<ApiError> for ToolError {
    fn from(error: ApiError) -> Self {
        match error {
            ApiError::NotFound | ApiError::Missing(_) => Self::new(Code::NotFound, "not found"),
            ApiError::Unauthenticated
            | ApiError::Forbidden(_)
            | ApiError::MethodNotAllowed
            | ApiError::Refused(_) => Self::new(Code::Unauthorized, "the request was refused"),
            ApiError::Validation(violations) => {
                let first = violations.first().map(|v| {
                    let item = crate::error::render_violation(v);
                    format!(
                        "{}: {}",
                        v.loc.join("."),
                        item["msg"].as_str().unwrap_or("")
                    )
                });
                Self::invalid(first.unwrap_or_else(|| "invalid arguments".into()))
            }
            ApiError::Coded(coded) if coded.code == Code::ConcurrentModification => {
                Self::new(Code::Retryable, "a concurrent change won; try again")
            }
            ApiError::Coded(coded) if AGENT_CODES.contains(&coded.code) => {
                Self::new(coded.code, coded.message)
            }
            ApiError::NotYetVisible(_) => Self::new(
                Code::Retryable,
                "the change committed but is not visible yet; try again",
            ),
            ApiError::Coded(coded) => {
                let message = format!("{}: {}", coded.code, coded.message);
                let code = match coded.status {
                    StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => Code::Unauthorized,
                    StatusCode::NOT_FOUND => Code::NotFound,
                    StatusCode::BAD_REQUEST
                    | StatusCode::CONFLICT
                    | StatusCode::UNPROCESSABLE_ENTITY
                    | StatusCode::PAYLOAD_TOO_LARGE => Code::ValidationError,
                    _ => Code::ProviderUnavailable,
                };
                Self::new(code, message)
            }
            ApiError::Internal(error) => {
                tracing::error!(error = format!("{error:#}"), "agent tool failed");
                Self::new(Code::InternalError, "internal error")
            }
        }
    }
}

impl From<sqlx::Error> for ToolError {
    fn from(error: sqlx::Error) -> Self {
        ApiError::from(error).into()
    }
}
