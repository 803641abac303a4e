//! Coverage checks that fail when a new aggregate or event type arrives without its
//! recorded log or its entry in the event catalogue (`docs/events.md`). The list of
//! aggregates and event types is the domain's registry.

use domain::registry::aggregates;
use replay_tests::{read_log, recorded_logs};
use std::collections::BTreeSet;

#[test]
fn every_aggregate_and_event_type_has_a_recorded_log() {
    let mut seen = BTreeSet::new();
    for path in recorded_logs().unwrap().values() {
        for event in read_log(path).unwrap() {
            seen.insert((event.aggregate_type, event.event_type));
        }
    }
    for aggregate in aggregates() {
        for event_type in &aggregate.event_types {
            assert!(
                seen.contains(&(aggregate.aggregate_type.to_string(), event_type.to_string())),
                "no recorded log in replay-tests/logs holds a {} {event_type}",
                aggregate.aggregate_type
            );
        }
    }
}

#[test]
fn every_projected_aggregate_type_is_registered() {
    let registered: BTreeSet<&str> = aggregates().iter().map(|a| a.aggregate_type).collect();
    for projection in projections::read_models::all() {
        for aggregate_type in projection.aggregate_types() {
            assert!(
                registered.contains(aggregate_type),
                "{aggregate_type} (read by {}) is missing from domain::registry::aggregates()",
                projection.name()
            );
        }
    }
}

/// Each event type has a `### EventType (vN)` heading with its current version under
/// a `## aggregate_type` section, and its section names every field of the payload.
#[test]
fn the_catalogue_documents_every_event_type_and_field() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/events.md");
    let catalogue = std::fs::read_to_string(&path).unwrap();
    for aggregate in aggregates() {
        let section_start = catalogue
            .find(&format!("\n## `{}`", aggregate.aggregate_type))
            .unwrap_or_else(|| {
                panic!(
                    "docs/events.md has no `## `{}`` section",
                    aggregate.aggregate_type
                )
            });
        let section = &catalogue[section_start + 1..];
        let section = &section[..section.find("\n## ").unwrap_or(section.len())];
        for example in &aggregate.examples {
            let heading = format!("### {} (v{})", example.event_type, example.event_version);
            let start = section.find(&heading).unwrap_or_else(|| {
                panic!(
                    "docs/events.md lacks `{heading}` under {}",
                    aggregate.aggregate_type
                )
            });
            let entry = &section[start + heading.len()..];
            let entry = &entry[..entry.find("\n### ").unwrap_or(entry.len())];
            if let Some(fields) = example
                .payload
                .get(&example.event_type)
                .and_then(|v| v.as_object())
            {
                for field in fields.keys() {
                    assert!(
                        entry.contains(&format!("`{field}`")),
                        "docs/events.md: {} does not describe `{field}`",
                        example.event_type
                    );
                }
            }
        }
    }
}
