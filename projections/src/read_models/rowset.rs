//! Load, fold, store: the batch pattern of the projections.
//!
//! Applying a batch of events row by row costs one round trip per event. Instead a
//! projection loads the rows its batch touches with one query per table, folds the
//! events into them in memory (exactly like an aggregate's `apply`), and writes the
//! changed rows back with one upsert and one delete per table.

use std::collections::HashMap;
use std::hash::Hash;

/// The working set of one table's rows during a batch (or, in a rebuild's
/// [`crate::projection::MemoryFold`], during many).
#[derive(Debug)]
pub struct RowSet<K, R> {
    rows: HashMap<K, Slot<R>>,
    /// Keys changed, each once, in the order first changed.
    dirty: Vec<K>,
}

/// A row held: `None` once removed.
#[derive(Debug)]
struct Slot<R> {
    row: Option<R>,
    dirty: bool,
}

impl<R> Slot<R> {
    /// Marks the row changed; `true` the first time, when its key joins the list.
    fn mark(&mut self) -> bool {
        !std::mem::replace(&mut self.dirty, true)
    }
}

impl<K: Hash + Eq + Clone, R> Default for RowSet<K, R> {
    fn default() -> Self {
        Self {
            rows: HashMap::new(),
            dirty: Vec::new(),
        }
    }
}

impl<K: Hash + Eq + Clone, R> RowSet<K, R> {
    /// A working set holding the loaded rows.
    pub fn loaded(rows: impl IntoIterator<Item = (K, R)>) -> Self {
        let slot = |row| Slot {
            row: Some(row),
            dirty: false,
        };
        Self {
            rows: rows.into_iter().map(|(k, r)| (k, slot(r))).collect(),
            dirty: Vec::new(),
        }
    }

    /// The row, for change.
    pub fn get_mut(&mut self, key: &K) -> Option<&mut R> {
        let slot = self.rows.get_mut(key)?;
        slot.row.as_ref()?;
        if slot.mark() {
            self.dirty.push(key.clone());
        }
        slot.row.as_mut()
    }

    /// The row, for reading (not marked changed).
    pub fn get(&self, key: &K) -> Option<&R> {
        self.rows.get(key)?.row.as_ref()
    }

    /// The rows held (loaded, made or removed), for bounding memory.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether no row is held.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Every live row (loaded or made, not removed), for reading.
    pub fn rows(&self) -> impl Iterator<Item = &R> {
        self.rows.values().filter_map(|slot| slot.row.as_ref())
    }

    /// The row, or a new one made by `make`, for change.
    pub fn upsert_with(&mut self, key: K, make: impl FnOnce() -> R) -> &mut R {
        let slot = self.rows.entry(key.clone()).or_insert(Slot {
            row: None,
            dirty: false,
        });
        if slot.mark() {
            self.dirty.push(key);
        }
        slot.row.get_or_insert_with(make)
    }

    /// Marks the row deleted.
    pub fn remove(&mut self, key: &K) {
        if let Some(slot) = self.rows.get_mut(key) {
            slot.row = None;
            if slot.mark() {
                self.dirty.push(key.clone());
            }
        }
    }

    /// The rows to upsert and the keys to delete, in first-touched order.
    pub fn into_changes(mut self) -> (Vec<R>, Vec<K>) {
        let mut upserts = Vec::new();
        let mut deletes = Vec::new();
        for key in self.dirty {
            match self.rows.remove(&key).map(|slot| slot.row) {
                Some(Some(row)) => upserts.push(row),
                Some(None) => deletes.push(key),
                None => {}
            }
        }
        (upserts, deletes)
    }
}

#[cfg(test)]
mod tests {
    use super::RowSet;

    #[test]
    fn changes_are_reported_once_with_the_final_state() {
        let mut set = RowSet::loaded([(1, "a".to_string()), (2, "b".to_string())]);
        set.get_mut(&1).unwrap().push('x');
        set.get_mut(&1).unwrap().push('y');
        set.remove(&2);
        set.upsert_with(3, || "new".into());
        let (upserts, deletes) = set.into_changes();
        assert_eq!(upserts, vec!["axy".to_string(), "new".to_string()]);
        assert_eq!(deletes, vec![2]);
    }

    #[test]
    fn a_row_created_and_removed_in_one_batch_is_deleted_harmlessly() {
        let mut set: RowSet<i32, String> = RowSet::default();
        set.upsert_with(1, || "x".into());
        set.remove(&1);
        let (upserts, deletes) = set.into_changes();
        assert!(upserts.is_empty());
        assert_eq!(deletes, vec![1]);
    }
}
