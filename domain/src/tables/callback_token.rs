//! The CallbackToken aggregate (spec `custom-tables.md` "Callback token"): lets one
//! external system create, or create and update, records of one table without a
//! user session. Its writes act as the moderator who minted it. The log keeps only
//! the SHA-256 of the secret, never the secret.
//!
//! A run whose task version has a writeback output policy receives one too, bound
//! to the run (`run_id`), acting as the run's submitter.
//!
//! Revocation is a flag: a revoked token stays listed and writes answer the uniform
//! 404.

use crate::AggregateExt;
use crate::tables::token_lifecycle::{TokenError, TokenLifecycle};
use chrono::{DateTime, Utc};
use cqrs_es::event_sink::EventSink;
use cqrs_es::{Aggregate, DomainEvent};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Where callback writes are sent (`{CALLBACK_PREFIX}/{token_id}`): the public
/// route of the custom-table service, and the one place a run's network reaches.
pub const CALLBACK_PREFIX: &str = "/public/module/custom_tables/callback";

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
    /// The minting moderator (`user:<id>`), whose permissions its writes use; for
    /// a run's writeback credential, the run's submitter.
    pub created_by: String,
    /// The run a writeback credential was minted for (spec `sandbox-service.md`
    /// output policy `custom_table_writeback`): it lives while the run does, is
    /// revoked at the run's end and is never listed with the moderators' tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<Uuid>,
    /// A run's command-output credential (output policy `custom_table_command`):
    /// the Command and the version it may run. Such a credential works only on
    /// the command-output route, never for a raw callback write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<CommandGrant>,
}

/// The Command a run's command-output credential runs, at the version current
/// when the run started (a later version makes its calls `output_command_stale`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandGrant {
    /// The Command.
    pub command_id: Uuid,
    /// Its version when the credential was minted.
    pub version: i64,
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

/// A callback token's lifecycle.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CallbackToken(pub TokenLifecycle);

impl Aggregate for CallbackToken {
    const TYPE: &'static str = "callback_token";
    type Command = CallbackTokenCommand;
    type Event = CallbackTokenEvent;
    type Error = TokenError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _: &(),
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        let event = match command {
            CallbackTokenCommand::Mint(terms) => {
                self.0.may_mint()?;
                CallbackTokenEvent::CallbackTokenMinted(terms)
            }
            CallbackTokenCommand::Revoke { table_id } => match self.0.revocation(table_id)? {
                Some(token_id) => CallbackTokenEvent::CallbackTokenRevoked { token_id, table_id },
                None => return Ok(()),
            },
        };
        sink.write(event, self).await;
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        match event {
            CallbackTokenEvent::CallbackTokenMinted(terms) => {
                self.0.minted(terms.token_id, terms.table_id)
            }
            CallbackTokenEvent::CallbackTokenRevoked { .. } => self.0.revoked = true,
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
            run_id: None,
            command: None,
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
            .then_expect_error(TokenError::NotFound);
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
