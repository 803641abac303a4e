//! The `public_tokens` projection: the tokens strangers present on the public
//! surface of every table (public read tokens and callback tokens), revoked ones
//! included (revocation is a flag; they stay listed).

pub mod callback;
pub mod query;

use crate::log::StoredEvent;
use crate::projection::Projection;
use async_trait::async_trait;
use domain::tables::callback_token::{CallbackToken, CallbackTokenEvent};
use domain::tables::public_token::{PublicReadToken, PublicTokenEvent};
use sha2::{Digest, Sha256};
use sqlx::PgConnection;
use uuid::Uuid;

/// Projects [`PublicReadToken`] and [`CallbackToken`].
pub struct PublicTokensProjection;

/// The lookup key of a token id (SHA-256 of its bytes).
pub fn lookup_hash(token_id: Uuid) -> Vec<u8> {
    Sha256::digest(token_id.as_bytes()).to_vec()
}

#[async_trait]
impl Projection for PublicTokensProjection {
    fn name(&self) -> &'static str {
        "public_tokens"
    }

    fn tables(&self) -> &'static [&'static str] {
        &["public_read_tokens", "callback_tokens"]
    }

    fn aggregate_types(&self) -> &'static [&'static str] {
        &["public_read_token", "callback_token"]
    }

    async fn apply(&self, conn: &mut PgConnection, events: &[StoredEvent]) -> anyhow::Result<()> {
        for event in events {
            if let Some(decoded) = event.decode::<CallbackToken>()? {
                apply_callback(conn, event, decoded).await?;
                continue;
            }
            let Some(decoded) = event.decode::<PublicReadToken>()? else {
                continue;
            };
            match decoded {
                PublicTokenEvent::PublicReadTokenMinted(terms) => {
                    sqlx::query(
                        "INSERT INTO public_read_tokens (id, lookup_hash, company_id, table_id,
                                view_id, name, visible_columns, read_filter, allow_query, rpm,
                                secretless, secret_sha256, valid_until, created_by, created_at)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
                         ON CONFLICT (id) DO NOTHING",
                    )
                    .bind(terms.token_id)
                    .bind(lookup_hash(terms.token_id))
                    .bind(terms.company_id)
                    .bind(terms.table_id)
                    .bind(terms.view_id)
                    .bind(&terms.name)
                    .bind(&terms.visible_columns)
                    .bind(&terms.read_filter)
                    .bind(terms.allow_query)
                    .bind(terms.rpm)
                    .bind(terms.secretless)
                    .bind(&terms.secret_sha256)
                    .bind(terms.valid_until)
                    .bind(&terms.created_by)
                    .bind(event.time())
                    .execute(&mut *conn)
                    .await?;
                }
                PublicTokenEvent::PublicReadTokenRevoked { token_id, .. } => {
                    sqlx::query("UPDATE public_read_tokens SET revoked = true WHERE id = $1")
                        .bind(token_id)
                        .execute(&mut *conn)
                        .await?;
                }
            }
        }
        Ok(())
    }
}

async fn apply_callback(
    conn: &mut PgConnection,
    event: &StoredEvent,
    decoded: CallbackTokenEvent,
) -> anyhow::Result<()> {
    match decoded {
        CallbackTokenEvent::CallbackTokenMinted(terms) => {
            sqlx::query(
                "INSERT INTO callback_tokens (id, lookup_hash, company_id, table_id, name,
                        allowed_ops, secret_sha256, valid_until, created_by, created_at, run_id,
                        command_id, command_version)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
                 ON CONFLICT (id) DO NOTHING",
            )
            .bind(terms.token_id)
            .bind(lookup_hash(terms.token_id))
            .bind(terms.company_id)
            .bind(terms.table_id)
            .bind(&terms.name)
            .bind(terms.allowed_ops.as_str())
            .bind(&terms.secret_sha256)
            .bind(terms.valid_until)
            .bind(&terms.created_by)
            .bind(event.time())
            .bind(terms.run_id)
            .bind(terms.command.map(|c| c.command_id))
            .bind(terms.command.map(|c| c.version))
            .execute(&mut *conn)
            .await?;
        }
        CallbackTokenEvent::CallbackTokenRevoked { token_id, .. } => {
            sqlx::query("UPDATE callback_tokens SET revoked = true WHERE id = $1")
                .bind(token_id)
                .execute(&mut *conn)
                .await?;
        }
    }
    Ok(())
}
