//! The Command aggregate (spec `custom-tables.md` sections 2 and 4, the command
//! routes and options): a named, versioned operation on one table that a
//! moderator defines and others run. A `write` Command creates, updates or upserts
//! one record from its inputs; a `query` Command is a record search whose operands
//! may be inputs. Inputs are checked against the Command's JSON Schema (draft
//! 2020-12) before anything runs.
//!
//! Operands are JSON values; a string exactly `$input.<name>` stands for the input
//! `<name>` (which the inputs schema must declare), any other value is a literal.
//!
//! Authority: `caller` runs with the caller's rights; `definition` (a restricted
//! definition-authority Command) runs with its author's rights, limited to exactly
//! its declared effect, and its writes name the Command as their effect identity.

use crate::AggregateExt;
use crate::error::{Code, SpecError};
use crate::tables::scope::ScopeRef;
use crate::validation::{ViolationKind, Violations};
use cqrs_es::event_sink::EventSink;
use cqrs_es::{Aggregate, DomainEvent};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use uuid::Uuid;

/// The default of `delivery_reconciliation_ttl_seconds`.
pub const DEFAULT_RECONCILIATION_TTL_SECONDS: i64 = 900;
/// The bounds of `delivery_reconciliation_ttl_seconds`.
pub const RECONCILIATION_TTL_SECONDS: (i64, i64) = (60, 604_800);
/// The prefix of an input reference.
pub const INPUT_PREFIX: &str = "$input.";

/// What a Command does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CommandKind {
    /// Writes one record.
    Write,
    /// Searches records.
    Query,
}

/// Whose rights a Command runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Authority {
    /// The author's, limited to the declared effect.
    Definition,
    /// The caller's.
    Caller,
}

/// The record operation of a write Command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WriteOp {
    /// Creates a record.
    Create,
    /// Updates the one record the match finds (none or several: refused).
    Update,
    /// Updates the one record the match finds, or creates one.
    Upsert,
}

/// The effect of a write Command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteEffect {
    /// The operation.
    pub op: WriteOp,
    /// Cells written: column (display name or internal key) to operand.
    pub values: Map<String, Value>,
    /// Update and upsert: how the record is found, column (or `record_id`) to
    /// operand; every pair must hold.
    #[serde(rename = "match", default, skip_serializing_if = "Option::is_none")]
    pub match_on: Option<Map<String, Value>>,
}

/// A Command's definition (every version holds a whole one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandDefinition {
    /// Display name (1..200 characters).
    pub name: String,
    /// Free text.
    pub description: Option<String>,
    /// `write` or `query`.
    pub kind: CommandKind,
    /// The inputs' JSON Schema (draft 2020-12).
    pub inputs: Value,
    /// Whose rights it runs with.
    pub authority: Authority,
    /// A raw tag id of the same scope.
    pub tag_id: Option<Uuid>,
    /// How long agent deliveries are reconciled (60..604800 seconds).
    pub delivery_reconciliation_ttl_seconds: i64,
    /// Write Commands: the effect.
    pub write: Option<WriteEffect>,
    /// Query Commands: a record search body (`filter`, `q`, `sort`, `columns`,
    /// `limit`, ...) whose operands may be input references.
    pub query: Option<Value>,
}

/// The input names a definition refers to.
fn references(value: &Value, names: &mut Vec<String>) {
    match value {
        Value::String(s) => {
            if let Some(name) = s.strip_prefix(INPUT_PREFIX) {
                names.push(name.to_string());
            }
        }
        Value::Array(items) => items.iter().for_each(|v| references(v, names)),
        Value::Object(map) => map.values().for_each(|v| references(v, names)),
        _ => {}
    }
}

/// `value` with every input reference replaced by the input's value (a missing
/// optional input reads as null).
pub fn substitute(value: &Value, inputs: &Map<String, Value>) -> Value {
    match value {
        Value::String(s) => match s.strip_prefix(INPUT_PREFIX) {
            Some(name) => inputs.get(name).cloned().unwrap_or(Value::Null),
            None => value.clone(),
        },
        Value::Array(items) => Value::Array(items.iter().map(|v| substitute(v, inputs)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), substitute(v, inputs)))
                .collect(),
        ),
        other => other.clone(),
    }
}

impl CommandDefinition {
    /// Every rule of a definition, as field problems.
    pub fn check(&self) -> Result<(), Violations> {
        let mut problems = Violations::new();
        let rule = |problems: &mut Violations, field: &str, message: &str| {
            problems.push(
                field,
                ViolationKind::Rule {
                    kind: "value_error",
                    message: message.into(),
                },
                None,
            )
        };
        let name = self.name.trim();
        if name.is_empty() || self.name.chars().count() > 200 {
            rule(&mut problems, "name", "name must be 1..200 characters");
        }
        let (min, max) = RECONCILIATION_TTL_SECONDS;
        problems.range(
            "delivery_reconciliation_ttl_seconds",
            self.delivery_reconciliation_ttl_seconds,
            min,
            max,
        );
        if let Err(errors) = crate::tasks::schema::compile(&self.inputs) {
            let message = format!("inputs is not a valid JSON Schema: {}", errors.join("; "));
            rule(&mut problems, "inputs", &message);
        }
        let declared: Vec<&str> = self
            .inputs
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let mut used = Vec::new();
        match (self.kind, &self.write, &self.query) {
            (CommandKind::Write, Some(write), None) => {
                if write.values.is_empty() && write.op != WriteOp::Update {
                    rule(
                        &mut problems,
                        "write",
                        "values must name at least one column",
                    );
                }
                let needs_match = write.op != WriteOp::Create;
                match (&write.match_on, needs_match) {
                    (Some(_), false) => rule(
                        &mut problems,
                        "write",
                        "match is only for update and upsert",
                    ),
                    (Some(m), true) if m.is_empty() => rule(
                        &mut problems,
                        "write",
                        "match must name at least one column",
                    ),
                    (None, true) => rule(&mut problems, "write", "update and upsert need a match"),
                    _ => {}
                }
                references(&Value::Object(write.values.clone()), &mut used);
                if let Some(m) = &write.match_on {
                    references(&Value::Object(m.clone()), &mut used);
                }
            }
            (CommandKind::Query, None, Some(query)) if query.is_object() => {
                references(query, &mut used);
            }
            (CommandKind::Write, _, _) => rule(
                &mut problems,
                "write",
                "a write Command has write and no query",
            ),
            (CommandKind::Query, _, _) => rule(
                &mut problems,
                "query",
                "a query Command has a query object and no write",
            ),
        }
        for name in used {
            if !declared.contains(&name.as_str()) {
                let message = format!("$input.{name} is not a property of inputs");
                rule(&mut problems, "inputs", &message);
            }
        }
        problems.into_result()
    }
}

/// Why a command on a Command was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CommandError {
    /// The definition breaks a rule.
    #[error("the Command definition is invalid")]
    Invalid(Violations),
    /// No Command with that id on that table.
    #[error("no Command with that id")]
    NotFound,
    /// The id is taken.
    #[error("a Command with that id exists")]
    Exists,
}

impl SpecError for CommandError {
    fn code(&self) -> Code {
        match self {
            Self::Invalid(_) => Code::ValidationError,
            Self::NotFound => Code::NotFound,
            Self::Exists => Code::AlreadyExists,
        }
    }
    fn violations(&self) -> Option<&Violations> {
        match self {
            Self::Invalid(violations) => Some(violations),
            _ => None,
        }
    }
}

/// Commands of [`TableOperation`].
#[derive(Debug, Clone, PartialEq)]
pub enum CommandCommand {
    /// Defines the Command (version 1).
    Define {
        /// The new Command's id.
        command_id: Uuid,
        /// The company.
        company_id: Uuid,
        /// The table it operates on.
        table_id: Uuid,
        /// The table's owning scope.
        scope: ScopeRef,
        /// The definition.
        definition: Box<CommandDefinition>,
        /// The author (`user:<id>`).
        defined_by: String,
    },
    /// Replaces the definition (the next version).
    Redefine {
        /// The table the route named (the Command must be on it).
        table_id: Uuid,
        /// The definition.
        definition: Box<CommandDefinition>,
        /// The author of this version (`user:<id>`).
        defined_by: String,
    },
}

/// Events of [`TableOperation`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum CommandEvent {
    /// A Command was defined.
    CommandDefined {
        /// The Command.
        command_id: Uuid,
        /// The company.
        company_id: Uuid,
        /// Its table.
        table_id: Uuid,
        /// The table's owning scope.
        scope: ScopeRef,
        /// The definition.
        definition: Box<CommandDefinition>,
        /// Version 1.
        version: i64,
        /// Its author (`user:<id>`).
        defined_by: String,
    },
    /// A Command's definition was replaced.
    CommandRedefined {
        /// The Command.
        command_id: Uuid,
        /// Its table.
        table_id: Uuid,
        /// The new definition.
        definition: Box<CommandDefinition>,
        /// The new version.
        version: i64,
        /// The author of this version, whose rights a definition-authority
        /// Command now runs with.
        defined_by: String,
    },
}

impl DomainEvent for CommandEvent {
    fn event_type(&self) -> String {
        match self {
            Self::CommandDefined { .. } => "CommandDefined",
            Self::CommandRedefined { .. } => "CommandRedefined",
        }
        .into()
    }
    fn event_version(&self) -> String {
        "1".into()
    }
}

/// A Command: where it lives and its current version.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TableOperation {
    /// The Command, once defined.
    pub command_id: Option<Uuid>,
    /// Its table.
    pub table_id: Uuid,
    /// Its current version.
    pub version: i64,
}

impl Aggregate for TableOperation {
    const TYPE: &'static str = "custom_table_command";
    type Command = CommandCommand;
    type Event = CommandEvent;
    type Error = CommandError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _: &(),
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        let event = match command {
            CommandCommand::Define {
                command_id,
                company_id,
                table_id,
                scope,
                definition,
                defined_by,
            } => {
                if self.command_id.is_some() {
                    return Err(CommandError::Exists);
                }
                definition.check().map_err(CommandError::Invalid)?;
                CommandEvent::CommandDefined {
                    command_id,
                    company_id,
                    table_id,
                    scope,
                    definition,
                    version: 1,
                    defined_by,
                }
            }
            CommandCommand::Redefine {
                table_id,
                definition,
                defined_by,
            } => {
                let command_id = self
                    .command_id
                    .filter(|_| self.table_id == table_id)
                    .ok_or(CommandError::NotFound)?;
                definition.check().map_err(CommandError::Invalid)?;
                CommandEvent::CommandRedefined {
                    command_id,
                    table_id,
                    definition,
                    version: self.version + 1,
                    defined_by,
                }
            }
        };
        sink.write(event, self).await;
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        match event {
            CommandEvent::CommandDefined {
                command_id,
                table_id,
                version,
                ..
            } => {
                self.command_id = Some(command_id);
                self.table_id = table_id;
                self.version = version;
            }
            CommandEvent::CommandRedefined { version, .. } => self.version = version,
        }
    }
}

impl AggregateExt for TableOperation {}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn writer(values: Value, match_on: Option<Value>, op: WriteOp) -> CommandDefinition {
        CommandDefinition {
            name: "add lead".into(),
            description: None,
            kind: CommandKind::Write,
            inputs: json!({"type": "object", "properties": {"name": {"type": "string"}}}),
            authority: Authority::Definition,
            tag_id: None,
            delivery_reconciliation_ttl_seconds: DEFAULT_RECONCILIATION_TTL_SECONDS,
            write: Some(WriteEffect {
                op,
                values: values.as_object().unwrap().clone(),
                match_on: match_on.map(|m| m.as_object().unwrap().clone()),
            }),
            query: None,
        }
    }

    #[test]
    fn definitions_refer_only_to_declared_inputs_and_name_their_match() {
        assert!(
            writer(json!({"name": "$input.name"}), None, WriteOp::Create)
                .check()
                .is_ok()
        );
        assert!(
            writer(json!({"name": "$input.nope"}), None, WriteOp::Create)
                .check()
                .is_err()
        );
        assert!(
            writer(json!({"name": "x"}), None, WriteOp::Upsert)
                .check()
                .is_err(),
            "an upsert needs a match"
        );
        let mut slow = writer(json!({"name": "x"}), None, WriteOp::Create);
        slow.delivery_reconciliation_ttl_seconds = 59;
        assert!(slow.check().is_err());
    }

    #[test]
    fn inputs_replace_their_references_and_nothing_else() {
        let inputs = json!({"name": "Ada", "n": 3});
        let inputs = inputs.as_object().unwrap();
        let template = json!({"filter": {"column": "name", "op": "eq", "value": "$input.name"},
                              "limit": "$input.n", "q": "$input.", "keep": "input.name"});
        assert_eq!(
            substitute(&template, inputs),
            json!({"filter": {"column": "name", "op": "eq", "value": "Ada"},
                   "limit": 3, "q": null, "keep": "input.name"})
        );
    }
}
