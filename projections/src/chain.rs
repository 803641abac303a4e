//! The tamper-evident hash chain over the sealed log.
//!
//! Each sealed event's `chain_hash` is SHA-256 over the RFC 8785 canonical JSON of
//! the previous hash and the event's position, identity, type, version, payload and
//! metadata. Changing, removing or reordering any sealed event changes every hash
//! after it. The one exception is by design: a task version's scrubbable fields
//! enter the hash by their digest ([`domain::tasks::scrub::committed`]), so a scrub
//! may replace their text with a marker of the same digest and the chain holds.

use crate::log::StoredEvent;
use domain::tasks::scrub;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// The `previous hash` of position 1.
pub const GENESIS: [u8; 32] = [0; 32];

/// The parts of an event that the chain covers.
pub struct ChainInput<'a> {
    /// Global position.
    pub position: i64,
    /// Aggregate type.
    pub aggregate_type: &'a str,
    /// Aggregate id.
    pub aggregate_id: &'a str,
    /// Sequence.
    pub sequence: i64,
    /// Event type.
    pub event_type: &'a str,
    /// Event version.
    pub event_version: &'a str,
    /// Payload.
    pub payload: &'a Value,
    /// Metadata.
    pub metadata: &'a Value,
}

/// The hash of an event linked to its predecessor's hash.
pub fn link(previous: &[u8], event: &ChainInput<'_>) -> [u8; 32] {
    let document = json!({
        "previous": hex::encode(previous),
        "position": event.position,
        "aggregate_type": event.aggregate_type,
        "aggregate_id": event.aggregate_id,
        "sequence": event.sequence,
        "event_type": event.event_type,
        "event_version": event.event_version,
        "payload": scrub::committed(event.aggregate_type, event.event_type, event.payload)
            .as_ref()
            .unwrap_or(event.payload),
        "metadata": event.metadata,
    });
    let canonical =
        serde_json_canonicalizer::to_vec(&document).expect("JSON values always canonicalize");
    Sha256::digest(canonical).into()
}

/// [`link`] of a stored event (its payload and metadata as stored JSON text).
pub fn link_stored(previous: &[u8], event: &StoredEvent) -> serde_json::Result<[u8; 32]> {
    let payload: Value = serde_json::from_str(&event.payload)?;
    let metadata: Value = serde_json::from_str(&event.metadata)?;
    Ok(link(
        previous,
        &ChainInput {
            position: event.position,
            aggregate_type: &event.aggregate_type,
            aggregate_id: &event.aggregate_id,
            sequence: event.sequence,
            event_type: &event.event_type,
            event_version: &event.event_version,
            payload: &payload,
            metadata: &metadata,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input<'a>(payload: &'a Value, metadata: &'a Value) -> ChainInput<'a> {
        ChainInput {
            position: 1,
            aggregate_type: "company",
            aggregate_id: "a",
            sequence: 1,
            event_type: "CompanyRegistered",
            event_version: "1",
            payload,
            metadata,
        }
    }

    #[test]
    fn a_scrubbed_task_version_payload_links_like_the_original() {
        let meta = json!({});
        let original = json!({"TaskVersionEdited": {"contents": {"work_script": "echo secret\n"}}});
        let scrubbed = scrub::scrubbed("TaskVersionEdited", &original).unwrap();
        let edited = |payload| ChainInput {
            aggregate_type: "task_version",
            event_type: "TaskVersionEdited",
            ..input(payload, &meta)
        };
        assert_eq!(
            link(&GENESIS, &edited(&original)),
            link(&GENESIS, &edited(&scrubbed))
        );
        let other = json!({"TaskVersionEdited": {"contents": {"work_script": "echo other\n"}}});
        assert_ne!(
            link(&GENESIS, &edited(&original)),
            link(&GENESIS, &edited(&other))
        );
    }

    #[test]
    fn key_order_does_not_matter_but_content_does() {
        let meta = json!({});
        let a: Value = serde_json::from_str(r#"{"x":1,"y":2}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"y":2,"x":1}"#).unwrap();
        let c = json!({"x": 1, "y": 3});
        assert_eq!(
            link(&GENESIS, &input(&a, &meta)),
            link(&GENESIS, &input(&b, &meta))
        );
        assert_ne!(
            link(&GENESIS, &input(&a, &meta)),
            link(&GENESIS, &input(&c, &meta))
        );
        assert_ne!(
            link(&GENESIS, &input(&a, &meta)),
            link(&[1; 32], &input(&a, &meta))
        );
    }
}
