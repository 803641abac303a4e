//! `Idempotency-Key` handling shared by submission, retry, Quick Run and secret
//! writes.
//!
//! The key is validated here (1..128 characters after trimming, no NUL). The
//! guarantee itself lives in the aggregates: the target aggregate's id is derived
//! from (company, route, principal, key), so a repeated request reaches the same
//! aggregate, which replays its original result when the request hash matches and
//! answers `409 idempotency_conflict` when it differs. Two concurrent first requests
//! meet at the event store's optimistic lock.

use crate::error::ApiError;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use domain::error::Code;
use domain::principal::Principal;
use domain::validation::ViolationKind;
use serde::Serialize;
use sha2::{Digest, Sha256};
use uuid::Uuid;

/// Longest key, in characters, after trimming.
pub const MAX_KEY_CHARS: usize = 128;

/// A validated `Idempotency-Key` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey(pub String);

impl IdempotencyKey {
    /// Validates a raw header value.
    pub fn parse(raw: Option<&str>) -> Result<Self, ApiError> {
        let Some(raw) = raw else {
            return Err(ApiError::code(
                Code::IdempotencyKeyRequired,
                "this route needs an Idempotency-Key header",
            ));
        };
        let key = raw.trim();
        let loc = ["header", "idempotency-key"];
        if key.is_empty() {
            return Err(ApiError::invalid(&loc, ViolationKind::TooShort(1), None));
        }
        if key.chars().count() > MAX_KEY_CHARS {
            return Err(ApiError::invalid(
                &loc,
                ViolationKind::TooLong(MAX_KEY_CHARS),
                None,
            ));
        }
        if key.contains('\0') {
            let kind = ViolationKind::Rule {
                kind: "value_error",
                message: "Idempotency-Key must not contain NUL".into(),
            };
            return Err(ApiError::invalid(&loc, kind, None));
        }
        Ok(Self(key.to_string()))
    }

    /// The id of the aggregate this key targets on `route` for `principal`; each
    /// API key is a principal of its own here, so one key never replays another's
    /// (or its owner's) result.
    pub fn target(&self, principal: &Principal, route: &str) -> Uuid {
        let who = match principal.api_key_id {
            Some(key) => format!("{}/api_key:{key}", principal.reference()),
            None => principal.reference(),
        };
        domain::ids::idempotent_target(principal.company_id, route, &who, &self.0)
    }
}

impl<S: Send + Sync> FromRequestParts<S> for IdempotencyKey {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let header = parts.headers.get("idempotency-key");
        let text = match header {
            None => None,
            Some(value) => Some(value.to_str().map_err(|_| {
                ApiError::invalid(
                    &["header", "idempotency-key"],
                    ViolationKind::Rule {
                        kind: "value_error",
                        message: "Idempotency-Key must be visible ASCII".into(),
                    },
                    None,
                )
            })?),
        };
        Self::parse(text)
    }
}

/// `sha256:` digest of a request's canonical (RFC 8785) JSON, compared when a key is
/// reused.
pub fn request_hash(request: &impl Serialize) -> String {
    let canonical = serde_json_canonicalizer::to_vec(request).expect("requests serialize");
    format!("sha256:{}", hex::encode(Sha256::digest(canonical)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_are_trimmed_and_bounded() {
        assert_eq!(
            IdempotencyKey::parse(Some("  k1 ")).unwrap(),
            IdempotencyKey("k1".into())
        );
        assert!(IdempotencyKey::parse(Some("   ")).is_err());
        assert!(IdempotencyKey::parse(Some(&"x".repeat(128))).is_ok());
        assert!(IdempotencyKey::parse(Some(&"x".repeat(129))).is_err());
        assert!(IdempotencyKey::parse(Some("a\0b")).is_err());
        match IdempotencyKey::parse(None) {
            Err(ApiError::Coded(c)) => assert_eq!(c.code, Code::IdempotencyKeyRequired),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn request_hash_ignores_key_order() {
        let a: serde_json::Value = serde_json::from_str(r#"{"b":1,"a":[1,2]}"#).unwrap();
        assert_eq!(
            request_hash(&a),
            request_hash(&json!({"a": [1, 2], "b": 1}))
        );
        assert_ne!(
            request_hash(&a),
            request_hash(&json!({"a": [2, 1], "b": 1}))
        );
    }
}
