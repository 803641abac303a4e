//! API key secrets and origin checks.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore;
use sha2::{Digest, Sha256};

/// A new random secret (256 bits) in the form clients send in `X-Api-Key`.
pub fn generate_secret() -> String {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    format!("sbx_{}", URL_SAFE_NO_PAD.encode(bytes))
}

/// The stored form of a secret: hex SHA-256. The secrets are 256 random bits, so a
/// plain hash is enough and lets a lookup use an index.
pub fn hash_secret(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// Whether a request from `origin` may use a key with these domains. A list holding
/// only `*` allows any origin (and requests without one); otherwise the `Origin`
/// header's host must equal a listed domain or match a `*.suffix` entry.
pub fn origin_allowed(domains: &[String], origin: Option<&str>) -> bool {
    if domains.iter().all(|d| d == "*") && !domains.is_empty() {
        return true;
    }
    let Some(origin) = origin else { return false };
    let host = origin
        .split_once("://")
        .map_or(origin, |(_, rest)| rest)
        .split(['/', ':'])
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    domains.iter().any(|domain| {
        let domain = domain.to_ascii_lowercase();
        match domain.strip_prefix("*.") {
            Some(suffix) => host.ends_with(&format!(".{suffix}")),
            None => host == domain || origin.eq_ignore_ascii_case(&domain),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_unique_and_hash_stably() {
        let (a, b) = (generate_secret(), generate_secret());
        assert_ne!(a, b);
        assert!(a.starts_with("sbx_") && a.len() > 40);
        assert_eq!(hash_secret(&a), hash_secret(&a));
    }

    #[test]
    fn origins() {
        let star = vec!["*".to_string()];
        assert!(origin_allowed(&star, None));
        let listed = vec!["app.example.com".to_string(), "*.acme.test".to_string()];
        assert!(origin_allowed(&listed, Some("https://app.example.com")));
        assert!(origin_allowed(&listed, Some("https://a.acme.test:8443")));
        assert!(!origin_allowed(&listed, Some("https://acme.test.evil.com")));
        assert!(!origin_allowed(&listed, Some("https://evil.com")));
        assert!(!origin_allowed(&listed, None));
        assert!(!origin_allowed(&[], Some("https://app.example.com")));
    }
}
