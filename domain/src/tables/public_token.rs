//! The PublicReadToken aggregate (spec `custom-tables.md` "Public read token"): one
//! stored view of a table published as an anonymous read endpoint, narrowed by a
//! column allowlist and a row policy. Its id is the token id, which is the
//! capability of a secretless token; a token with a secret records only the
//! secret's SHA-256, never the secret.
//!
//! Revocation is a flag: a revoked token stays listed and reads the uniform 404.

use crate::AggregateExt;
use crate::error::{Code, SpecError};
use chrono::{DateTime, Utc};
use cqrs_es::event_sink::EventSink;
use cqrs_es::{Aggregate, DomainEvent};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

/// What a token publishes, as minted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PublicTokenTerms {
    /// The token id (128 random bits).
    pub token_id: Uuid,
    /// The company.
    pub company_id: Uuid,
    /// The table.
    pub table_id: Uuid,
    /// The published view.
    pub view_id: Uuid,
    /// Label.
    pub name: Option<String>,
    /// Column allowlist on top of the view's projection (internal keys).
    pub visible_columns: Option<Vec<String>>,
    /// Row policy ANDed onto the view's filter.
    pub read_filter: Option<Value>,
    /// Whether `POST .../query` answers.
    pub allow_query: bool,
    /// Requests per minute.
    pub rpm: i64,
    /// Whether the token id alone is the capability.
    pub secretless: bool,
    /// SHA-256 of the Bearer secret, 64 hex digits (`None` when secretless).
    pub secret_sha256: Option<String>,
    /// Expiry (`None`: none).
    pub valid_until: Option<DateTime<Utc>>,
    /// Who minted it (`user:<id>`).
    pub created_by: String,
}

/// Commands of [`PublicReadToken`].
#[derive(Debug, Clone, PartialEq)]
pub enum PublicTokenCommand {
    /// Mints the token (its id is new, checked by the route).
    Mint(Box<PublicTokenTerms>),
    /// Revokes it; revoking a revoked token changes nothing.
    Revoke {
        /// The table the caller named (the token must belong to it).
        table_id: Uuid,
    },
}

/// Events of [`PublicReadToken`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum PublicTokenEvent {
    /// A token was minted.
    PublicReadTokenMinted(Box<PublicTokenTerms>),
    /// A token was revoked.
    PublicReadTokenRevoked {
        /// The token.
        token_id: Uuid,
        /// Its table.
        table_id: Uuid,
    },
}

impl DomainEvent for PublicTokenEvent {
    fn event_type(&self) -> String {
        match self {
            Self::PublicReadTokenMinted(_) => "PublicReadTokenMinted",
            Self::PublicReadTokenRevoked { .. } => "PublicReadTokenRevoked",
        }
        .into()
    }
    fn event_version(&self) -> String {
        "1".into()
    }
}

/// Refusals of token commands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PublicTokenError {
    /// No such token under the named table.
    #[error("Token not found")]
    NotFound,
    /// The id is taken.
    #[error("the token exists already")]
    Exists,
}

impl SpecError for PublicTokenError {
    fn code(&self) -> Code {
        match self {
            Self::NotFound => Code::NotFound,
            Self::Exists => Code::AlreadyExists,
        }
    }
}

/// A public read token's lifecycle.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PublicReadToken {
    /// The token id, once minted.
    pub token_id: Option<Uuid>,
    /// The table, once minted.
    pub table_id: Option<Uuid>,
    /// Whether it is revoked.
    pub revoked: bool,
}

impl Aggregate for PublicReadToken {
    const TYPE: &'static str = "public_read_token";
    type Command = PublicTokenCommand;
    type Event = PublicTokenEvent;
    type Error = PublicTokenError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _: &(),
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        let event = match command {
            PublicTokenCommand::Mint(terms) => {
                if self.table_id.is_some() {
                    return Err(PublicTokenError::Exists);
                }
                PublicTokenEvent::PublicReadTokenMinted(terms)
            }
            PublicTokenCommand::Revoke { table_id } => {
                if self.table_id != Some(table_id) {
                    return Err(PublicTokenError::NotFound);
                }
                if self.revoked {
                    return Ok(());
                }
                PublicTokenEvent::PublicReadTokenRevoked {
                    token_id: self.token_id.unwrap_or_default(),
                    table_id,
                }
            }
        };
        sink.write(event, self).await;
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        match event {
            PublicTokenEvent::PublicReadTokenMinted(terms) => {
                self.token_id = Some(terms.token_id);
                self.table_id = Some(terms.table_id);
            }
            PublicTokenEvent::PublicReadTokenRevoked { .. } => self.revoked = true,
        }
    }
}

impl AggregateExt for PublicReadToken {}

/// Whether a token may still be read at `now` (not revoked, not expired).
pub fn readable(revoked: bool, valid_until: Option<DateTime<Utc>>, now: DateTime<Utc>) -> bool {
    !revoked && valid_until.is_none_or(|until| now < until)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;
    use cqrs_es::test::TestFramework;

    fn minted() -> PublicTokenEvent {
        PublicTokenEvent::PublicReadTokenMinted(Box::new(PublicTokenTerms {
            token_id: Uuid::from_u128(1),
            company_id: Uuid::from_u128(2),
            table_id: Uuid::from_u128(3),
            view_id: Uuid::from_u128(4),
            name: None,
            visible_columns: None,
            read_filter: None,
            allow_query: false,
            rpm: 60,
            secretless: true,
            secret_sha256: None,
            valid_until: None,
            created_by: "user:1".into(),
        }))
    }

    #[test]
    fn only_the_tokens_table_revokes_it_once() {
        let revoke = |table| PublicTokenCommand::Revoke {
            table_id: Uuid::from_u128(table),
        };
        let revoked = PublicTokenEvent::PublicReadTokenRevoked {
            token_id: Uuid::from_u128(1),
            table_id: Uuid::from_u128(3),
        };
        TestFramework::<PublicReadToken>::with(())
            .given(vec![minted()])
            .when(revoke(9))
            .then_expect_error(PublicTokenError::NotFound);
        TestFramework::<PublicReadToken>::with(())
            .given(vec![minted()])
            .when(revoke(3))
            .then_expect_events(vec![revoked.clone()]);
        TestFramework::<PublicReadToken>::with(())
            .given(vec![minted(), revoked])
            .when(revoke(3))
            .then_expect_events(vec![]);
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
