//! ColumnCreate: the rules a new column must satisfy.

use super::{
    Cardinality, ColumnDef, ColumnType, MAX_FILE_BYTES, MAX_LENGTH, NAME_CHARS, OPTION_CHARS,
    OPTIONS, computed,
};
use crate::tables::TableError;
use crate::tables::formula::Formula;
use crate::tables::scope::{Placement, ScopeRef, may_link};
use crate::tables::values;
use serde_json::Value;
use std::collections::BTreeMap;
use uuid::Uuid;

/// The ColumnCreate request as the domain sees it. The computed-column fields
/// (`link_field` ... `fallback`) are carried only to check that they fit the type.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ColumnSpec {
    /// Display name.
    pub name: String,
    /// Type.
    pub column_type: Option<ColumnType>,
    /// Required flag.
    pub required: Option<bool>,
    /// Default value.
    pub default_value: Option<Value>,
    /// Description.
    pub description: Option<String>,
    /// Max length.
    pub max_length: Option<i64>,
    /// Select options.
    pub options: Option<Vec<String>>,
    /// Attachment MIME types.
    pub allowed_mime_types: Option<Vec<String>>,
    /// Attachment files per cell.
    pub max_count: Option<i64>,
    /// Attachment bytes per file.
    pub max_file_bytes: Option<i64>,
    /// Link target.
    pub target_table_id: Option<Uuid>,
    /// Link cardinality.
    pub cardinality: Option<Cardinality>,
    /// Computed-column fields that were sent (name → value), for type checks.
    pub computed_fields: BTreeMap<&'static str, Value>,
}

/// What the caller looked up about a link's target table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkFacts {
    /// The target's company.
    pub company_id: Uuid,
    /// The target's owning scope.
    pub scope: ScopeRef,
}

/// Another table of the company a new column reads besides its link's target (the
/// targets of the table's links, for a formula's cross-table references; a
/// lookup's fallback table), as the caller looked it up.
#[derive(Debug, Clone, PartialEq)]
pub struct OtherTable {
    /// Its id.
    pub id: Uuid,
    /// Where it sits.
    pub facts: LinkFacts,
    /// Its columns.
    pub columns: Vec<ColumnDef>,
}

/// What a new column is checked against besides its own fields.
#[derive(Debug, Clone, Copy)]
pub struct Surroundings<'a> {
    /// The table's columns.
    pub existing: &'a [ColumnDef],
    /// The table.
    pub table_id: Uuid,
    /// Where the table sits.
    pub placement: &'a Placement,
    /// What the caller found about a link's target table or an incoming rollup's
    /// source table (`None` when it does not exist in the caller's company).
    pub link: Option<LinkFacts>,
    /// The columns of the table a rollup or lookup reads.
    pub link_targets: &'a [ColumnDef],
    /// The other tables it may read.
    pub others: &'a [OtherTable],
}

const RESERVED: [&str; 7] = [
    "id",
    "created_at",
    "updated_at",
    "created_by",
    "can_edit",
    "data",
    "table_id",
];

/// Checks a display name: 1..100 characters without control characters, not
/// reserved (system fields, `col_...` keys, `$` tokens), unique in the table
/// (case-insensitively) apart from the column `except`.
pub fn check_name(
    name: &str,
    existing: &[ColumnDef],
    except: Option<&str>,
) -> Result<(), TableError> {
    let chars = name.chars().count();
    if name.trim().is_empty() || chars > NAME_CHARS || name.trim() != name {
        return Err(TableError::config(format!(
            "name must be 1..{NAME_CHARS} characters without leading or trailing spaces"
        )));
    }
    if name.chars().any(char::is_control) {
        return Err(TableError::config(
            "name may not contain control characters",
        ));
    }
    let lower = name.to_lowercase();
    if RESERVED.contains(&lower.as_str()) || lower.starts_with("col_") || lower.starts_with('$') {
        return Err(TableError::ReservedName(name.to_string()));
    }
    if existing
        .iter()
        .any(|c| Some(c.key.as_str()) != except && c.name.to_lowercase() == lower)
    {
        return Err(TableError::DuplicateName(name.to_string()));
    }
    Ok(())
}

/// Checks select options: 1..50 unique options of 1..64 characters.
pub(super) fn check_options(options: &[String]) -> Result<(), TableError> {
    if !(OPTIONS.0..=OPTIONS.1).contains(&options.len()) {
        return Err(TableError::config(format!(
            "options must hold {}..{} entries",
            OPTIONS.0, OPTIONS.1
        )));
    }
    for (i, option) in options.iter().enumerate() {
        let n = option.chars().count();
        if !(OPTION_CHARS.0..=OPTION_CHARS.1).contains(&n) || option.contains('\0') {
            return Err(TableError::config(format!(
                "option '{option}' must be {}..{} characters",
                OPTION_CHARS.0, OPTION_CHARS.1
            )));
        }
        if options[..i].contains(option) {
            return Err(TableError::config(format!(
                "option '{option}' is listed twice"
            )));
        }
    }
    Ok(())
}

fn only_for(field: &str, present: bool, allowed: bool, types: &str) -> Result<(), TableError> {
    if present && !allowed {
        return Err(TableError::config(format!(
            "{field} is only allowed on {types} columns"
        )));
    }
    Ok(())
}

/// Validates a ColumnCreate and builds the stored definition with the given key.
pub fn build_column(
    key: String,
    spec: ColumnSpec,
    around: &Surroundings<'_>,
) -> Result<ColumnDef, TableError> {
    let Surroundings {
        existing,
        table_id,
        placement,
        link,
        link_targets,
        others,
    } = *around;
    let column_type = spec
        .column_type
        .ok_or_else(|| TableError::config("type is required"))?;
    check_name(&spec.name, existing, None)?;
    use ColumnType as T;
    let t = column_type;
    if t.is_computed() {
        if spec.required.is_some() {
            return Err(TableError::config(
                "required is not allowed on computed columns",
            ));
        }
        if spec.default_value.is_some() {
            return Err(TableError::config(
                "default_value is not allowed on computed columns",
            ));
        }
    }
    only_for(
        "max_length",
        spec.max_length.is_some(),
        matches!(t, T::String | T::Text),
        "string and text",
    )?;
    only_for(
        "options",
        spec.options.is_some(),
        matches!(t, T::Select | T::MultiSelect),
        "select and multi_select",
    )?;
    let attachment = t == T::Attachment;
    only_for(
        "allowed_mime_types",
        spec.allowed_mime_types.is_some(),
        attachment,
        "attachment",
    )?;
    only_for(
        "max_count",
        spec.max_count.is_some(),
        attachment,
        "attachment",
    )?;
    only_for(
        "max_file_bytes",
        spec.max_file_bytes.is_some(),
        attachment,
        "attachment",
    )?;
    only_for(
        "target_table_id",
        spec.target_table_id.is_some(),
        t == T::Link,
        "link",
    )?;
    only_for(
        "cardinality",
        spec.cardinality.is_some(),
        t == T::Link,
        "link",
    )?;
    for (field, types) in [
        ("link_field", [T::Rollup, T::Lookup]),
        ("aggregation", [T::Rollup, T::Rollup]),
        ("target_column", [T::Rollup, T::Lookup]),
        ("direction", [T::Rollup, T::Rollup]),
        ("source_table_id", [T::Rollup, T::Rollup]),
        ("match", [T::Rollup, T::Rollup]),
        ("filter", [T::Rollup, T::Rollup]),
        ("expression", [T::Formula, T::Formula]),
        ("pick", [T::Lookup, T::Lookup]),
        ("fallback", [T::Lookup, T::Lookup]),
    ] {
        let names = if types[0] == types[1] {
            types[0].as_str().to_string()
        } else {
            format!("{} and {}", types[0].as_str(), types[1].as_str())
        };
        only_for(
            field,
            spec.computed_fields.contains_key(field),
            types.contains(&t),
            &names,
        )?;
    }
    let (mut formula, mut rollup, mut lookup) = (None, None, None);
    match t {
        T::Formula => {
            let expression = spec
                .computed_fields
                .get("expression")
                .and_then(Value::as_str)
                .ok_or_else(|| TableError::config("expression is required for formula columns"))?;
            formula = Some(Box::new(
                Formula::build(expression, existing, others).map_err(TableError::ColumnConfig)?,
            ));
        }
        T::Rollup => {
            let incoming = computed::Incoming {
                table_id,
                placement,
                source: link,
            };
            rollup = Some(Box::new(computed::rollup(
                &spec.computed_fields,
                existing,
                link_targets,
                incoming,
            )?));
        }
        T::Lookup => {
            lookup = Some(Box::new(computed::lookup(
                &spec.computed_fields,
                existing,
                link_targets,
                computed::FallbackTables { placement, others },
            )?));
        }
        _ => {}
    }
    if let Some(n) = spec.max_length
        && !(1..=MAX_LENGTH).contains(&n)
    {
        return Err(TableError::config(format!(
            "max_length must be 1..{MAX_LENGTH}"
        )));
    }
    if matches!(t, T::Select | T::MultiSelect) {
        let options = spec.options.as_deref().ok_or_else(|| {
            TableError::config("options are required for select and multi_select")
        })?;
        check_options(options)?;
    }
    if let Some(n) = spec.max_count
        && !(1..=1000).contains(&n)
    {
        return Err(TableError::config("max_count must be 1..1000"));
    }
    if let Some(n) = spec.max_file_bytes
        && !(1..=MAX_FILE_BYTES).contains(&n)
    {
        return Err(TableError::config(format!(
            "max_file_bytes must be 1..{MAX_FILE_BYTES} (5 GiB)"
        )));
    }
    if let Some(types) = &spec.allowed_mime_types
        && types.iter().any(|m| !is_mime_type(m))
    {
        return Err(TableError::config(
            "allowed_mime_types must be MIME types like image/png or image/*",
        ));
    }
    let mut cardinality = None;
    if t == T::Link {
        let target = spec
            .target_table_id
            .ok_or_else(|| TableError::config("target_table_id is required for link columns"))?;
        let facts = link
            .ok_or_else(|| TableError::config(format!("target table {target} does not exist")))?;
        if !may_link(placement, facts.company_id, facts.scope) {
            return Err(TableError::config(
                "target_table_id must be a table of this scope or an ancestor scope (own chatroom, owning department or company)",
            ));
        }
        cardinality = Some(spec.cardinality.unwrap_or(Cardinality::Many));
    }
    let mut column = ColumnDef {
        key,
        name: spec.name,
        column_type,
        required: spec.required.unwrap_or(false),
        default_value: None,
        description: spec.description,
        max_length: spec.max_length,
        options: spec.options,
        allowed_mime_types: spec.allowed_mime_types,
        max_count: spec.max_count,
        max_file_bytes: spec.max_file_bytes,
        target_table_id: spec.target_table_id,
        cardinality,
        formula,
        rollup,
        lookup,
    };
    column.default_value = normalize_default(&column, spec.default_value)?;
    Ok(column)
}

/// Checks a default value (string, integer, number, boolean or null) against the
/// column and returns its normalized form (null means none).
pub(super) fn normalize_default(
    column: &ColumnDef,
    value: Option<Value>,
) -> Result<Option<Value>, TableError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(value @ (Value::Array(_) | Value::Object(_))) => Err(TableError::config(format!(
            "default_value must be a string, integer, number, boolean or null, not {value}"
        ))),
        Some(value) => {
            let value = match (column.column_type, value) {
                (ColumnType::MultiSelect, Value::String(s)) => Value::Array(vec![Value::String(s)]),
                (_, v) => v,
            };
            let mut refs = Vec::new();
            values::normalize(column, &value, &mut refs)
                .map(|v| (!v.is_null()).then_some(v))
                .map_err(|message| TableError::config(format!("default_value: {message}")))
        }
    }
}

fn is_mime_type(m: &str) -> bool {
    let mut parts = m.split('/');
    let ok = |p: Option<&str>| {
        p.is_some_and(|p| {
            !p.is_empty()
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+*".contains(&b))
        })
    };
    ok(parts.next()) && ok(parts.next()) && parts.next().is_none()
}
