//! Answers of public reads, kept per token against the table's data version (the
//! log position of its last change): an answer is served again only while the
//! table is exactly as it was when the answer was computed, so a cached page is
//! never stale. Answers that depend on the clock (`$today`, `$now`) are not kept.
//!
//! The cache is per process and bounded; when full it starts over.

use axum::body::Bytes;
use std::collections::HashMap;
use std::sync::Mutex;
use uuid::Uuid;

/// Most answers kept.
pub const MAX_ANSWERS: usize = 2_000;

/// Cached answer bodies by (token, request).
#[derive(Debug, Default)]
pub struct AnswerCache {
    answers: Mutex<HashMap<(Uuid, String), (i64, Bytes)>>,
}

impl AnswerCache {
    /// The answer to `request` of `token` computed at `version`, if kept.
    pub fn get(&self, token: Uuid, request: &str, version: i64) -> Option<Bytes> {
        let answers = self.answers.lock().unwrap_or_else(|e| e.into_inner());
        answers
            .get(&(token, request.to_string()))
            .filter(|(at, _)| *at == version)
            .map(|(_, body)| body.clone())
    }

    /// Keeps an answer computed at `version`.
    pub fn put(&self, token: Uuid, request: String, version: i64, body: Bytes) {
        let mut answers = self.answers.lock().unwrap_or_else(|e| e.into_inner());
        if answers.len() >= MAX_ANSWERS {
            answers.clear();
        }
        answers.insert((token, request), (version, body));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_served_only_at_its_version() {
        let cache = AnswerCache::default();
        let token = Uuid::from_u128(1);
        cache.put(token, "page 1".into(), 7, Bytes::from_static(b"{}"));
        assert!(cache.get(token, "page 1", 7).is_some());
        assert!(cache.get(token, "page 1", 8).is_none());
        assert!(cache.get(token, "page 2", 7).is_none());
        assert!(cache.get(Uuid::from_u128(2), "page 1", 7).is_none());
    }
}
