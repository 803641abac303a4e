//! Public link tokens (spec "Artifacts, downloads, public links").
//!
//! A token is the link's random id (122 random bits) followed by an HMAC-SHA256 tag
//! of it under a key derived from the service secret, base64url-encoded. Nothing
//! secret is stored: the log and the read model hold the link id only, and a token
//! is checked by recomputing its tag and comparing in constant time. Revoking a link
//! retires its id; the next mint draws a new one.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use uuid::Uuid;

/// Bytes of the tag kept in a token.
const TAG_BYTES: usize = 24;

/// The key public link tokens are tagged with.
#[derive(Clone)]
pub struct LinkKey([u8; 32]);

impl std::fmt::Debug for LinkKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LinkKey(..)")
    }
}

impl LinkKey {
    /// Derives the key from the service secret (a purpose label keeps it apart from
    /// the JWT key made of the same secret).
    pub fn derive(secret: &[u8]) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(b"sandbox public links\0");
        hasher.update(secret);
        Self(hasher.finalize().into())
    }

    fn tag(&self, id: Uuid) -> [u8; TAG_BYTES] {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("any key length");
        mac.update(id.as_bytes());
        let full = mac.finalize().into_bytes();
        let mut tag = [0u8; TAG_BYTES];
        tag.copy_from_slice(&full[..TAG_BYTES]);
        tag
    }

    /// The token of link `id`.
    pub fn token(&self, id: Uuid) -> String {
        let mut bytes = id.as_bytes().to_vec();
        bytes.extend_from_slice(&self.tag(id));
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// The link id a token names, if its tag is right.
    pub fn verify(&self, token: &str) -> Option<Uuid> {
        let bytes = URL_SAFE_NO_PAD.decode(token).ok()?;
        if bytes.len() != 16 + TAG_BYTES {
            return None;
        }
        let id = Uuid::from_slice(&bytes[..16]).ok()?;
        bool::from(self.tag(id).ct_eq(&bytes[16..])).then_some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_verify_only_with_their_key_and_unaltered() {
        let key = LinkKey::derive(b"secret");
        let id = Uuid::new_v4();
        let token = key.token(id);
        assert_eq!(key.verify(&token), Some(id));
        assert_eq!(LinkKey::derive(b"other").verify(&token), None);
        let mut altered = token.into_bytes();
        let last = altered.len() - 1;
        altered[last] = if altered[last] == b'A' { b'B' } else { b'A' };
        assert_eq!(key.verify(&String::from_utf8(altered).unwrap()), None);
        assert_eq!(key.verify("short"), None);
    }
}
