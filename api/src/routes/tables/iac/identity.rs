//! Identity tokens of a deployment document (spec `custom-tables.md` section 2):
//! grants name their subject and `principal` cells their principal by name, so a
//! document moves between scopes and companies. Resolution is company-anchored and
//! fails closed (an unknown or ambiguous token is a plan error); export writes a
//! token only when it maps back to exactly one principal, the raw tagged id
//! otherwise.

use crate::error::ApiResult;
use domain::tables::column::{ColumnDef, ColumnType};
use domain::tables::grants::Subject;
use projections::read_models::directory::identity::named_principals;
use serde_json::Value;
use sqlx::PgPool;
use std::collections::HashMap;
use uuid::Uuid;

/// The kinds a token names, by their token prefix.
const KINDS: [&str; 4] = ["user", "smc", "room", "dept"];

/// A company's principals by name and names by principal.
pub struct Identities {
    by_name: HashMap<(String, String), Vec<Uuid>>,
    names_of: HashMap<(String, Uuid), Vec<String>>,
}

impl Identities {
    /// Loads the company's directory.
    pub async fn load(pool: &PgPool, company: Uuid) -> ApiResult<Self> {
        let mut by_name: HashMap<(String, String), Vec<Uuid>> = HashMap::new();
        let mut names_of: HashMap<(String, Uuid), Vec<String>> = HashMap::new();
        for p in named_principals(pool, company).await? {
            by_name
                .entry((p.kind.clone(), p.name.clone()))
                .or_default()
                .push(p.id);
            names_of.entry((p.kind, p.id)).or_default().push(p.name);
        }
        for names in names_of.values_mut() {
            names.sort_by_key(|n| (n.len(), n.clone()));
        }
        Ok(Self { by_name, names_of })
    }

    /// Resolves `$<kind>:<name>` or a raw `<kind>:<id>` to a principal of the
    /// company; the message says why not.
    fn resolve(&self, text: &str) -> Result<(&'static str, Uuid), String> {
        let (token, body) = match text.strip_prefix('$') {
            Some(token) => (true, token),
            None => (false, text),
        };
        let Some((kind, name)) = body.split_once(':') else {
            return Err(format!("'{text}' is not an identity token"));
        };
        let Some(kind) = KINDS.iter().copied().find(|k| *k == kind) else {
            return Err(format!("'{text}': unknown identity kind '{kind}'"));
        };
        if !token {
            return match name.parse::<Uuid>() {
                Ok(id) if self.names_of.contains_key(&(kind.to_string(), id)) => Ok((kind, id)),
                _ => Err(format!("'{text}' names no {kind} of this company")),
            };
        }
        match self
            .by_name
            .get(&(kind.to_string(), name.to_string()))
            .map(Vec::as_slice)
        {
            Some([id]) => Ok((kind, *id)),
            Some([]) | None => Err(format!("'{text}' names no {kind} of this company")),
            Some(_) => Err(format!(
                "'{text}' is ambiguous; qualify a room as <department>/<room> or write the raw {kind}:<id>"
            )),
        }
    }

    /// The token of a principal: `$<kind>:<name>` when that name maps back to it
    /// alone, the raw `<kind>:<id>` otherwise.
    fn token(&self, kind: &str, id: Uuid) -> String {
        self.names_of
            .get(&(kind.to_string(), id))
            .into_iter()
            .flatten()
            .find(|name| {
                self.by_name
                    .get(&(kind.to_string(), name.to_string()))
                    .is_some_and(|ids| ids.len() == 1)
            })
            .map(|name| format!("${kind}:{name}"))
            .unwrap_or_else(|| format!("{kind}:{id}"))
    }

    /// A grant's subject: `default`, a token or a raw tagged id.
    pub fn subject(&self, text: &str) -> Result<Subject, String> {
        if text == "default" {
            return Ok(Subject::Default);
        }
        let (kind, id) = self.resolve(text)?;
        Ok(match kind {
            "user" => Subject::User(id),
            "smc" => Subject::SocialClient(id),
            "room" => Subject::Chatroom(id),
            _ => Subject::Department(id),
        })
    }

    /// How a document names a grant's subject.
    pub fn subject_token(&self, subject: Subject) -> String {
        match subject {
            Subject::Default => "default".into(),
            Subject::User(id) => self.token("user", id),
            Subject::SocialClient(id) => self.token("smc", id),
            Subject::Chatroom(id) => self.token("room", id),
            Subject::Department(id) => self.token("dept", id),
        }
    }

    /// A `principal` cell written with a token: the tagged cell it stores
    /// (`user:<id>`, `smc:<id>`, `room:<id>`). `$dept:` names grants only.
    pub fn cell(&self, text: &str) -> Result<String, String> {
        if text.starts_with("$dept:") || text.starts_with("dept:") {
            return Err(format!(
                "'{text}': a department is not a principal cell ($dept: names grants only)"
            ));
        }
        if !text.starts_with('$') {
            return Ok(text.to_string());
        }
        let (kind, id) = self.resolve(text)?;
        Ok(format!("{kind}:{id}"))
    }

    /// How a document writes a tagged `principal` cell.
    pub fn cell_token(&self, cell: &str) -> String {
        match cell.split_once(':') {
            Some((kind, id)) if ["user", "smc", "room"].contains(&kind) => match id.parse() {
                Ok(id) => self.token(kind, id),
                Err(_) => cell.to_string(),
            },
            _ => cell.to_string(),
        }
    }
}

/// The token prefixes a principal operand may be written with.
const OPERAND_TOKENS: [&str; 4] = ["$user:", "$smc:", "$room:", "$dept:"];

impl Identities {
    /// A row policy or filter with the operands of its `principal` columns written
    /// as tokens where they map back unambiguously (export).
    pub fn filter_tokens(&self, node: &Value, columns: &[ColumnDef]) -> Value {
        map_operands(node, columns, &mut |s| Ok(self.cell_token(s)))
            .unwrap_or_else(|_| node.clone())
    }

    /// A row policy or filter with the tokens among the operands of its `principal`
    /// columns resolved to tagged cells (plan); the message names a token that
    /// resolves to nothing or to a department.
    pub fn filter_cells(&self, node: &Value, columns: &[ColumnDef]) -> Result<Value, String> {
        map_operands(node, columns, &mut |s| {
            if OPERAND_TOKENS.iter().any(|p| s.starts_with(p)) {
                self.cell(s)
            } else {
                Ok(s.to_string())
            }
        })
    }
}

/// Rewrites the string operands of predicates on `principal` columns (and of the
/// groups around them); link leaves keep their target as it is.
fn map_operands(
    node: &Value,
    columns: &[ColumnDef],
    f: &mut dyn FnMut(&str) -> Result<String, String>,
) -> Result<Value, String> {
    let Value::Object(fields) = node else {
        return Ok(node.clone());
    };
    let mut out = fields.clone();
    for group in ["and", "or"] {
        if let Some(Value::Array(items)) = fields.get(group) {
            let mapped = items
                .iter()
                .map(|n| map_operands(n, columns, f))
                .collect::<Result<Vec<_>, _>>()?;
            out.insert(group.into(), Value::Array(mapped));
        }
    }
    if let Some(inner) = fields.get("not") {
        out.insert("not".into(), map_operands(inner, columns, f)?);
    }
    let principal = fields
        .get("column")
        .and_then(Value::as_str)
        .and_then(|c| columns.iter().find(|d| d.is_named(c)))
        .is_some_and(|d| d.column_type == ColumnType::Principal);
    if principal && let Some(value) = fields.get("value") {
        let mapped = match value {
            Value::String(s) => Value::String(f(s)?),
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|i| match i {
                        Value::String(s) => f(s).map(Value::String),
                        other => Ok(other.clone()),
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            other => other.clone(),
        };
        out.insert("value".into(), mapped);
    }
    Ok(Value::Object(out))
}
