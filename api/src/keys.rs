//! Secrets the service keeps in its data directory: the JWT signing secret, the
//! RSA transit key pair for encrypted secret writes, and the secret store's
//! key-encryption key and pepper. Each is generated at first use, written with mode
//! 0600 and reused afterwards.

use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce};
use anyhow::Context;
use rand::RngCore;
use rsa::PrivateKey;
use rsa::pkcs8::{DecodePrivateKey, EncodePrivateKey, EncodePublicKey, LineEnding};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Modulus size of the transit key pair.
pub const TRANSIT_KEY_BITS: usize = 3072;

/// The name of the encryption scheme clients use with the transit key.
pub const TRANSIT_ALGORITHM: &str = "RSA-OAEP-SHA256+AES-256-GCM";

/// Length of the AES-256-GCM nonce of an envelope (`iv`).
pub const ENVELOPE_IV_BYTES: usize = 12;

/// The RSA key pair secret values are encrypted to.
#[derive(Clone)]
pub struct TransitKey {
    /// Private half, for decrypting envelopes. rsa 0.10's operations on it are
    /// constant-time (0.9's were open to the Marvin timing attack).
    pub private: PrivateKey,
    /// Public half as SPKI PEM.
    pub public_pem: String,
}

impl TransitKey {
    /// Loads `transit_key.pem` from the directory, generating it when missing.
    pub fn load_or_generate(dir: &Path) -> anyhow::Result<Self> {
        let path = dir.join("transit_key.pem");
        let pem = load_or_create(&path, || {
            let key = PrivateKey::new(&mut getrandom::SysRng, TRANSIT_KEY_BITS)?;
            Ok(key.to_pkcs8_pem(LineEnding::LF)?.as_bytes().to_vec())
        })?;
        let pem = String::from_utf8(pem).context("the transit key file is not text")?;
        let private = PrivateKey::from_pkcs8_pem(&pem)
            .with_context(|| format!("{} is not a PKCS#8 RSA private key", path.display()))?;
        let public_pem = private.to_public_key().to_public_key_pem(LineEnding::LF)?;
        Ok(Self {
            private,
            public_pem,
        })
    }

    /// Opens a hybrid envelope: `encrypted_key` is a 32-byte AES-256 key under
    /// RSA-OAEP-SHA256 (MGF1-SHA256, empty label), `iv` the 12-byte GCM nonce and
    /// `ciphertext` the GCM ciphertext with its 16-byte tag. `None` for anything
    /// that does not open; the reason is not told apart, so a caller learns nothing
    /// about the padding.
    pub fn open(
        &self,
        encrypted_key: &[u8],
        iv: &[u8],
        ciphertext: &[u8],
    ) -> Option<zeroize::Zeroizing<Vec<u8>>> {
        let key = zeroize::Zeroizing::new(
            self.private
                .oaep_decrypt::<rsa::sha2::Sha256>(encrypted_key)
                .ok()?,
        );
        if key.len() != 32 || iv.len() != ENVELOPE_IV_BYTES {
            return None;
        }
        let cipher = Aes256Gcm::new_from_slice(&key).ok()?;
        cipher
            .decrypt(Nonce::from_slice(iv), ciphertext)
            .ok()
            .map(zeroize::Zeroizing::new)
    }
}

/// 32 random bytes in `name` under the directory (hex), generated when missing:
/// the secret store's key-encryption key and its pepper.
pub fn random_key(dir: &Path, name: &str) -> anyhow::Result<zeroize::Zeroizing<[u8; 32]>> {
    let path = dir.join(name);
    let text = load_or_create(&path, || {
        let mut bytes = [0u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        Ok(hex::encode(bytes).into_bytes())
    })?;
    let mut key = zeroize::Zeroizing::new([0u8; 32]);
    hex::decode_to_slice(text.trim_ascii(), key.as_mut())
        .with_context(|| format!("{} does not hold 32 hex-encoded bytes", path.display()))?;
    Ok(key)
}

/// The JWT secret: the configured one, or `jwt.secret` in the directory (generated
/// when missing).
pub fn jwt_secret(configured: Option<&str>, dir: &Path) -> anyhow::Result<Vec<u8>> {
    shared_secret("SANDBOX_JWT_SECRET", configured, &dir.join("jwt.secret"))
}

/// The key agent turn contexts are signed with: the configured one, or `turn.key`
/// in the directory (generated when missing).
pub fn turn_key(configured: Option<&str>, dir: &Path) -> anyhow::Result<Vec<u8>> {
    shared_secret("SANDBOX_TURN_KEY", configured, &dir.join("turn.key"))
}

/// The key proposal receipts are signed with: the configured one, or
/// `receipt.key` in the directory (generated when missing). The server alone holds
/// it (unlike the turn key, which the chat platform signs turns with).
pub fn receipt_key(configured: Option<&str>, dir: &Path) -> anyhow::Result<Vec<u8>> {
    shared_secret("SANDBOX_RECEIPT_KEY", configured, &dir.join("receipt.key"))
}

/// An HMAC secret of at least 32 characters: the configured one (named by its
/// variable in the refusal), or 48 random bytes (hex) in `path`.
fn shared_secret(variable: &str, configured: Option<&str>, path: &Path) -> anyhow::Result<Vec<u8>> {
    if let Some(secret) = configured {
        anyhow::ensure!(
            secret.len() >= 32,
            "{variable} must be at least 32 characters"
        );
        return Ok(secret.as_bytes().to_vec());
    }
    let secret = load_or_create(path, || {
        let mut bytes = [0u8; 48];
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        Ok(hex::encode(bytes).into_bytes())
    })?;
    Ok(secret.trim_ascii().to_vec())
}

/// Reads the file, or creates it (mode 0600) from `generate` when it is missing. Two
/// processes starting at once both end up with the first writer's contents.
fn load_or_create(
    path: &Path,
    generate: impl FnOnce() -> anyhow::Result<Vec<u8>>,
) -> anyhow::Result<Vec<u8>> {
    match std::fs::read(path) {
        Ok(bytes) => return Ok(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let temp = path.with_extension(format!("tmp{}", std::process::id()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temp)
        .with_context(|| format!("cannot create {}", temp.display()))?;
    file.write_all(&generate()?)?;
    file.sync_all()?;
    // A hard link never replaces an existing file, unlike rename.
    let linked = std::fs::hard_link(&temp, path);
    std::fs::remove_file(&temp)?;
    if let Err(e) = linked
        && e.kind() != std::io::ErrorKind::AlreadyExists
    {
        return Err(e).with_context(|| format!("cannot write {}", path.display()));
    }
    std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))
}
