//! What both kinds of table token (public read tokens, callback tokens) share:
//! minted once for one table, revoked once through that table, and revocation is a
//! flag (a revoked token stays listed and answers the uniform 404).

use crate::error::{Code, SpecError};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The state of a table token's aggregate.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TokenLifecycle {
    /// The token id, once minted.
    pub token_id: Option<Uuid>,
    /// The table, once minted.
    pub table_id: Option<Uuid>,
    /// Whether it is revoked.
    pub revoked: bool,
}

/// Refusals of token commands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// No such token under the named table.
    #[error("Token not found")]
    NotFound,
    /// The id is taken.
    #[error("the token exists already")]
    Exists,
}

impl SpecError for TokenError {
    fn code(&self) -> Code {
        match self {
            Self::NotFound => Code::NotFound,
            Self::Exists => Code::AlreadyExists,
        }
    }
}

impl TokenLifecycle {
    /// Refuses to mint a token id twice.
    pub fn may_mint(&self) -> Result<(), TokenError> {
        match self.table_id {
            Some(_) => Err(TokenError::Exists),
            None => Ok(()),
        }
    }

    /// The token a revocation through `table_id` revokes; `None` when it is revoked
    /// already (revoking twice changes nothing).
    pub fn revocation(&self, table_id: Uuid) -> Result<Option<Uuid>, TokenError> {
        if self.table_id != Some(table_id) {
            return Err(TokenError::NotFound);
        }
        Ok((!self.revoked).then(|| self.token_id.unwrap_or_default()))
    }

    /// Records the mint.
    pub fn minted(&mut self, token_id: Uuid, table_id: Uuid) {
        self.token_id = Some(token_id);
        self.table_id = Some(table_id);
    }
}

/// Whether a token may still be used at `now` (not revoked, not expired).
pub fn readable(revoked: bool, valid_until: Option<DateTime<Utc>>, now: DateTime<Utc>) -> bool {
    !revoked && valid_until.is_none_or(|until| now < until)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    #[test]
    fn a_token_is_minted_once_and_revoked_once_through_its_table() {
        let mut token = TokenLifecycle::default();
        assert_eq!(token.may_mint(), Ok(()));
        assert_eq!(
            token.revocation(Uuid::from_u128(3)),
            Err(TokenError::NotFound)
        );
        token.minted(Uuid::from_u128(1), Uuid::from_u128(3));
        assert_eq!(token.may_mint(), Err(TokenError::Exists));
        assert_eq!(
            token.revocation(Uuid::from_u128(9)),
            Err(TokenError::NotFound)
        );
        assert_eq!(
            token.revocation(Uuid::from_u128(3)),
            Ok(Some(Uuid::from_u128(1)))
        );
        token.revoked = true;
        assert_eq!(token.revocation(Uuid::from_u128(3)), Ok(None));
    }

    #[test]
    fn revoked_or_expired_tokens_are_not_readable() {
        let now = Utc::now();
        assert!(readable(false, None, now));
        assert!(readable(false, Some(now + Duration::seconds(1)), now));
        assert!(!readable(false, Some(now), now));
        assert!(!readable(true, None, now));
    }
}
