//! The CallbackToken aggregate (spec `custom-tables.md` "Callback token"): lets one
//! external system create, or create and update, records of one table without a
//! user session. Its writes act as the moderator who minted it. The log keeps only
//! the SHA-256 of the secret, never the secret.
//!
//! Revocation is a flag: a revoked token stays listed and writes answer the uniform
//! 404.

use crate::AggregateExt;
use crate::error::{Code, SpecError};
use chrono::{DateTime, Utc};
use cqrs_es::event_sink::EventSink;
use cqrs_es::{Aggregate, DomainEvent};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// What a token may do (spec: `create` or `create,update`; no update-only token).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AllowedOps {
    /// Creations only.
    #[serde(rename = "create")]
    Create,
    /// Creations and updates.
    #[serde(rename = "create,update")]
    CreateUpdate,
}

impl AllowedOps {
    /// The wire form.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::CreateUpdate => "create,update",
        }
    }

    /// Whether updates are allowed.
    pub fn updates(self) -> bool {
        self == Self::CreateUpdate
    }
}

/// A callback token as minted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallbackTokenTerms {
    /// The token id (128 random bits).
    pub token_id: Uuid,
    /// The company.
    pub company_id: Uuid,
    /// The table it writes.
    pub table_id: Uuid,
    /// Label.
    pub name: String,
    /// What it may do.
    pub allowed_ops: AllowedOps,
    /// SHA-256 of the secret, 64 hex digits (its raw 32 bytes key the signatures).
    pub secret_sha256: String,
    /// Expiry (`None`: none).
    pub valid_until: Option<DateTime<Utc>>,
    /// The minting moderator (`user:<id>`), whose permissions its writes use.
    pub created_by: String,
}

/// Commands of [`CallbackToken`].
#[derive(Debug, Clone, PartialEq)]
pub enum CallbackTokenCommand {
    /// Mints the token (its id is new, checked by the route).
    Mint(Box<CallbackTokenTerms>),
    /// Revokes it; revoking a revoked token changes nothing.
    Revoke {
        /// The table the caller named (the token must belong to it).
        table_id: Uuid,
    },
}

/// Events of [`CallbackToken`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum CallbackTokenEvent {
    /// A token was minted.
    CallbackTokenMinted(Box<CallbackTokenTerms>),
    /// A token was revoked.
    CallbackTokenRevoked {
        /// The token.
        token_id: Uuid,
        /// Its table.
        table_id: Uuid,
    },
}

impl DomainEvent for CallbackTokenEvent {
    fn event_type(&self) -> String {
        match self {
            Self::CallbackTokenMinted(_) => "CallbackTokenMinted",
            Self::CallbackTokenRevoked { .. } => "CallbackTokenRevoked",
        }
        .into()
    }
    fn event_version(&self) -> String {
        "1".into()
    }
}

/// Refusals of callback token commands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallbackTokenError {
    /// No such token under the named table.
    #[error("Token not found")]
    NotFound,
    /// The id is taken.
    #[error("the token exists already")]
    Exists,
}

impl SpecError for CallbackTokenError {
    fn code(&self) -> Code {
        match self {
            Self::NotFound => Code::NotFound,
            Self::Exists => Code::AlreadyExists,
        }
    }
}

/// A callback token's lifecycle.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CallbackToken {
    /// The token id, once minted.
    pub token_id: Option<Uuid>,
    /// The table, once minted.
    pub table_id: Option<Uuid>,
    /// Whether it is revoked.
    pub revoked: bool,
}

impl Aggregate for CallbackToken {
    const TYPE: &'static str = "callback_token";
    type Command = CallbackTokenCommand;
    type Event = CallbackTokenEvent;
    type Error = CallbackTokenError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _: &(),
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        let event = match command {
            CallbackTokenCommand::Mint(terms) => {
                if self.table_id.is_some() {
                    return Err(CallbackTokenError::Exists);
                }
                CallbackTokenEvent::CallbackTokenMinted(terms)
            }
            CallbackTokenCommand::Revoke { table_id } => {
                if self.table_id != Some(table_id) {
                    return Err(CallbackTokenError::NotFound);
                }
                if self.revoked {
                    return Ok(());
                }
                CallbackTokenEvent::CallbackTokenRevoked {
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
            CallbackTokenEvent::CallbackTokenMinted(terms) => {
                self.token_id = Some(terms.token_id);
                self.table_id = Some(terms.table_id);
            }
            CallbackTokenEvent::CallbackTokenRevoked { .. } => self.revoked = true,
        }
    }
}

impl AggregateExt for CallbackToken {}

#[cfg(test)]
mod tests {
    use super::*;
    use cqrs_es::test::TestFramework;

    fn minted() -> CallbackTokenEvent {
        CallbackTokenEvent::CallbackTokenMinted(Box::new(CallbackTokenTerms {
            token_id: Uuid::from_u128(1),
            company_id: Uuid::from_u128(2),
            table_id: Uuid::from_u128(3),
            name: "crm".into(),
            allowed_ops: AllowedOps::Create,
            secret_sha256: "ab".repeat(32),
            valid_until: None,
            created_by: "user:1".into(),
        }))
    }

    #[test]
    fn only_the_tokens_table_revokes_it_once() {
        let revoke = |table| CallbackTokenCommand::Revoke {
            table_id: Uuid::from_u128(table),
        };
        let revoked = CallbackTokenEvent::CallbackTokenRevoked {
            token_id: Uuid::from_u128(1),
            table_id: Uuid::from_u128(3),
        };
        TestFramework::<CallbackToken>::with(())
            .given(vec![minted()])
            .when(revoke(9))
            .then_expect_error(CallbackTokenError::NotFound);
        TestFramework::<CallbackToken>::with(())
            .given(vec![minted()])
            .when(revoke(3))
            .then_expect_events(vec![revoked.clone()]);
        TestFramework::<CallbackToken>::with(())
            .given(vec![minted(), revoked])
            .when(revoke(3))
            .then_expect_events(vec![]);
    }

    #[test]
    fn allowed_ops_have_the_spec_wire_forms() {
        assert_eq!(
            serde_json::to_value(AllowedOps::CreateUpdate).unwrap(),
            "create,update"
        );
        assert!(serde_json::from_value::<AllowedOps>("update".into()).is_err());
    }
}
