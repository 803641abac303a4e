//! `PublicQueryRequest` (spec `custom-tables.md` section 2): a closed set of
//! members turned into a condition and a sort over the published columns only.
//!
//! Every column a filter or sort names must be published: a computed one (link,
//! rollup, lookup, formula) answers `Cannot filter on computed column '<key>'`
//! (`Cannot sort on computed column`), any other unpublished or unknown one the
//! same `Column '<key>' does not exist in table schema`, so a hidden column cannot
//! be told from a missing one.

use super::published::Published;
use crate::error::{ApiError, ApiResult};
use domain::tables::TableError;
use domain::tables::query::NAME_OPS;
use domain::tables::query::{self, Condition, Field, Order};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use utoipa::ToSchema;

/// Most records one page returns.
pub const MAX_LIMIT: i64 = 100;

/// One sort key.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PublicSortKey {
    /// Internal key of a published scalar column, or `id`, `created_at`, `updated_at`.
    pub column: String,
    /// `asc` (default) or `desc`.
    pub order: Option<String>,
}

/// `PublicQueryRequest`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PublicQueryRequest {
    /// Internal key to value: equality, a partial case-insensitive match for string
    /// and text columns; ANDed onto the view (the view wins on a key it filters).
    #[schema(value_type = Option<Object>)]
    pub filters: Option<Map<String, Value>>,
    /// Typed predicates `{column, op, value}`, ANDed.
    #[schema(value_type = Option<Vec<Object>>)]
    pub stored_filters: Option<Vec<Value>>,
    /// OR-groups: each entry a predicate or a list of predicates (ANDed); the block
    /// is ANDed with the rest.
    #[schema(value_type = Option<Vec<Object>>)]
    pub any_of: Option<Vec<Value>>,
    /// Case-insensitive substring over published string and text columns.
    pub q: Option<String>,
    /// One sort column.
    pub sort_by: Option<String>,
    /// `asc` or `desc`.
    #[schema(schema_with = crate::openapi::shapes::sort_order)]
    pub sort_order: Option<String>,
    /// Sort keys (take precedence over `sort_by`).
    pub sort: Option<Vec<PublicSortKey>>,
    /// Rows to skip (at least 0).
    pub skip: Option<i64>,
    /// Rows to return, 1..100 (default 50).
    pub limit: Option<i64>,
}

fn bad(message: String) -> ApiError {
    ApiError::from(TableError::InvalidQuery(message))
}

/// A body problem (400 `invalid body: ...`).
pub fn invalid_body(message: impl std::fmt::Display) -> ApiError {
    bad(format!("invalid body: {message}"))
}

const SYSTEM_FIELDS: [&str; 3] = ["id", "created_at", "updated_at"];

/// Checks that a filter or sort may name `reference`.
fn check_column(published: &Published, reference: &str, sorting: bool) -> ApiResult<()> {
    if SYSTEM_FIELDS.contains(&reference) {
        return Ok(());
    }
    let named = |c: &&domain::tables::column::ColumnDef| c.key == reference || c.name == reference;
    // Listed columns only: a hidden one answers as a missing one does.
    let computed = published
        .all_columns
        .iter()
        .filter(|c| published.lists(c))
        .filter(named)
        .any(|c| c.column_type.is_computed());
    if computed {
        return Err(bad(if sorting {
            "Cannot sort on computed column".into()
        } else {
            format!("Cannot filter on computed column '{reference}'")
        }));
    }
    if !published.columns.iter().any(|c| c.key == reference) {
        return Err(bad(format!(
            "Column '{reference}' does not exist in table schema"
        )));
    }
    Ok(())
}

/// Checks every column a predicate tree names (link leaves are computed).
fn check_tree(published: &Published, node: &Value) -> ApiResult<()> {
    match node {
        Value::Object(fields) => {
            for (key, value) in fields {
                match (key.as_str(), value) {
                    ("column", Value::String(reference)) => {
                        check_column(published, reference, false)?
                    }
                    ("link", Value::String(reference)) => {
                        return Err(bad(format!(
                            "Cannot filter on computed column '{reference}'"
                        )));
                    }
                    ("op", Value::String(op)) if NAME_OPS.contains(&op.as_str()) => {
                        return Err(bad(format!(
                            "the operator '{op}' is not available on public reads"
                        )));
                    }
                    _ => check_tree(published, value)?,
                }
            }
            Ok(())
        }
        Value::Array(items) => items.iter().try_for_each(|v| check_tree(published, v)),
        _ => Ok(()),
    }
}

/// The caller's filters as one filter tree (`None` when there are none).
fn filter_tree(published: &Published, body: &PublicQueryRequest) -> ApiResult<Option<Value>> {
    let mut all = Vec::new();
    for (key, value) in body.filters.iter().flatten() {
        check_column(published, key, false)?;
        if published.view.filters_by(key) {
            continue;
        }
        let textual = published
            .columns
            .iter()
            .find(|c| c.key == *key)
            .is_some_and(|c| c.column_type.is_textual());
        all.push(match value {
            Value::Null => json!({"column": key, "op": "is_null"}),
            _ if textual => json!({"column": key, "op": "contains", "value": value}),
            _ => json!({"column": key, "op": "eq", "value": value}),
        });
    }
    for node in body.stored_filters.iter().flatten() {
        check_tree(published, node)?;
        all.push(node.clone());
    }
    if let Some(groups) = &body.any_of {
        check_tree(published, &Value::Array(groups.clone()))?;
        let branches: Vec<Value> = groups
            .iter()
            .map(|group| match group {
                Value::Array(items) if items.len() == 1 => items[0].clone(),
                Value::Array(items) => json!({"and": items}),
                other => other.clone(),
            })
            .collect();
        if !branches.is_empty() {
            all.push(json!({"or": branches}));
        }
    }
    Ok(match all.len() {
        0 => None,
        1 => all.pop(),
        _ => Some(json!({"and": all})),
    })
}

fn order(order: Option<&str>) -> ApiResult<Order> {
    match order.unwrap_or("asc") {
        "asc" => Ok(Order::Asc),
        "desc" => Ok(Order::Desc),
        other => Err(invalid_body(format!(
            "sort order must be asc or desc, not '{other}'"
        ))),
    }
}

/// The caller's sort (`None`: the view's).
fn sort(
    published: &Published,
    body: &PublicQueryRequest,
) -> ApiResult<Option<Vec<(Field, Order)>>> {
    let keys: Vec<(String, Option<String>)> = match (&body.sort, &body.sort_by) {
        (Some(keys), _) => keys
            .iter()
            .map(|k| (k.column.clone(), k.order.clone()))
            .collect(),
        (None, Some(column)) => vec![(column.clone(), body.sort_order.clone())],
        (None, None) => return Ok(None),
    };
    keys.iter()
        .map(|(column, direction)| {
            check_column(published, column, true)?;
            let field = query::sort_field(&published.columns, column).map_err(ApiError::from)?;
            Ok((field, order(direction.as_deref())?))
        })
        .collect::<ApiResult<_>>()
        .map(Some)
}

/// What a query selects: an extra condition, the sort, `q`, and the window.
pub struct Resolved {
    /// ANDed onto the published rows.
    pub condition: Option<Condition>,
    /// Replaces the view's sort when set.
    pub sort: Option<Vec<(Field, Order)>>,
    /// Substring search.
    pub q: Option<String>,
    /// Rows to skip.
    pub skip: i64,
    /// Rows to return.
    pub limit: i64,
}

/// Resolves a query body against what the token publishes.
pub fn resolve(published: &Published, body: &PublicQueryRequest) -> ApiResult<Resolved> {
    let skip = body.skip.unwrap_or(0);
    let limit = body.limit.unwrap_or(50);
    if skip < 0 {
        return Err(invalid_body("skip must be at least 0"));
    }
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(invalid_body("limit must be between 1 and 100"));
    }
    let condition = filter_tree(published, body)?
        .map(|tree| query::resolve_filter(&tree, &published.columns))
        .transpose()?;
    Ok(Resolved {
        condition,
        sort: sort(published, body)?,
        q: body.q.clone(),
        skip,
        limit,
    })
}
