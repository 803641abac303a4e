//! The deployment document ([docs/deployment.md]): JSON Lines, one resource row per
//! line, each with its `kind`, a `ref` unique in the document and the `system` that
//! manages it. Rows of a table name it by its `ref` in `table`; a link (and an
//! incoming rollup's source, a lookup's fallback) names a table of the document as
//! `$table:<ref>` or another table of the company by id. Columns are referred to by
//! their internal key, which the document fixes (`key`), so views, grants and
//! triggers keep their meaning in any scope.

use crate::openapi::enums::string_enum;
use domain::tables::column::{Cardinality, ColumnType};
use domain::tables::grants::{EditMode, ReadMode};
use domain::tables::rule::RuleEvent;
use domain::tables::table::SortKey;
use domain::tables::trigger::{Action, Schedule, TriggerEvent};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use utoipa::ToSchema;
use uuid::Uuid;

/// The prefix of a reference to a table of the document.
pub const TABLE_REF: &str = "$table:";

/// One resource row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[schema(as = DeploymentRow)]
pub enum Row {
    /// A table of the scope.
    Table(TableDoc),
    /// A column of a table.
    Column(Box<ColumnDoc>),
    /// A stored view of a table.
    View(ViewDoc),
    /// A grant on a table.
    Grant(GrantDoc),
    /// A trigger of a table.
    Trigger(TriggerDoc),
    /// An approval rule of a table.
    ApprovalRule(RuleDoc),
    /// Whether social media clients reach a table through their grants.
    ClientAccess(ClientAccessDoc),
}

/// `kind: table`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = DeploymentTable)]
pub struct TableDoc {
    /// Unique in the document; the table's identity across applies.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The system that manages it.
    pub system: String,
    /// Display name.
    pub name: String,
    /// Free text.
    #[serde(default)]
    pub description: Option<String>,
    /// `settings.agent_writes_via_commands_only`.
    #[serde(default)]
    pub agent_writes_via_commands_only: bool,
    /// Department tables: the internal key of the channel scope column.
    #[serde(default)]
    pub channel_scope_column: Option<String>,
}

/// `kind: column`: a ColumnCreate with its internal key and table references.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = DeploymentColumn)]
pub struct ColumnDoc {
    /// Unique in the document.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The system that manages it.
    pub system: String,
    /// The table's ref.
    pub table: String,
    /// Internal key `col_<hex>`: the column's identity in its table.
    pub key: String,
    /// Display name.
    pub name: String,
    /// One of the 19 types.
    #[serde(rename = "type")]
    #[schema(schema_with = string_enum::<ColumnType>)]
    pub column_type: ColumnType,
    /// Required flag.
    #[serde(default)]
    pub required: bool,
    /// Default value (principal columns: an identity token or a tagged cell).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<serde_json::Value>)]
    pub default_value: Option<Value>,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// String and text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<i64>,
    /// select and multi_select.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<String>>,
    /// attachment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_mime_types: Option<Vec<String>>,
    /// attachment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_count: Option<i64>,
    /// attachment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_file_bytes: Option<i64>,
    /// link: `$table:<ref>` or a table id of the company.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_table: Option<String>,
    /// link: `one` or `many`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = string_enum::<Cardinality>)]
    pub cardinality: Option<Cardinality>,
    /// rollup and lookup: the link column.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_field: Option<String>,
    /// rollup: the aggregation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregation: Option<String>,
    /// rollup and lookup: the target column.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_column: Option<String>,
    /// rollup: `outgoing` or `incoming`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<String>,
    /// incoming rollup: `$table:<ref>` or a table id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_table: Option<String>,
    /// incoming rollup: link column pairs.
    #[serde(default, rename = "match", skip_serializing_if = "Option::is_none")]
    pub match_pairs: Option<BTreeMap<String, String>>,
    /// rollup: filter predicates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<Object>>)]
    pub filter: Option<Vec<Value>>,
    /// formula: the expression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expression: Option<String>,
    /// lookup: `{order_column, direction}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub pick: Option<Value>,
    /// lookup: `{table_id, match, target_column}`, `table_id` as `$table:<ref>` or
    /// an id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub fallback: Option<Value>,
}

/// `kind: view`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = DeploymentView)]
pub struct ViewDoc {
    /// Unique in the document.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The system that manages it.
    pub system: String,
    /// The table's ref.
    pub table: String,
    /// Display name, unique in the table.
    pub name: String,
    /// Row filter (columns by internal key).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub filter: Option<Value>,
    /// Sort keys `{column, order}`.
    #[serde(default)]
    #[schema(value_type = Vec<Object>)]
    pub sort: Vec<SortKey>,
    /// Projected columns (internal keys); null means all.
    #[serde(default)]
    pub columns: Option<Vec<String>>,
}

/// `kind: grant`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = DeploymentGrant)]
pub struct GrantDoc {
    /// Unique in the document.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The system that manages it.
    pub system: String,
    /// The table's ref.
    pub table: String,
    /// `default`, `$user:<username>`, `$smc:<platform>:<platform_user_id>`,
    /// `$room:<name>` or `$room:<department>/<room>`, `$dept:<name>`, or a raw
    /// `user:<id>`, `smc:<id>`, `room:<id>`, `dept:<id>`.
    pub subject: String,
    /// Rows read.
    #[schema(schema_with = string_enum::<ReadMode>)]
    pub can_read: ReadMode,
    /// Whether records may be created.
    pub can_insert: bool,
    /// Rows edited.
    #[schema(schema_with = string_enum::<EditMode>)]
    pub can_edit: EditMode,
    /// The row policy of `can_read: filtered`.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub row_filter: Option<Value>,
    /// Hidden columns (internal keys).
    #[serde(default)]
    pub hidden_columns: Vec<String>,
    /// Chatroom grants on a governed department table: reachable scope values.
    #[serde(default)]
    pub scope_values: Vec<String>,
}

/// `kind: trigger`: a trigger of the trigger set (`PUT .../triggers`). A
/// cross-table action's `table_id` is a live id (`$table:<ref>` is refused).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = DeploymentTrigger)]
pub struct TriggerDoc {
    /// Unique in the document.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The system that manages it.
    pub system: String,
    /// The table's ref.
    pub table: String,
    /// The trigger's id.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Disabled triggers never fire.
    #[serde(default = "enabled")]
    pub enabled: bool,
    /// The record event it fires on.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub on: Option<TriggerEvent>,
    /// Its schedule.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub schedule: Option<Schedule>,
    /// Which records it fires for.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub when: Option<Value>,
    /// What it does.
    #[schema(value_type = Vec<Object>)]
    pub actions: Vec<Action>,
}

fn enabled() -> bool {
    true
}

/// `kind: approval_rule`: its `template_id` is a review template of the company
/// (created by REST first).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = DeploymentApprovalRule)]
pub struct RuleDoc {
    /// Unique in the document.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The system that manages it.
    pub system: String,
    /// The table's ref.
    pub table: String,
    /// The rule's id.
    pub id: String,
    /// Shown to writers as `rule_label`.
    pub label: String,
    /// `require_approval`.
    #[serde(rename = "type")]
    pub rule_type: String,
    /// `created`, `updated`.
    #[schema(value_type = Vec<String>)]
    pub events: Vec<RuleEvent>,
    /// The review template.
    pub template_id: Uuid,
}

/// `kind: client_access`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = DeploymentClientAccess)]
pub struct ClientAccessDoc {
    /// Unique in the document.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The system that manages it.
    pub system: String,
    /// The table's ref.
    pub table: String,
    /// Whether social media clients reach the table through their grants.
    pub enabled: bool,
}

/// The row kinds and the names of their schemas in the OpenAPI document.
pub const KINDS: [(&str, &str); 7] = [
    ("table", "DeploymentTable"),
    ("column", "DeploymentColumn"),
    ("view", "DeploymentView"),
    ("grant", "DeploymentGrant"),
    ("trigger", "DeploymentTrigger"),
    ("approval_rule", "DeploymentApprovalRule"),
    ("client_access", "DeploymentClientAccess"),
];

/// Declares `kind` in each row kind's schema of the OpenAPI document: the schemas
/// are closed (`additionalProperties: false`, as the parser is) and the tag sits
/// beside their fields, so without it no row would validate.
pub fn declare_kinds(document: &mut Value) {
    for (kind, name) in KINDS {
        let schema = &mut document["components"]["schemas"][name];
        if !schema.is_object() {
            continue;
        }
        schema["properties"]["kind"] = serde_json::json!({"type": "string", "enum": [kind]});
        if let Some(required) = schema["required"].as_array_mut() {
            required.insert(0, Value::String("kind".into()));
        }
    }
}

impl Row {
    /// The row's kind as the document writes it.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Table(_) => "table",
            Self::Column(_) => "column",
            Self::View(_) => "view",
            Self::Grant(_) => "grant",
            Self::Trigger(_) => "trigger",
            Self::ApprovalRule(_) => "approval_rule",
            Self::ClientAccess(_) => "client_access",
        }
    }

    /// Its ref.
    pub fn reference(&self) -> &str {
        self.head().0
    }

    /// Its system.
    pub fn system(&self) -> &str {
        self.head().1
    }

    /// The ref of its table (its own for a table row).
    pub fn table(&self) -> &str {
        match self {
            Self::Table(t) => &t.reference,
            _ => self.head().2,
        }
    }

    fn head(&self) -> (&str, &str, &str) {
        match self {
            Self::Table(r) => (&r.reference, &r.system, &r.reference),
            Self::Column(r) => (&r.reference, &r.system, &r.table),
            Self::View(r) => (&r.reference, &r.system, &r.table),
            Self::Grant(r) => (&r.reference, &r.system, &r.table),
            Self::Trigger(r) => (&r.reference, &r.system, &r.table),
            Self::ApprovalRule(r) => (&r.reference, &r.system, &r.table),
            Self::ClientAccess(r) => (&r.reference, &r.system, &r.table),
        }
    }
}

/// A problem that stops an apply.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(as = DeploymentPlanError)]
pub struct PlanError {
    /// The line of the document (1-based), when one row is at fault.
    pub line: Option<usize>,
    /// The row's ref, when known.
    #[serde(rename = "ref")]
    pub reference: Option<String>,
    /// What is wrong.
    pub message: String,
}

/// A parsed document: its rows with their line numbers.
pub struct Document {
    /// `(line, row)` in document order.
    pub rows: Vec<(usize, Row)>,
}

/// Characters a ref may hold.
const MAX_REF: usize = 200;

impl Document {
    /// Parses JSON Lines (blank lines are skipped); every line that is not a valid
    /// row, a repeated ref, a row of another system or of an unknown table is an
    /// error.
    pub fn parse(text: &str, system: &str) -> (Self, Vec<PlanError>) {
        let mut rows = Vec::new();
        let mut errors = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (index, line) in text.lines().enumerate() {
            let number = index + 1;
            if line.trim().is_empty() {
                continue;
            }
            let error = |reference: Option<&str>, message: String| PlanError {
                line: Some(number),
                reference: reference.map(str::to_string),
                message,
            };
            let value: Value = match serde_json::from_str(line) {
                Ok(value) => value,
                Err(e) => {
                    errors.push(error(None, format!("not JSON: {e}")));
                    continue;
                }
            };
            if value["kind"] == "trigger" && mentions_table_ref(&value["actions"]) {
                errors.push(error(
                    value["ref"].as_str(),
                    "a trigger action's table_id must be a live table id: only materialize_slots accepts $table:<ref>; apply once, read the ids from iac/state and write them back".into(),
                ));
                continue;
            }
            let row: Row = match serde_json::from_value(value) {
                Ok(row) => row,
                Err(e) => {
                    errors.push(error(None, format!("not a resource row: {e}")));
                    continue;
                }
            };
            let reference = row.reference();
            if reference.is_empty()
                || reference.chars().count() > MAX_REF
                || reference
                    .chars()
                    .any(|c| c.is_whitespace() || c.is_control())
            {
                errors.push(error(
                    Some(reference),
                    format!("ref must be 1..{MAX_REF} characters without spaces"),
                ));
                continue;
            }
            if !seen.insert(reference.to_string()) {
                errors.push(error(Some(reference), "ref appears twice".into()));
                continue;
            }
            if row.system() != system {
                errors.push(error(
                    Some(reference),
                    format!(
                        "system '{}' is not the deployed system '{system}'",
                        row.system()
                    ),
                ));
                continue;
            }
            rows.push((number, row));
        }
        let tables: std::collections::HashSet<String> = rows
            .iter()
            .filter(|(_, r)| matches!(r, Row::Table(_)))
            .map(|(_, r)| r.reference().to_string())
            .collect();
        for (line, row) in &rows {
            if !tables.contains(row.table()) {
                errors.push(PlanError {
                    line: Some(*line),
                    reference: Some(row.reference().to_string()),
                    message: format!(
                        "table '{}' is not a table row of this document",
                        row.table()
                    ),
                });
            }
        }
        let doc = Self {
            rows: rows
                .into_iter()
                .filter(|(_, r)| tables.contains(r.table()))
                .collect(),
        };
        (doc, errors)
    }

    /// The document as JSON Lines.
    pub fn write(rows: &[Row]) -> String {
        let mut out = String::new();
        for row in rows {
            out.push_str(&serde_json::to_string(row).unwrap_or_default());
            out.push('\n');
        }
        out
    }
}

/// Whether a JSON value holds a `$table:<ref>` string anywhere.
fn mentions_table_ref(value: &Value) -> bool {
    match value {
        Value::String(s) => s.starts_with(TABLE_REF),
        Value::Array(items) => items.iter().any(mentions_table_ref),
        Value::Object(fields) => fields.values().any(mentions_table_ref),
        _ => false,
    }
}
