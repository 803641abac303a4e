//! Secrets the service keeps in its data directory: the JWT signing secret and the
//! RSA transit key pair for encrypted secret writes. Each is generated at first use,
//! written with mode 0600 and reused afterwards.

use anyhow::Context;
use rand::RngCore;
use rsa::pkcs8::{DecodePrivateKey, EncodePrivateKey, EncodePublicKey, LineEnding};
use rsa::{RsaPrivateKey, RsaPublicKey};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Modulus size of the transit key pair.
pub const TRANSIT_KEY_BITS: usize = 3072;

/// The name of the encryption scheme clients use with the transit key.
pub const TRANSIT_ALGORITHM: &str = "RSA-OAEP-SHA256+AES-256-GCM";

/// The RSA key pair secret values are encrypted to.
#[derive(Clone)]
pub struct TransitKey {
    /// Private half, for decrypting envelopes.
    pub private: RsaPrivateKey,
    /// Public half as SPKI PEM.
    pub public_pem: String,
}

impl TransitKey {
    /// Loads `transit_key.pem` from the directory, generating it when missing.
    pub fn load_or_generate(dir: &Path) -> anyhow::Result<Self> {
        let path = dir.join("transit_key.pem");
        let pem = load_or_create(&path, || {
            let key = RsaPrivateKey::new(&mut rand::rngs::OsRng, TRANSIT_KEY_BITS)?;
            Ok(key.to_pkcs8_pem(LineEnding::LF)?.as_bytes().to_vec())
        })?;
        let pem = String::from_utf8(pem).context("the transit key file is not text")?;
        let private = RsaPrivateKey::from_pkcs8_pem(&pem)
            .with_context(|| format!("{} is not a PKCS#8 RSA private key", path.display()))?;
        let public_pem = RsaPublicKey::from(&private).to_public_key_pem(LineEnding::LF)?;
        Ok(Self {
            private,
            public_pem,
        })
    }
}

/// The JWT secret: the configured one, or `jwt.secret` in the directory (generated
/// when missing).
pub fn jwt_secret(configured: Option<&str>, dir: &Path) -> anyhow::Result<Vec<u8>> {
    if let Some(secret) = configured {
        anyhow::ensure!(
            secret.len() >= 32,
            "SANDBOX_JWT_SECRET must be at least 32 characters"
        );
        return Ok(secret.as_bytes().to_vec());
    }
    let secret = load_or_create(&dir.join("jwt.secret"), || {
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
