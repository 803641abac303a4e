//! The contents of a task version (spec section 2, "Task version"), their bounds,
//! the job-contract checks of a draft and the digests that identify them.
//!
//! Field bounds are request validation (the standard 422 array); the job contract
//! (input example against the schema, work command, schema validity) is reported as
//! 422 `job_contract_invalid` with up to 20 problems, at draft create and update only.

use super::{input, schema};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use uuid::Uuid;

/// Largest startup or work script.
pub const MAX_SCRIPT_BYTES: usize = 1 << 20;
/// Largest `work_command`.
pub const MAX_WORK_COMMAND_BYTES: usize = 4096;
/// Largest `input_instructions` and `input_example`.
pub const MAX_INPUT_TEXT_BYTES: usize = 64 << 10;
/// Names in `ordinary_env` at most.
pub const MAX_ENV_NAMES: usize = 100;
/// Bytes of one `ordinary_env` value, and of the serialized map.
pub const MAX_ENV_BYTES: usize = 64 << 10;
/// Bytes of ordinary plus secret environment.
pub const MAX_TOTAL_ENV_BYTES: usize = 256 << 10;
/// Longest timeout (about 7 days).
pub const MAX_TIMEOUT_SECONDS: i64 = 604_680;
/// Timeout when none is given.
pub const DEFAULT_TIMEOUT_SECONDS: i64 = 1800;
/// Secret slots a version may declare.
pub const MAX_SECRET_SLOTS: usize = 100;
/// The variables the runtime sets itself; an author may not declare them.
pub const RESERVED_NAMES: &[&str] = &["PATH", "HOME", "HOSTNAME", "PWD", "SHELL", "USER"];
/// The prefix of the runtime's own variables (`SERVICE_INPUTS_FILE`, ...).
pub const RESERVED_PREFIX: &str = "SERVICE_";

/// A declared secret slot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlotDeclaration {
    /// The slot (and environment variable) name.
    pub name: String,
}

/// Which table writes a writeback credential allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum WritebackOps {
    /// Create records only.
    #[serde(rename = "create")]
    Create,
    /// Create and update records.
    #[serde(rename = "create,update")]
    CreateUpdate,
}

/// Where a run's output goes besides its output file (department-owned tasks only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum OutputPolicy {
    /// The work script writes records of one custom table.
    CustomTableWriteback {
        /// The table.
        table_id: Uuid,
        /// Allowed operations.
        allowed_ops: WritebackOps,
    },
    /// The work script's output runs one custom-table Command.
    CustomTableCommand {
        /// The Command.
        command_id: Uuid,
        /// The room it runs in.
        chatroom_id: Uuid,
        /// The Command's inputs schema.
        input_schema: Value,
    },
}

/// Everything a task version holds. Published versions never change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VersionContents {
    /// The environment version runs use.
    pub environment_version_id: Uuid,
    /// Sourced first, as `/workspace/startup.sh`.
    #[serde(deserialize_with = "super::scrub::or_empty")]
    pub startup_script: String,
    /// The work, as `/workspace/work.sh`.
    #[serde(deserialize_with = "super::scrub::or_empty")]
    pub work_script: String,
    /// Plain environment variables.
    #[serde(deserialize_with = "super::scrub::or_empty")]
    pub ordinary_env: BTreeMap<String, String>,
    /// Help for whoever writes an input.
    pub input_instructions: Option<String>,
    /// A sample input.
    pub input_example: Option<Value>,
    /// JSON Schema 2020-12 every run input must satisfy.
    pub input_schema: Option<Value>,
    /// Written to `/workspace/driver.sh`; `None` means `. /workspace/work.sh`.
    #[serde(default, deserialize_with = "super::scrub::or_empty")]
    pub work_command: Option<String>,
    /// Work timeout.
    pub timeout_seconds: i64,
    /// Secret slots the scripts read.
    pub secret_slot_declarations: Vec<SlotDeclaration>,
    /// Whether agent submissions need a human confirmation.
    pub requires_confirmation: bool,
    /// Where output goes besides the output file.
    pub output_policy: Option<OutputPolicy>,
    /// Files unpacked into `/workspace` before the startup script (absent from
    /// the serialized form when none, so older digests are unchanged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle: Option<super::bundle::BundleRef>,
}

impl VersionContents {
    /// `sha256:` over the JCS form of every field: the version's identity.
    pub fn canonical_digest(&self) -> String {
        digest_of(&serde_json::to_value(self).unwrap_or(Value::Null))
    }

    /// `sha256:` over the owner-only content (scripts, command, ordinary env): what
    /// a scrub removes.
    pub fn content_hash(&self) -> String {
        digest_of(&json!({
            "startup_script": self.startup_script,
            "work_script": self.work_script,
            "work_command": self.work_command,
            "ordinary_env": self.ordinary_env,
        }))
    }

    /// Empties the owner-only content, as a scrubbed payload reads back
    /// ([`super::scrub::SCRUBBABLE`]).
    pub fn scrub(&mut self) {
        self.startup_script.clear();
        self.work_script.clear();
        self.work_command = None;
        self.ordinary_env.clear();
    }

    /// `sha256:` over the two scripts.
    pub fn source_digest(&self) -> String {
        digest_of(&json!({
            "startup_script": self.startup_script,
            "work_script": self.work_script,
        }))
    }

    /// The declared slot names, in declaration order.
    pub fn secret_slot_names(&self) -> Vec<String> {
        self.secret_slot_declarations
            .iter()
            .map(|s| s.name.clone())
            .collect()
    }

    /// The shell text of `/workspace/driver.sh`.
    pub fn effective_work_command(&self) -> &str {
        match self.work_command.as_deref() {
            Some(command) if !command.trim().is_empty() => command,
            _ => ". /workspace/work.sh",
        }
    }
}

fn digest_of(value: &Value) -> String {
    let text = serde_json_canonicalizer::to_string(value).unwrap_or_default();
    input::digest(text.as_bytes())
}

/// Whether a name is a valid environment variable or slot name
/// (`^[A-Za-z_][A-Za-z0-9_]{0,127}$`).
pub fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.len() <= 128
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Whether the runtime owns the name.
pub fn reserved_name(name: &str) -> bool {
    RESERVED_NAMES.contains(&name) || name.starts_with(RESERVED_PREFIX)
}

/// A problem with one field: its name and what is wrong (rendered by the API as a
/// validation entry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldProblem {
    /// The field.
    pub field: &'static str,
    /// What is wrong.
    pub message: String,
}

fn problem(field: &'static str, message: impl Into<String>) -> FieldProblem {
    FieldProblem {
        field,
        message: message.into(),
    }
}

/// The bounds of the fields (not the job contract).
pub fn field_problems(contents: &VersionContents) -> Vec<FieldProblem> {
    let mut problems = Vec::new();
    for (field, script) in [
        ("startup_script", &contents.startup_script),
        ("work_script", &contents.work_script),
    ] {
        if script.len() > MAX_SCRIPT_BYTES {
            problems.push(problem(field, format!("over {MAX_SCRIPT_BYTES} bytes")));
        }
        if script.contains('\0') {
            problems.push(problem(field, "contains NUL"));
        }
    }
    let env = &contents.ordinary_env;
    if env.len() > MAX_ENV_NAMES {
        problems.push(problem(
            "ordinary_env",
            format!("more than {MAX_ENV_NAMES} names"),
        ));
    }
    for (name, value) in env {
        if !valid_name(name) || reserved_name(name) {
            problems.push(problem(
                "ordinary_env",
                format!("`{name}` is not a name an author may set"),
            ));
        }
        if value.len() > MAX_ENV_BYTES || value.contains('\0') {
            problems.push(problem(
                "ordinary_env",
                format!("the value of `{name}` is over {MAX_ENV_BYTES} bytes or holds NUL"),
            ));
        }
    }
    let serialized = serde_json::to_string(env).map(|s| s.len()).unwrap_or(0);
    if serialized > MAX_ENV_BYTES {
        problems.push(problem(
            "ordinary_env",
            format!("serialized over {MAX_ENV_BYTES} bytes"),
        ));
    }
    if let Some(text) = &contents.input_instructions
        && text.len() > MAX_INPUT_TEXT_BYTES
    {
        problems.push(problem(
            "input_instructions",
            format!("over {MAX_INPUT_TEXT_BYTES} bytes"),
        ));
    }
    if !(1..=MAX_TIMEOUT_SECONDS).contains(&contents.timeout_seconds) {
        problems.push(problem(
            "timeout_seconds",
            format!("must be between 1 and {MAX_TIMEOUT_SECONDS}"),
        ));
    }
    let slots = &contents.secret_slot_declarations;
    if slots.len() > MAX_SECRET_SLOTS {
        problems.push(problem(
            "secret_slot_declarations",
            format!("more than {MAX_SECRET_SLOTS} slots"),
        ));
    }
    let mut seen = std::collections::HashSet::new();
    for slot in slots {
        if !valid_name(&slot.name) {
            problems.push(problem(
                "secret_slot_declarations",
                format!("`{}` is not a valid slot name", slot.name),
            ));
        } else if reserved_name(&slot.name) {
            problems.push(problem(
                "secret_slot_declarations",
                format!("`{}` is a reserved name", slot.name),
            ));
        } else if !seen.insert(slot.name.as_str()) {
            problems.push(problem(
                "secret_slot_declarations",
                format!("`{}` is declared twice", slot.name),
            ));
        }
    }
    problems
}

/// The job-contract problems of a draft (at most [`schema::MAX_PROBLEMS`]).
pub fn contract_problems(contents: &VersionContents) -> Vec<String> {
    let mut problems = Vec::new();
    if let Some(command) = &contents.work_command {
        if command.len() > MAX_WORK_COMMAND_BYTES {
            problems.push(format!(
                "work_command is over {MAX_WORK_COMMAND_BYTES} bytes"
            ));
        }
        if command.contains('\0') {
            problems.push("work_command contains NUL".into());
        }
    }
    let validator = match &contents.input_schema {
        Some(s) => match schema::compile(s) {
            Ok(validator) => Some(validator),
            Err(schema_problems) => {
                problems.extend(schema_problems);
                None
            }
        },
        None => None,
    };
    if let Some(example) = &contents.input_example {
        let text = example.to_string();
        if text.len() > MAX_INPUT_TEXT_BYTES {
            problems.push(format!(
                "input_example is over {MAX_INPUT_TEXT_BYTES} bytes"
            ));
        } else if let Some(validator) = &validator {
            problems.extend(
                schema::violations(validator, example)
                    .into_iter()
                    .map(|v| format!("input_example: {v}")),
            );
        }
    }
    problems.truncate(schema::MAX_PROBLEMS);
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contents() -> VersionContents {
        VersionContents {
            environment_version_id: Uuid::from_u128(1),
            startup_script: "set -e\n".into(),
            work_script: "echo hi > \"$SERVICE_OUTPUT_FILE\"\n".into(),
            ordinary_env: [("MODE".to_string(), "fast".to_string())].into(),
            input_instructions: None,
            input_example: Some(json!({"n": 3})),
            input_schema: Some(json!({"type": "object", "properties": {"n": {"type": "integer"}}})),
            work_command: None,
            timeout_seconds: DEFAULT_TIMEOUT_SECONDS,
            secret_slot_declarations: vec![SlotDeclaration {
                name: "API_TOKEN".into(),
            }],
            requires_confirmation: false,
            output_policy: None,
            bundle: None,
        }
    }

    #[test]
    fn a_sound_version_has_no_problems() {
        assert!(field_problems(&contents()).is_empty());
        assert!(contract_problems(&contents()).is_empty());
    }

    #[test]
    fn reserved_and_invalid_names_are_refused() {
        let mut c = contents();
        c.ordinary_env
            .insert("SERVICE_OUTPUT_FILE".into(), "x".into());
        c.ordinary_env.insert("1BAD".into(), "x".into());
        c.secret_slot_declarations.push(SlotDeclaration {
            name: "PATH".into(),
        });
        c.secret_slot_declarations.push(SlotDeclaration {
            name: "API_TOKEN".into(),
        });
        let fields: Vec<_> = field_problems(&c).into_iter().map(|p| p.field).collect();
        assert_eq!(
            fields,
            [
                "ordinary_env",
                "ordinary_env",
                "secret_slot_declarations",
                "secret_slot_declarations"
            ]
        );
    }

    #[test]
    fn bounds_are_checked() {
        let mut c = contents();
        c.timeout_seconds = MAX_TIMEOUT_SECONDS + 1;
        c.work_script = "x".repeat(MAX_SCRIPT_BYTES + 1);
        assert_eq!(field_problems(&c).len(), 2);
        c.timeout_seconds = MAX_TIMEOUT_SECONDS;
        c.work_script = "x".repeat(MAX_SCRIPT_BYTES);
        assert!(field_problems(&c).is_empty());
    }

    #[test]
    fn the_contract_lists_every_problem() {
        let mut c = contents();
        c.input_example = Some(json!({"n": "three"}));
        c.work_command = Some(format!("{}\0", "x".repeat(MAX_WORK_COMMAND_BYTES)));
        let problems = contract_problems(&c);
        assert_eq!(problems.len(), 3, "{problems:?}");
        c.input_schema = Some(json!("not an object"));
        c.work_command = None;
        assert_eq!(contract_problems(&c).len(), 1);
    }

    #[test]
    fn digests_follow_the_contents() {
        let a = contents();
        let mut b = contents();
        assert_eq!(a.canonical_digest(), b.canonical_digest());
        b.ordinary_env.insert("MODE".into(), "slow".into());
        assert_ne!(a.canonical_digest(), b.canonical_digest());
        assert_ne!(a.content_hash(), b.content_hash());
        assert_eq!(a.source_digest(), b.source_digest());
        assert!(a.canonical_digest().starts_with("sha256:"));
    }

    #[test]
    fn an_empty_work_command_means_the_work_script() {
        let mut c = contents();
        assert_eq!(c.effective_work_command(), ". /workspace/work.sh");
        c.work_command = Some("python3 main.py".into());
        assert_eq!(c.effective_work_command(), "python3 main.py");
    }
}
