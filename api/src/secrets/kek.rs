//! Key-encryption keys: what wraps each secret value's data key. The data
//! directory's key is the default; a KMS client implements the same trait when the
//! service runs at scale, so no data key is ever stored unwrapped.

use aes_gcm::aead::{Aead, KeyInit, OsRng, Payload};
use aes_gcm::{AeadCore, Aes256Gcm, Nonce};
use anyhow::{Context, anyhow};
use sha2::{Digest, Sha256};
use std::path::Path;
use zeroize::Zeroizing;

/// Wraps and unwraps 32-byte data keys, bound to a context (the value version id),
/// so a wrapped key moved to another row does not unwrap.
pub trait KeyEncryptionKey: Send + Sync {
    /// Names the key a wrapped data key was made with (stored beside it).
    fn id(&self) -> &str;
    /// Wraps a data key.
    fn wrap(&self, data_key: &[u8; 32], context: &[u8]) -> anyhow::Result<Vec<u8>>;
    /// Unwraps a data key this key wrapped with the same context.
    fn unwrap(&self, wrapped: &[u8], context: &[u8]) -> anyhow::Result<Zeroizing<[u8; 32]>>;
}

/// The key-encryption key in the data directory (`secret_kek`, mode 0600): AES-256-GCM
/// with a random nonce, stored as nonce followed by ciphertext and tag.
pub struct LocalKek {
    id: String,
    key: Zeroizing<[u8; 32]>,
}

impl LocalKek {
    /// Loads the key from the directory, generating it when missing.
    pub fn load_or_generate(dir: &Path) -> anyhow::Result<Self> {
        let key = crate::keys::random_key(dir, "secret_kek")?;
        let fingerprint = Sha256::digest(key.as_ref());
        Ok(Self {
            id: format!("local:{}", hex::encode(&fingerprint[..8])),
            key,
        })
    }

    fn cipher(&self) -> Aes256Gcm {
        Aes256Gcm::new(self.key.as_ref().into())
    }
}

impl KeyEncryptionKey for LocalKek {
    fn id(&self) -> &str {
        &self.id
    }

    fn wrap(&self, data_key: &[u8; 32], context: &[u8]) -> anyhow::Result<Vec<u8>> {
        let nonce = Aes256Gcm::generate_nonce(&mut OsRng);
        let sealed = self
            .cipher()
            .encrypt(
                &nonce,
                Payload {
                    msg: data_key,
                    aad: context,
                },
            )
            .map_err(|_| anyhow!("cannot wrap a data key"))?;
        Ok([nonce.as_slice(), &sealed].concat())
    }

    fn unwrap(&self, wrapped: &[u8], context: &[u8]) -> anyhow::Result<Zeroizing<[u8; 32]>> {
        anyhow::ensure!(wrapped.len() > 12, "wrapped data key too short");
        let (nonce, sealed) = wrapped.split_at(12);
        let opened = Zeroizing::new(
            self.cipher()
                .decrypt(
                    Nonce::from_slice(nonce),
                    Payload {
                        msg: sealed,
                        aad: context,
                    },
                )
                .map_err(|_| anyhow!("the data key does not unwrap under {}", self.id))?,
        );
        let mut key = Zeroizing::new([0u8; 32]);
        key.copy_from_slice(
            opened
                .get(..32)
                .context("wrapped data key has the wrong length")?,
        );
        Ok(key)
    }
}
