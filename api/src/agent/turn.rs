//! The turn context of an agent's tool call: header `X-Sandbox-Turn`, a compact
//! JWS (HS256) the chat platform signs with the operator's turn key, naming the
//! room, the message being answered (its id and its position in the room), the
//! principal the message came from and whether a human wrote it
//! ([docs/agent-tools.md]). `sandboxctl turn mint` makes one for a human turn.

use domain::principal::PrincipalType;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The header that carries the turn context.
pub const TURN_HEADER: &str = "x-sandbox-turn";

/// The audience of turn tokens (a user JWT signed with the same bytes is never a
/// turn, and a turn is never a login).
const AUDIENCE: &str = "sandbox-turn";

/// The claims of a turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnClaims {
    /// The room.
    pub chatroom_id: Uuid,
    /// The message answered.
    pub message_id: String,
    /// Its position in the room (strictly increasing).
    pub message_seq: i64,
    /// Who wrote the message.
    pub principal_type: PrincipalType,
    /// Its id.
    pub principal_id: Uuid,
    /// Whether a human wrote it (only a human turn confirms a proposal).
    pub human: bool,
    /// Issued at (seconds since the epoch).
    pub iat: i64,
    /// Expires at (seconds since the epoch).
    pub exp: i64,
}

#[derive(Serialize, Deserialize)]
struct Signed {
    aud: String,
    #[serde(flatten)]
    claims: TurnClaims,
}

/// Signs and verifies turns.
#[derive(Clone)]
pub struct TurnKeys {
    encoding: EncodingKey,
    decoding: DecodingKey,
}

impl TurnKeys {
    /// Keys from the turn secret.
    pub fn new(secret: &[u8]) -> Self {
        Self {
            encoding: EncodingKey::from_secret(secret),
            decoding: DecodingKey::from_secret(secret),
        }
    }

    /// A signed turn.
    pub fn mint(&self, claims: TurnClaims) -> anyhow::Result<String> {
        let signed = Signed {
            aud: AUDIENCE.into(),
            claims,
        };
        Ok(jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &signed,
            &self.encoding,
        )?)
    }

    /// The claims of a valid, unexpired turn.
    pub fn verify(&self, token: &str) -> Option<TurnClaims> {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.leeway = 0;
        validation.set_audience(&[AUDIENCE]);
        validation.set_required_spec_claims(&["exp", "aud"]);
        jsonwebtoken::decode::<Signed>(token, &self.decoding, &validation)
            .ok()
            .map(|data| data.claims.claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(exp_in: i64) -> TurnClaims {
        let now = chrono::Utc::now().timestamp();
        TurnClaims {
            chatroom_id: Uuid::from_u128(1),
            message_id: "m1".into(),
            message_seq: 7,
            principal_type: PrincipalType::User,
            principal_id: Uuid::from_u128(2),
            human: true,
            iat: now,
            exp: now + exp_in,
        }
    }

    #[test]
    fn a_turn_verifies_only_with_its_key_and_before_expiry() {
        let keys = TurnKeys::new(b"0123456789abcdef0123456789abcdef");
        let token = keys.mint(claims(600)).unwrap();
        assert_eq!(keys.verify(&token).unwrap().message_seq, 7);
        let other = TurnKeys::new(b"another key of sufficient length!!!!");
        assert!(other.verify(&token).is_none());
        assert!(keys.verify(&keys.mint(claims(-5)).unwrap()).is_none());
    }

    #[test]
    fn a_login_token_signed_with_the_same_bytes_is_no_turn() {
        let secret = b"0123456789abcdef0123456789abcdef";
        let login = crate::auth::jwt::JwtKeys::new(secret)
            .mint(Uuid::nil(), Uuid::nil(), chrono::Duration::hours(1))
            .unwrap();
        assert!(TurnKeys::new(secret).verify(&login).is_none());
    }
}
