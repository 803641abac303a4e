//! The deployment document ([docs/deployment.md]): JSON Lines, one resource row per
//! line, each with its `kind`, a `ref` unique in the document and the `system` that
//! manages it. Rows of a table name it by its `ref` in `table`; a link (and an
//! incoming rollup's source, a lookup's fallback) names a table of the document as
//! `$table:<ref>` or another table of the company by id. Columns are referred to by
//! their internal key, which the document fixes (`key`), so views, grants and
//! triggers keep their meaning in any scope.

pub use super::kinds::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

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
    /// The system's tag: every table of the document carries it.
    SystemTag(SystemTagDoc),
    /// A Command of a table.
    Command(Box<CommandDoc>),
    /// A secretless public read token of a view.
    PublicReadToken(Box<TokenDoc>),
}

/// The row kinds and the names of their schemas in the OpenAPI document.
pub const KINDS: [(&str, &str); 10] = [
    ("table", "DeploymentTable"),
    ("column", "DeploymentColumn"),
    ("view", "DeploymentView"),
    ("grant", "DeploymentGrant"),
    ("trigger", "DeploymentTrigger"),
    ("approval_rule", "DeploymentApprovalRule"),
    ("client_access", "DeploymentClientAccess"),
    ("system_tag", "DeploymentSystemTag"),
    ("command", "DeploymentCommand"),
    ("public_read_token", "DeploymentPublicReadToken"),
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
            Self::SystemTag(_) => "system_tag",
            Self::Command(_) => "command",
            Self::PublicReadToken(_) => "public_read_token",
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

    /// The ref of its table (its own for a table row, empty for the system tag).
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
            Self::SystemTag(r) => (&r.reference, &r.system, ""),
            Self::Command(r) => (&r.reference, &r.system, &r.table),
            Self::PublicReadToken(r) => (&r.reference, &r.system, &r.table),
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
        let mut tags = 0;
        for (line, row) in &rows {
            if matches!(row, Row::SystemTag(_)) {
                tags += 1;
                if tags > 1 {
                    errors.push(PlanError {
                        line: Some(*line),
                        reference: Some(row.reference().to_string()),
                        message: "a document holds one system_tag".into(),
                    });
                }
                continue;
            }
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
                .filter(|(_, r)| matches!(r, Row::SystemTag(_)) || tables.contains(r.table()))
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
