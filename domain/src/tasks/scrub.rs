//! Scrubbing: removing a task version's owner-only content (its scripts, work
//! command and ordinary env) from the log itself, not only from a read model.
//!
//! The content lives in the `contents` of `TaskVersionDrafted` and
//! `TaskVersionEdited` payloads. The hash chain commits to each of those fields by
//! its digest ([`committed`]), not by its text, so a scrub can replace the text in
//! the stored payload with a marker carrying the same digest ([`scrubbed`]) and
//! every chain hash still verifies. A scrubbed field reads back as its empty value
//! ([`or_empty`]). See `docs/decisions/0008-scrubbing-the-log.md`.

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value, json};

/// The fields of `VersionContents` a scrub removes (what `content_hash` covers).
pub const SCRUBBABLE: [&str; 4] = [
    "startup_script",
    "work_script",
    "work_command",
    "ordinary_env",
];

/// The key of a scrub marker: `{"$scrubbed": "sha256:..."}` stands where the text
/// was, with the digest of the text's canonical JSON.
pub const MARKER: &str = "$scrubbed";

/// The key under which the chain sees a scrubbable field: `{"$digest": "sha256:..."}`.
pub const COMMITTED: &str = "$digest";

/// The event types whose payload holds scrubbable contents.
pub const EVENT_TYPES: [&str; 2] = ["TaskVersionDrafted", "TaskVersionEdited"];

/// `sha256:` over the canonical JSON of a value.
fn digest(value: &Value) -> String {
    let text = serde_json_canonicalizer::to_string(value).unwrap_or_default();
    super::input::digest(text.as_bytes())
}

/// The digest a field commits to: a marker's own, or the value's.
fn field_digest(value: &Value) -> String {
    match value.get(MARKER).and_then(Value::as_str) {
        Some(digest) if value.as_object().is_some_and(|o| o.len() == 1) => digest.to_string(),
        _ => digest(value),
    }
}

/// The scrubbable contents object of a payload, when it has one.
fn contents_mut<'a>(
    event_type: &str,
    payload: &'a mut Value,
) -> Option<&'a mut Map<String, Value>> {
    if !EVENT_TYPES.contains(&event_type) {
        return None;
    }
    payload
        .get_mut(event_type)?
        .get_mut("contents")?
        .as_object_mut()
}

/// Rewrites each scrubbable field of a payload with `change`; `None` when the
/// event holds no scrubbable contents.
fn rewrite(event_type: &str, payload: &Value, change: impl Fn(&Value) -> Value) -> Option<Value> {
    let mut payload = payload.clone();
    let contents = contents_mut(event_type, &mut payload)?;
    for field in SCRUBBABLE {
        if let Some(value) = contents.get_mut(field) {
            *value = change(value);
        }
    }
    Some(payload)
}

/// The payload as the hash chain sees it: every scrubbable field replaced by its
/// digest, so a scrubbed payload hashes like the original. Other events are
/// returned as they are.
pub fn committed(aggregate_type: &str, event_type: &str, payload: &Value) -> Option<Value> {
    if aggregate_type != "task_version" {
        return None;
    }
    rewrite(
        event_type,
        payload,
        |value| json!({ COMMITTED: field_digest(value) }),
    )
}

/// The payload after a scrub: every scrubbable field replaced by a marker with its
/// digest. `None` when the event holds no scrubbable contents.
pub fn scrubbed(event_type: &str, payload: &Value) -> Option<Value> {
    rewrite(
        event_type,
        payload,
        |value| json!({ MARKER: field_digest(value) }),
    )
}

/// Deserializes a scrubbable field: its value, or its empty value where a scrub
/// left a marker.
pub fn or_empty<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Field<T> {
        Scrubbed {
            #[serde(rename = "$scrubbed")]
            _digest: String,
        },
        Held(T),
    }
    Ok(match Field::<T>::deserialize(deserializer)? {
        Field::Scrubbed { .. } => T::default(),
        Field::Held(value) => value,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drafted() -> Value {
        json!({"TaskVersionDrafted": {"version_id": "v", "contents": {
            "startup_script": "set -e\n", "work_script": "echo secret\n",
            "work_command": null, "ordinary_env": {"A": "1"}, "timeout_seconds": 60}}})
    }

    #[test]
    fn a_scrubbed_payload_commits_like_the_original() {
        let original = drafted();
        let removed = scrubbed("TaskVersionDrafted", &original).unwrap();
        assert!(!removed.to_string().contains("echo secret"));
        assert_eq!(
            committed("task_version", "TaskVersionDrafted", &original),
            committed("task_version", "TaskVersionDrafted", &removed)
        );
        assert_eq!(
            scrubbed("TaskVersionDrafted", &removed).unwrap(),
            removed,
            "scrubbing twice changes nothing"
        );
        let other = json!({"TaskVersionDrafted": {"contents": {"work_script": "echo other\n"}}});
        assert_ne!(
            committed("task_version", "TaskVersionDrafted", &original),
            committed("task_version", "TaskVersionDrafted", &other)
        );
        assert_eq!(committed("task", "TaskCreated", &original), None);
        assert_eq!(scrubbed("TaskVersionPublished", &original), None);
    }

    #[test]
    fn a_scrubbed_field_reads_as_empty_and_a_held_one_as_itself() {
        #[derive(Deserialize)]
        struct Fields {
            #[serde(deserialize_with = "or_empty")]
            script: String,
            #[serde(deserialize_with = "or_empty")]
            command: Option<String>,
        }
        let held: Fields = serde_json::from_value(json!({"script": "x", "command": "y"})).unwrap();
        assert_eq!(
            (held.script.as_str(), held.command.as_deref()),
            ("x", Some("y"))
        );
        let gone: Fields = serde_json::from_value(
            json!({"script": {"$scrubbed": "sha256:00"}, "command": {"$scrubbed": "sha256:01"}}),
        )
        .unwrap();
        assert_eq!((gone.script.as_str(), gone.command), ("", None));
    }
}
