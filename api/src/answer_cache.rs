//! What public reads keep between requests, per key against the table's data
//! version (the log position of its last change, schema or records): an entry is
//! served again only while the table is exactly as it was when the entry was
//! computed, so nothing kept is ever stale. Entries that depend on the clock
//! (`$today`, `$now`) are not kept.
//!
//! Each cache is per process and bounded: answers by their bytes, the others by
//! entries.

use axum::body::Bytes;
use domain::tables::column::ColumnDef;
use domain::tables::table::ViewDef;
use quick_cache::sync::Cache;
use quick_cache::{UnitWeighter, Weighter};
use std::sync::Arc;
use uuid::Uuid;

/// Most bytes of answer bodies kept.
pub const MAX_ANSWER_BYTES: u64 = 64 << 20;
/// Most totals kept.
pub const MAX_TOTALS: usize = 100_000;
/// Most schemas kept.
pub const MAX_SCHEMAS: usize = 1_000;

type Key = (Uuid, String);

/// Values by (owner, request), each valid at one data version; bounded by the
/// weight `W` gives entries, evicting the least useful first (quick_cache's
/// CLOCK-Pro, so a burst of one-off requests does not push out popular ones).
pub struct VersionedCache<V, W = UnitWeighter> {
    entries: Cache<Key, (i64, V), W>,
}

impl<V: Clone> VersionedCache<V> {
    /// A cache of at most `items` entries.
    pub fn new(items: usize) -> Self {
        Self {
            entries: Cache::new(items),
        }
    }
}

impl<V: Clone, W: Weighter<Key, (i64, V)> + Clone> VersionedCache<V, W> {
    /// The value of `request` of `owner` computed at `version`, if kept.
    pub fn get(&self, owner: Uuid, request: &str, version: i64) -> Option<V> {
        self.entries
            .get(&(owner, request.to_string()))
            .filter(|(at, _)| *at == version)
            .map(|(_, value)| value)
    }

    /// Keeps a value computed at `version` (replacing one of an older version).
    pub fn put(&self, owner: Uuid, request: String, version: i64, value: V) {
        self.entries.insert((owner, request), (version, value));
    }
}

/// Weighs an answer by its bytes.
#[derive(Debug, Clone, Copy)]
pub struct BodyBytes;

impl Weighter<Key, (i64, Bytes)> for BodyBytes {
    fn weight(&self, key: &Key, value: &(i64, Bytes)) -> u64 {
        (key.1.len() + value.1.len() + 64) as u64
    }
}

/// A table's view and columns as read at one data version.
pub type Schema = Arc<(Option<ViewDef>, Vec<ColumnDef>)>;

/// The caches of the public read surface.
pub struct PublicReadCache {
    /// Answer bodies by (token, request).
    pub answers: VersionedCache<Bytes, BodyBytes>,
    /// Totals by (token, filter and search): the pages of one selection share one.
    pub totals: VersionedCache<i64>,
    /// A published view and the table's columns by (table, view).
    pub schemas: VersionedCache<Schema>,
}

impl Default for PublicReadCache {
    fn default() -> Self {
        Self {
            answers: VersionedCache {
                entries: Cache::with_weighter(10_000, MAX_ANSWER_BYTES, BodyBytes),
            },
            totals: VersionedCache::new(MAX_TOTALS),
            schemas: VersionedCache::new(MAX_SCHEMAS),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_served_only_at_its_version() {
        let cache = VersionedCache::new(10);
        let token = Uuid::from_u128(1);
        cache.put(token, "page 1".into(), 7, Bytes::from_static(b"{}"));
        assert!(cache.get(token, "page 1", 7).is_some());
        assert!(cache.get(token, "page 1", 8).is_none());
        assert!(cache.get(token, "page 2", 7).is_none());
        assert!(cache.get(Uuid::from_u128(2), "page 1", 7).is_none());
    }
}
