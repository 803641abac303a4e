//! Applying cqrs-es upcasters to a stored event.

use cqrs_es::persist::{EventUpcaster, SerializedEvent};

/// Runs every upcaster that accepts the event, in order, so an event several versions
/// old is lifted step by step to the current shape.
pub fn upcast(event: SerializedEvent, upcasters: &[Box<dyn EventUpcaster>]) -> SerializedEvent {
    upcasters.iter().fold(event, |event, upcaster| {
        if upcaster.can_upcast(&event.event_type, &event.event_version) {
            upcaster.upcast(event)
        } else {
            event
        }
    })
}
