//! User JWTs: HS256 tokens naming the user and the company; and operator tokens,
//! signed with the same secret but for another audience (`sandbox-root`), which
//! name no user and open only the `/root` routes.

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The claims of a user token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// The user id.
    pub sub: Uuid,
    /// The user's company.
    pub company_id: Uuid,
    /// Issued at (seconds since the epoch).
    pub iat: i64,
    /// Expires at (seconds since the epoch).
    pub exp: i64,
}

/// The audience of operator tokens.
const OPERATOR_AUDIENCE: &str = "sandbox-root";

/// The claims of an operator token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct OperatorClaims {
    /// Always [`OPERATOR_AUDIENCE`].
    aud: String,
    /// Issued at (seconds since the epoch).
    iat: i64,
    /// Expires at (seconds since the epoch).
    exp: i64,
}

/// Signing and verification keys.
#[derive(Clone)]
pub struct JwtKeys {
    encoding: EncodingKey,
    decoding: DecodingKey,
}

impl JwtKeys {
    /// Keys from the shared secret.
    pub fn new(secret: &[u8]) -> Self {
        Self {
            encoding: EncodingKey::from_secret(secret),
            decoding: DecodingKey::from_secret(secret),
        }
    }

    /// A token for the user, valid for `ttl`.
    pub fn mint(
        &self,
        user_id: Uuid,
        company_id: Uuid,
        ttl: chrono::Duration,
    ) -> anyhow::Result<String> {
        let now = chrono::Utc::now().timestamp();
        let claims = Claims {
            sub: user_id,
            company_id,
            iat: now,
            exp: now + ttl.num_seconds(),
        };
        self.sign(&claims)
    }

    /// An operator token, valid for `ttl` (`sandboxctl token mint --root`).
    pub fn mint_operator(&self, ttl: chrono::Duration) -> anyhow::Result<String> {
        let now = chrono::Utc::now().timestamp();
        let claims = OperatorClaims {
            aud: OPERATOR_AUDIENCE.into(),
            iat: now,
            exp: now + ttl.num_seconds(),
        };
        self.sign(&claims)
    }

    /// Whether `token` is a valid, unexpired operator token.
    pub fn verify_operator(&self, token: &str) -> bool {
        let mut validation = strict(&["exp", "aud"]);
        validation.set_audience(&[OPERATOR_AUDIENCE]);
        jsonwebtoken::decode::<OperatorClaims>(token, &self.decoding, &validation).is_ok()
    }

    /// The claims of a valid, unexpired user token.
    pub fn verify(&self, token: &str) -> Option<Claims> {
        jsonwebtoken::decode::<Claims>(token, &self.decoding, &strict(&["exp", "sub"]))
            .ok()
            .map(|data| data.claims)
    }

    /// Signs claims of either kind: user and operator tokens are both HS256 with
    /// the one shared secret (only their audience tells them apart).
    fn sign(&self, claims: &impl Serialize) -> anyhow::Result<String> {
        Ok(jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            claims,
            &self.encoding,
        )?)
    }
}

/// The checks both kinds of token pass: HS256, no leeway on expiry, and these
/// claims present.
fn strict(required: &[&str]) -> Validation {
    let mut validation = Validation::new(Algorithm::HS256);
    validation.leeway = 0;
    validation.set_required_spec_claims(required);
    validation
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_verify_only_with_the_same_secret_and_before_expiry() {
        let keys = JwtKeys::new(b"0123456789abcdef0123456789abcdef");
        let (user, company) = (Uuid::new_v4(), Uuid::new_v4());
        let token = keys
            .mint(user, company, chrono::Duration::hours(1))
            .unwrap();
        let claims = keys.verify(&token).unwrap();
        assert_eq!((claims.sub, claims.company_id), (user, company));
        assert!(
            JwtKeys::new(b"another secret of sufficient length!!")
                .verify(&token)
                .is_none()
        );
        let expired = keys
            .mint(user, company, chrono::Duration::seconds(-10))
            .unwrap();
        assert!(keys.verify(&expired).is_none());
    }

    #[test]
    fn operator_and_user_tokens_are_not_interchangeable() {
        let keys = JwtKeys::new(b"0123456789abcdef0123456789abcdef");
        let operator = keys.mint_operator(chrono::Duration::hours(1)).unwrap();
        assert!(keys.verify_operator(&operator));
        assert!(keys.verify(&operator).is_none());
        let user = keys
            .mint(Uuid::new_v4(), Uuid::new_v4(), chrono::Duration::hours(1))
            .unwrap();
        assert!(!keys.verify_operator(&user));
        let expired = keys.mint_operator(chrono::Duration::seconds(-10)).unwrap();
        assert!(!keys.verify_operator(&expired));
        let other = JwtKeys::new(b"another secret of sufficient length!!");
        assert!(!other.verify_operator(&operator));
    }
}
