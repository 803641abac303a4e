//! ColumnUpdate: renames, settings, option changes and type changes with their data
//! conversion rules.

use super::create::{check_name, check_options, normalize_default};
use super::{ColumnDef, ColumnType, MAX_LENGTH, OPTION_CHARS};
use crate::tables::TableError;
use serde_json::Value;
use std::collections::BTreeMap;

/// A PATCH of a column; `None` leaves a field unchanged, `Some(None)` clears it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ColumnChanges {
    /// New display name.
    pub name: Option<String>,
    /// New description.
    pub description: Option<Option<String>>,
    /// New required flag.
    pub required: Option<bool>,
    /// New default value.
    pub default_value: Option<Option<Value>>,
    /// New max length.
    pub max_length: Option<Option<i64>>,
    /// New type (migrates every row).
    pub column_type: Option<ColumnType>,
    /// New option list.
    pub options: Option<Vec<String>>,
    /// Option renames, old to new (rewrites every live cell).
    pub option_renames: Option<BTreeMap<String, String>>,
}

/// A type change and the definitions on both sides.
#[derive(Debug, Clone, PartialEq)]
pub struct TypeChange {
    /// Type before.
    pub from: ColumnType,
    /// Type after.
    pub to: ColumnType,
}

/// What a valid update amounts to.
#[derive(Debug, Clone, PartialEq)]
pub struct Updated {
    /// The new definition.
    pub column: ColumnDef,
    /// The type change, if any.
    pub type_change: Option<TypeChange>,
    /// Effective option renames (old to new), if any.
    pub renames: BTreeMap<String, String>,
    /// Options the new list drops.
    pub removed_options: Vec<String>,
}

/// Whether values of `from` can be converted to `to`. Links and attachments hold
/// references and metadata that no other type can be turned into, so they may only
/// become json or text; nothing becomes a link, attachment or computed column.
pub fn conversion_allowed(from: ColumnType, to: ColumnType) -> bool {
    use ColumnType as T;
    if !from.is_stored() || !to.is_stored() || matches!(to, T::Link | T::Attachment) {
        return false;
    }
    let principal = |t: ColumnType| matches!(t, T::User | T::SocialClient | T::Principal);
    match from {
        T::Link | T::Attachment => matches!(to, T::Json | T::Text | T::String),
        // Principal cells are checked for tenant and liveness when written; a
        // conversion cannot check them, so only principal columns become principals.
        _ if principal(to) => principal(from),
        _ => true,
    }
}

/// Applies a ColumnUpdate to a column of a table with the given columns.
pub fn apply_changes(
    current: &ColumnDef,
    changes: ColumnChanges,
    existing: &[ColumnDef],
) -> Result<Updated, TableError> {
    use ColumnType as T;
    if changes.options.is_some() && changes.option_renames.is_some() {
        return Err(TableError::config(
            "option_renames cannot be combined with options in one request",
        ));
    }
    let mut column = current.clone();
    if let Some(name) = changes.name {
        check_name(&name, existing, Some(&current.key))?;
        column.name = name;
    }
    if let Some(description) = changes.description {
        column.description = description;
    }
    let mut type_change = None;
    if let Some(to) = changes.column_type.filter(|t| *t != current.column_type) {
        if !conversion_allowed(current.column_type, to) {
            return Err(TableError::config(format!(
                "a {} column cannot be converted to {}",
                current.column_type.as_str(),
                to.as_str()
            )));
        }
        if changes.option_renames.is_some() {
            return Err(TableError::config(
                "option_renames cannot be combined with a type change",
            ));
        }
        column.column_type = to;
        if !matches!(to, T::String | T::Text) {
            column.max_length = None;
        }
        if !matches!(to, T::Select | T::MultiSelect) {
            column.options = None;
        }
        (
            column.allowed_mime_types,
            column.max_count,
            column.max_file_bytes,
        ) = (None, None, None);
        (column.target_table_id, column.cardinality) = (None, None);
        column.default_value = None;
        type_change = Some(TypeChange {
            from: current.column_type,
            to,
        });
    }
    let t = column.column_type;
    if let Some(required) = changes.required {
        if t.is_computed() {
            return Err(TableError::config(
                "required is not allowed on computed columns",
            ));
        }
        column.required = required;
    }
    if let Some(max_length) = changes.max_length {
        if max_length.is_some() && !matches!(t, T::String | T::Text) {
            return Err(TableError::config(
                "max_length is only allowed on string and text columns",
            ));
        }
        if let Some(n) = max_length
            && !(1..=MAX_LENGTH).contains(&n)
        {
            return Err(TableError::config(format!(
                "max_length must be 1..{MAX_LENGTH}"
            )));
        }
        column.max_length = max_length;
    }
    let selectable = matches!(t, T::Select | T::MultiSelect);
    let mut removed_options = Vec::new();
    if let Some(options) = changes.options {
        if !selectable {
            return Err(TableError::config(
                "options are only allowed on select and multi_select columns",
            ));
        }
        check_options(&options)?;
        if type_change.is_none() {
            removed_options = current
                .options
                .iter()
                .flatten()
                .filter(|o| !options.contains(o))
                .cloned()
                .collect();
        }
        column.options = Some(options);
    }
    if selectable && column.options.is_none() {
        return Err(TableError::config(
            "options are required for select and multi_select",
        ));
    }
    let mut renames = BTreeMap::new();
    if let Some(requested) = changes.option_renames {
        if !selectable {
            return Err(TableError::config(
                "option_renames is only allowed on select and multi_select columns",
            ));
        }
        let mut options = column.options.clone().unwrap_or_default();
        for (old, new) in requested {
            let Some(slot) = options.iter().position(|o| *o == old) else {
                return Err(TableError::config(format!(
                    "option_renames: '{old}' is not an option"
                )));
            };
            let n = new.chars().count();
            if !(OPTION_CHARS.0..=OPTION_CHARS.1).contains(&n) || new.contains('\0') {
                return Err(TableError::config(format!(
                    "option_renames: '{new}' must be {}..{} characters",
                    OPTION_CHARS.0, OPTION_CHARS.1
                )));
            }
            if old != new {
                options[slot] = new.clone();
                renames.insert(old, new);
            }
        }
        let mut unique: Vec<String> = Vec::new();
        for option in options {
            if !unique.contains(&option) {
                unique.push(option);
            }
        }
        column.options = Some(unique);
        if let Some(Value::String(d)) = &column.default_value
            && let Some(new) = renames.get(d)
        {
            column.default_value = Some(Value::String(new.clone()));
        }
    }
    if let Some(default) = changes.default_value {
        if t.is_computed() {
            return Err(TableError::config(
                "default_value is not allowed on computed columns",
            ));
        }
        column.default_value = default;
    }
    let default = column.default_value.take();
    column.default_value = normalize_default(&column, default)?;
    Ok(Updated {
        column,
        type_change,
        renames,
        removed_options,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn select() -> ColumnDef {
        ColumnDef {
            options: Some(vec!["open".into(), "done".into()]),
            ..ColumnDef::new("col_1", "Status", ColumnType::Select)
        }
    }

    #[test]
    fn renames_and_options_do_not_mix() {
        let changes = ColumnChanges {
            options: Some(vec!["a".into()]),
            option_renames: Some([("open".to_string(), "new".to_string())].into()),
            ..Default::default()
        };
        assert!(matches!(
            apply_changes(&select(), changes, &[select()]),
            Err(TableError::ColumnConfig(_))
        ));
    }

    #[test]
    fn renames_rewrite_the_option_list() {
        let changes = ColumnChanges {
            option_renames: Some([("open".to_string(), "todo".to_string())].into()),
            ..Default::default()
        };
        let updated = apply_changes(&select(), changes, &[select()]).unwrap();
        assert_eq!(
            updated.column.options,
            Some(vec!["todo".into(), "done".into()])
        );
        assert_eq!(updated.renames.len(), 1);
    }

    #[test]
    fn removed_options_are_reported() {
        let changes = ColumnChanges {
            options: Some(vec!["open".into()]),
            ..Default::default()
        };
        let updated = apply_changes(&select(), changes, &[select()]).unwrap();
        assert_eq!(updated.removed_options, vec!["done".to_string()]);
    }

    #[test]
    fn conversions() {
        use ColumnType as T;
        assert!(conversion_allowed(T::String, T::Integer));
        assert!(conversion_allowed(T::Link, T::Json));
        assert!(!conversion_allowed(T::String, T::Link));
        assert!(!conversion_allowed(T::Link, T::Integer));
        assert!(!conversion_allowed(T::Integer, T::Formula));
        assert!(!conversion_allowed(T::String, T::User));
        assert!(!conversion_allowed(T::Json, T::Principal));
        assert!(conversion_allowed(T::User, T::Principal));
        assert!(conversion_allowed(T::Principal, T::String));
        let to_select = ColumnChanges {
            column_type: Some(T::Select),
            ..Default::default()
        };
        let mut text = select();
        text.column_type = T::String;
        text.options = None;
        assert!(
            apply_changes(&text, to_select, &[]).is_err(),
            "select needs options"
        );
    }
}
