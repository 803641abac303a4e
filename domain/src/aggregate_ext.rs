//! What the event store needs to know about an aggregate beyond cqrs-es's `Aggregate`.

use cqrs_es::Aggregate;
use cqrs_es::persist::EventUpcaster;

/// Per-aggregate settings used by the store: upcasters for old event versions and
/// the schema version of the aggregate's snapshot form.
pub trait AggregateExt: Aggregate + Clone {
    /// Version of the aggregate's serialized state. Bump it whenever the struct's
    /// meaning changes: snapshots of another version are ignored and the aggregate
    /// is rebuilt from its events.
    const SNAPSHOT_SCHEMA: i32 = 1;

    /// Upcasters that turn stored events of older versions into the current shape.
    fn upcasters() -> Vec<Box<dyn EventUpcaster>> {
        Vec::new()
    }
}
