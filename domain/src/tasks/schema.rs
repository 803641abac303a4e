//! `input_schema`: JSON Schema draft 2020-12, pinned, with remote references off.
//!
//! A schema is refused when its text is over 64 KiB or holds NUL, when it is not a
//! JSON object, when it declares another draft in `$schema`, when it does not
//! validate against the 2020-12 meta-schema, or when it cannot be compiled (an
//! unresolvable or remote `$ref`: nothing is ever fetched).

use jsonschema::{Draft, Validator};
use serde_json::Value;

/// Largest schema text.
pub const MAX_SCHEMA_BYTES: usize = 64 << 10;

/// The only `$schema` accepted.
pub const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// Problems are capped at this many.
pub const MAX_PROBLEMS: usize = 20;

/// Compiles a schema, or lists why it is invalid.
pub fn compile(schema: &Value) -> Result<Validator, Vec<String>> {
    let text = schema.to_string();
    if text.len() > MAX_SCHEMA_BYTES {
        return Err(vec![format!(
            "input_schema is larger than {MAX_SCHEMA_BYTES} bytes"
        )]);
    }
    if text.contains("\\u0000") {
        return Err(vec!["input_schema contains NUL".into()]);
    }
    let Value::Object(object) = schema else {
        return Err(vec!["input_schema must be a JSON object".into()]);
    };
    if let Some(declared) = object.get("$schema") {
        let declared = declared.as_str().unwrap_or_default().trim_end_matches('#');
        if declared != DRAFT_2020_12 {
            return Err(vec![format!(
                "input_schema must be JSON Schema draft 2020-12 (it declares {declared})"
            )]);
        }
    }
    let problems: Vec<String> = jsonschema::draft202012::meta::validator()
        .iter_errors(schema)
        .take(MAX_PROBLEMS)
        .map(|e| {
            format!(
                "input_schema{}: {e}",
                pointer(&e.instance_path().to_string())
            )
        })
        .collect();
    if !problems.is_empty() {
        return Err(problems);
    }
    jsonschema::options()
        .with_draft(Draft::Draft202012)
        .should_validate_formats(false)
        .build(schema)
        .map_err(|e| vec![format!("input_schema cannot be compiled: {e}")])
}

/// Why an instance fails a schema (at most [`MAX_PROBLEMS`]).
pub fn violations(validator: &Validator, instance: &Value) -> Vec<String> {
    validator
        .iter_errors(instance)
        .take(MAX_PROBLEMS)
        .map(|e| format!("{}{e}", pointer_prefix(&e.instance_path().to_string())))
        .collect()
}

fn pointer(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!(" at {path}")
    }
}

fn pointer_prefix(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!("{path}: ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn objects_of_draft_2020_12_compile() {
        let schema =
            json!({"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}});
        let validator = compile(&schema).unwrap();
        assert!(violations(&validator, &json!({"n": 1})).is_empty());
        assert_eq!(violations(&validator, &json!({"n": "x"})).len(), 1);
        assert!(compile(&json!({"$schema": DRAFT_2020_12, "type": "string"})).is_ok());
    }

    #[test]
    fn other_shapes_and_drafts_are_refused() {
        assert!(compile(&json!(true)).is_err());
        assert!(compile(&json!([1])).is_err());
        assert!(compile(&json!({"$schema": "http://json-schema.org/draft-07/schema#"})).is_err());
        assert!(compile(&json!({"type": 12})).is_err());
        assert!(compile(&json!({"$ref": "https://example.com/remote.json"})).is_err());
        assert!(compile(&json!({"enum": ["a\u{0}b"]})).is_err());
        let big = json!({"description": "x".repeat(MAX_SCHEMA_BYTES)});
        assert!(compile(&big).is_err());
    }
}
