//! Capability credentials: the random ids and secrets of public read tokens,
//! callback tokens and the writeback credentials runs receive. The log keeps only
//! a secret's SHA-256, never the secret.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore;
use sha2::{Digest, Sha256};
use uuid::Uuid;

/// 128 random bits in UUID form (every bit random, so not an RFC 4122 v4 id).
pub fn random_token_id() -> Uuid {
    let mut bytes = [0u8; 16];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    Uuid::from_bytes(bytes)
}

/// A 256-bit secret (URL-safe base64) and the hash the log keeps of it (hex
/// SHA-256).
pub fn random_secret() -> (String, String) {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    let secret = URL_SAFE_NO_PAD.encode(bytes);
    let hash = hex::encode(Sha256::digest(secret.as_bytes()));
    (secret, hash)
}
