//! Sharing and room enablement (spec sections 2 and 3): share grants of a task to a
//! room, a department or the company, the secret slot policies a grant carries, and
//! the bindings that enable a task in a room at an exact version.
//!
//! Both aggregates are keyed by what must be unique — one live grant per task and
//! target, one live binding per room and task — so concurrent requests meet at the
//! event store's optimistic lock. Each live period is a generation with its own id.

pub mod binding;
pub mod policy;
pub mod share;

use uuid::Uuid;

/// The id of generation `generation` of the aggregate `aggregate_id`.
pub fn generation_id(kind: &str, aggregate_id: Uuid, generation: i64) -> Uuid {
    crate::ids::derive(kind, &[&aggregate_id.to_string(), &generation.to_string()])
}
