//! What public reads keep between requests, per key against the table's data
//! version (the log position of its last change, schema or records): an entry is
//! served again only while the table is exactly as it was when the entry was
//! computed, so nothing kept is ever stale. Entries that depend on the clock
//! (`$today`, `$now`) are not kept.
//!
//! Each cache is per process and bounded by entries; when full it starts over.

use axum::body::Bytes;
use domain::tables::column::ColumnDef;
use domain::tables::table::ViewDef;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use uuid::Uuid;

/// Most entries one cache keeps.
pub const MAX_ENTRIES: usize = 2_000;

/// Values by (owner, request), each valid at one data version.
#[derive(Debug)]
pub struct VersionedCache<V> {
    entries: Mutex<HashMap<(Uuid, String), (i64, V)>>,
}

impl<V> Default for VersionedCache<V> {
    fn default() -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
        }
    }
}

impl<V: Clone> VersionedCache<V> {
    /// The value of `request` of `owner` computed at `version`, if kept.
    pub fn get(&self, owner: Uuid, request: &str, version: i64) -> Option<V> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries
            .get(&(owner, request.to_string()))
            .filter(|(at, _)| *at == version)
            .map(|(_, value)| value.clone())
    }

    /// Keeps a value computed at `version`.
    pub fn put(&self, owner: Uuid, request: String, version: i64, value: V) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= MAX_ENTRIES {
            entries.clear();
        }
        entries.insert((owner, request), (version, value));
    }
}

/// A table's view and columns as read at one data version.
pub type Schema = Arc<(Option<ViewDef>, Vec<ColumnDef>)>;

/// The caches of the public read surface.
#[derive(Debug, Default)]
pub struct PublicReadCache {
    /// Answer bodies by (token, request).
    pub answers: VersionedCache<Bytes>,
    /// Totals by (token, filter and search): the pages of one selection share one.
    pub totals: VersionedCache<i64>,
    /// A published view and the table's columns by (table, view).
    pub schemas: VersionedCache<Schema>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_served_only_at_its_version() {
        let cache = VersionedCache::default();
        let token = Uuid::from_u128(1);
        cache.put(token, "page 1".into(), 7, Bytes::from_static(b"{}"));
        assert!(cache.get(token, "page 1", 7).is_some());
        assert!(cache.get(token, "page 1", 8).is_none());
        assert!(cache.get(token, "page 2", 7).is_none());
        assert!(cache.get(Uuid::from_u128(2), "page 1", 7).is_none());
    }
}
