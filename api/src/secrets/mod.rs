//! The secret store: encrypted secret values, outside the event log.
//!
//! Each value version is encrypted with AES-256-GCM under a fresh data key; the
//! data key is stored only wrapped by the key-encryption key ([`kek`]), and the
//! value version id is the associated data of both layers, so rows cannot be
//! swapped. The log records a version id and an HMAC of the value under the
//! deployment's pepper, never the value. Revoking deletes the rows: the wrapped data
//! keys go with them, so no later copy of the database, even with the KEK, opens the
//! value (crypto-shredding).

pub mod kek;
pub mod slots;

use crate::error::ApiError;
use aes_gcm::aead::{Aead, KeyInit, OsRng, Payload};
use aes_gcm::{AeadCore, Aes256Gcm, Nonce};
use anyhow::anyhow;
use domain::error::Code;
use hmac::{Hmac, Mac};
use kek::KeyEncryptionKey;
use rand::RngCore;
use sha2::Sha256;
use sqlx::PgPool;
use std::sync::Arc;
use uuid::Uuid;
use zeroize::Zeroizing;

/// The store, with whichever of its keys the deployment configured.
pub struct SecretStore {
    kek: Option<Arc<dyn KeyEncryptionKey>>,
    pepper: Option<Zeroizing<[u8; 32]>>,
}

/// One encrypted value version as stored.
#[derive(sqlx::FromRow)]
struct StoredValue {
    kek_id: String,
    wrapped_key: Vec<u8>,
    nonce: Vec<u8>,
    ciphertext: Vec<u8>,
}

/// A store ready to write: both keys present.
pub struct Writer<'a> {
    kek: &'a dyn KeyEncryptionKey,
    pepper: &'a [u8; 32],
}

impl SecretStore {
    /// A store over these keys (`None`: not configured).
    pub fn new(
        kek: Option<Arc<dyn KeyEncryptionKey>>,
        pepper: Option<Zeroizing<[u8; 32]>>,
    ) -> Self {
        Self { kek, pepper }
    }

    /// The writer, or the 503 of a store missing its key-encryption key
    /// (`sandbox_secretstore_unconfigured`) or its pepper
    /// (`sandbox_secret_pepper_missing`).
    pub fn writer(&self) -> Result<Writer<'_>, ApiError> {
        let kek = self.kek.as_deref().ok_or_else(|| {
            ApiError::code(
                Code::SandboxSecretstoreUnconfigured,
                "the secret store is not configured on this deployment",
            )
        })?;
        let pepper = self.pepper.as_deref().ok_or_else(|| {
            ApiError::code(
                Code::SandboxSecretPepperMissing,
                "the secret store has no pepper configured",
            )
        })?;
        Ok(Writer { kek, pepper })
    }

    /// Decrypts a value version of the binding `binding_aggregate_id`; `None` once
    /// it was shredded (or never stored), or when it is another binding's (a run's
    /// pin naming another slot's or consumer's value receives nothing).
    pub async fn open(
        &self,
        pool: &PgPool,
        binding_aggregate_id: Uuid,
        value_version_id: Uuid,
    ) -> anyhow::Result<Option<Zeroizing<Vec<u8>>>> {
        let kek = self
            .kek
            .as_deref()
            .ok_or_else(|| anyhow!("the secret store is not configured"))?;
        let row: Option<StoredValue> = sqlx::query_as(
            "SELECT kek_id, wrapped_key, nonce, ciphertext FROM secret_values
              WHERE value_version_id = $1 AND binding_aggregate_id = $2",
        )
        .bind(value_version_id)
        .bind(binding_aggregate_id)
        .fetch_optional(pool)
        .await?;
        let Some(StoredValue {
            kek_id,
            wrapped_key: wrapped,
            nonce,
            ciphertext,
        }) = row
        else {
            return Ok(None);
        };
        anyhow::ensure!(
            kek_id == kek.id(),
            "value {value_version_id} is wrapped by {kek_id}, not {}",
            kek.id()
        );
        let context = value_version_id.as_bytes();
        let data_key = kek.unwrap(&wrapped, context)?;
        let value = Aes256Gcm::new(data_key.as_ref().into())
            .decrypt(
                Nonce::from_slice(&nonce),
                Payload {
                    msg: &ciphertext,
                    aad: context,
                },
            )
            .map_err(|_| anyhow!("value {value_version_id} does not decrypt"))?;
        Ok(Some(Zeroizing::new(value)))
    }

    /// Destroys value versions: their rows, and with them their wrapped data keys.
    pub async fn shred(pool: &PgPool, value_version_ids: &[Uuid]) -> sqlx::Result<u64> {
        let done = sqlx::query("DELETE FROM secret_values WHERE value_version_id = ANY($1)")
            .bind(value_version_ids)
            .execute(pool)
            .await?;
        Ok(done.rows_affected())
    }
}

impl Writer<'_> {
    /// HMAC-SHA256 of the value under the pepper, keyed per binding aggregate (hex):
    /// equal values of two bindings do not look equal.
    pub fn digest(&self, binding_aggregate_id: Uuid, value: &[u8]) -> String {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(self.pepper).expect("any key length");
        mac.update(binding_aggregate_id.as_bytes());
        mac.update(value);
        hex::encode(mac.finalize().into_bytes())
    }

    /// Encrypts and stores a new value version; returns its id.
    pub async fn put(
        &self,
        pool: &PgPool,
        binding_aggregate_id: Uuid,
        value: &[u8],
    ) -> anyhow::Result<Uuid> {
        let value_version_id = Uuid::new_v4();
        let context = value_version_id.as_bytes();
        let mut data_key = Zeroizing::new([0u8; 32]);
        rand::rngs::OsRng.fill_bytes(data_key.as_mut());
        let nonce = Aes256Gcm::generate_nonce(&mut OsRng);
        let ciphertext = Aes256Gcm::new(data_key.as_ref().into())
            .encrypt(
                &nonce,
                Payload {
                    msg: value,
                    aad: context,
                },
            )
            .map_err(|_| anyhow!("cannot encrypt a secret value"))?;
        let wrapped = self.kek.wrap(&data_key, context)?;
        sqlx::query(
            "INSERT INTO secret_values (value_version_id, binding_aggregate_id, kek_id,
                    wrapped_key, nonce, ciphertext)
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(value_version_id)
        .bind(binding_aggregate_id)
        .bind(self.kek.id())
        .bind(wrapped)
        .bind(nonce.as_slice())
        .bind(ciphertext)
        .execute(pool)
        .await?;
        Ok(value_version_id)
    }
}
