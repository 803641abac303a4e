//! The `public_tokens` projection: the public read tokens of every table, revoked
//! ones included (revocation is a flag; they stay listed).

pub mod query;

use crate::log::StoredEvent;
use crate::projection::Projection;
use async_trait::async_trait;
use domain::tables::public_token::{PublicReadToken, PublicTokenEvent};
use sha2::{Digest, Sha256};
use sqlx::PgConnection;
use uuid::Uuid;

/// Projects [`PublicReadToken`].
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
        &["public_read_tokens"]
    }

    fn aggregate_types(&self) -> &'static [&'static str] {
        &["public_read_token"]
    }

    async fn apply(&self, conn: &mut PgConnection, events: &[StoredEvent]) -> anyhow::Result<()> {
        for event in events {
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
