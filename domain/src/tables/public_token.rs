//! The PublicReadToken aggregate (spec `custom-tables.md` "Public read token"): one
//! stored view of a table published as an anonymous read endpoint, narrowed by a
//! column allowlist and a row policy. Its id is the token id, which is the
//! capability of a secretless token; a token with a secret records only the
//! secret's SHA-256, never the secret.
//!
//! Revocation is a flag: a revoked token stays listed and reads the uniform 404.

use crate::AggregateExt;
use crate::tables::token_lifecycle::{TokenError, TokenLifecycle};
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

/// A public read token's lifecycle.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PublicReadToken(pub TokenLifecycle);

impl Aggregate for PublicReadToken {
    const TYPE: &'static str = "public_read_token";
    type Command = PublicTokenCommand;
    type Event = PublicTokenEvent;
    type Error = TokenError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _: &(),
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        let event = match command {
            PublicTokenCommand::Mint(terms) => {
                self.0.may_mint()?;
                PublicTokenEvent::PublicReadTokenMinted(terms)
            }
            PublicTokenCommand::Revoke { table_id } => match self.0.revocation(table_id)? {
                Some(token_id) => PublicTokenEvent::PublicReadTokenRevoked { token_id, table_id },
                None => return Ok(()),
            },
        };
        sink.write(event, self).await;
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        match event {
            PublicTokenEvent::PublicReadTokenMinted(terms) => {
                self.0.minted(terms.token_id, terms.table_id)
            }
            PublicTokenEvent::PublicReadTokenRevoked { .. } => self.0.revoked = true,
        }
    }
}

impl AggregateExt for PublicReadToken {}

#[cfg(test)]
mod tests {
    use super::*;
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
            .then_expect_error(TokenError::NotFound);
        TestFramework::<PublicReadToken>::with(())
            .given(vec![minted()])
            .when(revoke(3))
            .then_expect_events(vec![revoked.clone()]);
        TestFramework::<PublicReadToken>::with(())
            .given(vec![minted(), revoked])
            .when(revoke(3))
            .then_expect_events(vec![]);
    }
}
