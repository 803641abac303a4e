//! Upcasters: old stored event versions lifted to the current shape on load.
//!
//! Stored events are never rewritten (the hash chain covers them). When an event's
//! payload shape changes, its `event_version` is bumped and an [`Upcaster`] from the
//! old version is registered in the aggregate's `AggregateExt::upcasters()`; the
//! command bus and every projection run it before deserializing. The rules for
//! adding, renaming and splitting are in `docs/events.md`.

use cqrs_es::persist::{EventUpcaster, SerializedEvent};
use serde_json::Value;

/// Lifts one event type from one version to the next by rewriting the variant's
/// fields (the object inside the externally tagged payload `{"Variant": {...}}`).
pub struct Upcaster {
    /// The event type.
    pub event_type: &'static str,
    /// The version it reads.
    pub from_version: &'static str,
    /// The version it produces.
    pub to_version: &'static str,
    /// Rewrites the variant's fields.
    pub change: fn(&mut serde_json::Map<String, Value>),
}

impl EventUpcaster for Upcaster {
    fn can_upcast(&self, event_type: &str, event_version: &str) -> bool {
        event_type == self.event_type && event_version == self.from_version
    }

    fn upcast(&self, mut event: SerializedEvent) -> SerializedEvent {
        if let Some(Value::Object(fields)) = event
            .payload
            .as_object_mut()
            .and_then(|payload| payload.get_mut(self.event_type))
        {
            (self.change)(fields);
        }
        event.event_version = self.to_version.into();
        event
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_the_named_version_is_lifted() {
        let upcaster = Upcaster {
            event_type: "Thing",
            from_version: "1",
            to_version: "2",
            change: |fields| {
                fields.insert("added".into(), json!(false));
            },
        };
        assert!(upcaster.can_upcast("Thing", "1"));
        assert!(!upcaster.can_upcast("Thing", "2"));
        assert!(!upcaster.can_upcast("Other", "1"));
        let event = SerializedEvent::new(
            "a".into(),
            1,
            "t".into(),
            "Thing".into(),
            "1".into(),
            json!({"Thing": {"x": 1}}),
            json!({}),
        );
        let lifted = upcaster.upcast(event);
        assert_eq!(lifted.payload, json!({"Thing": {"x": 1, "added": false}}));
        assert_eq!(lifted.event_version, "2");
    }
}
