//! The shared query part of search, aggregate and export bodies: filter, `q`, sort,
//! projection and a stored view, resolved against the table's columns.

use super::scope::OpenTable;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::throttle::Admission;
use axum::http::{HeaderValue, header};
use domain::error::Code;
use domain::tables::TableError;
use domain::tables::query::uses_name_ops;
use domain::tables::query::{self, Condition, Field, Order};
use domain::tables::table::ViewDef;
use projections::read_models::tables::query as tables;
use projections::read_models::tables::read::Selection;
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

/// One sort key.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SortSpec {
    /// Internal key, display name, `id`, `created_at` or `updated_at`.
    pub column: String,
    /// `asc` (default) or `desc`.
    pub order: Option<String>,
}

/// What to select.
#[derive(Debug, Clone, Default)]
pub struct Query {
    /// Row filter (boolean tree).
    pub filter: Option<Value>,
    /// Substring over string and text columns.
    pub q: Option<String>,
    /// Sort keys.
    pub sort: Option<Vec<SortSpec>>,
    /// Projected columns.
    pub columns: Option<Vec<String>>,
    /// A stored view to start from.
    pub view_id: Option<Uuid>,
}

fn order(order: Option<&str>) -> ApiResult<Order> {
    match order.unwrap_or("asc") {
        "asc" => Ok(Order::Asc),
        "desc" => Ok(Order::Desc),
        other => Err(ApiError::from(TableError::InvalidQuery(format!(
            "sort order must be asc or desc, not '{other}'"
        )))),
    }
}

/// Resolves sort keys against the columns the caller sees.
pub fn sort_keys(table: &OpenTable, keys: &[SortSpec]) -> ApiResult<Vec<(Field, Order)>> {
    keys.iter()
        .map(|k| {
            let field = query::sort_field(&table.columns, &k.column).map_err(ApiError::from)?;
            Ok((field, order(k.order.as_deref())?))
        })
        .collect()
}

async fn view(state: &AppState, table: &OpenTable, view_id: Uuid) -> ApiResult<ViewDef> {
    tables::view(&state.pool, table.row.id, view_id)
        .await?
        .filter(|v| table.sees_view(v))
        .ok_or(ApiError::NotFound)
}

/// The selection a query asks for, within the rows the caller sees and over the
/// columns it sees (a view filtering or sorting by a hidden column is not found).
pub async fn resolve(state: &AppState, table: &OpenTable, q: Query) -> ApiResult<Selection> {
    let view = match q.view_id {
        Some(id) => Some(view(state, table, id).await?),
        None => None,
    };
    let filters: Vec<Value> = [view.as_ref().and_then(|v| v.filter.clone()), q.filter]
        .into_iter()
        .flatten()
        .collect();
    admit_name_resolution(state, table, &filters)?;
    let mut conditions: Vec<Condition> = Vec::new();
    for filter in filters {
        conditions.push(query::resolve_filter(&filter, &table.columns).map_err(ApiError::from)?);
    }
    let condition = match conditions.len() {
        0 => None,
        1 => conditions.pop(),
        _ => Some(Condition::And(conditions)),
    };
    let sort = match (q.sort, &view) {
        (Some(keys), _) => sort_keys(table, &keys)?,
        (None, Some(view)) => {
            let keys: Vec<SortSpec> = view
                .sort
                .iter()
                .map(|k| SortSpec {
                    column: k.column.clone(),
                    order: Some(k.order.clone()),
                })
                .collect();
            sort_keys(table, &keys)?
        }
        (None, None) => Vec::new(),
    };
    let mut projection = view.and_then(|v| v.columns);
    if let Some(names) = q.columns {
        let keys: Vec<String> = names
            .iter()
            .map(
                |r| match query::field(&table.columns, r).map_err(ApiError::from)? {
                    Field::Column(c) => Ok(c.key.clone()),
                    _ => Err(ApiError::from(TableError::InvalidQuery(format!(
                        "'{r}' is not a column"
                    )))),
                },
            )
            .collect::<ApiResult<_>>()?;
        projection = Some(match projection {
            Some(allowed) => keys.into_iter().filter(|k| allowed.contains(k)).collect(),
            None => keys,
        });
    }
    Ok(Selection {
        condition,
        q: q.q,
        sort,
        projection,
        ..table.selection()
    })
}

/// Name resolutions (`name_eq`, `name_contains`) one caller may run on one table
/// per 300 seconds: users (internal) and social media clients (external; spec
/// `custom-tables.md` section 8).
pub const NAME_RESOLUTIONS: (i64, i64) = (30, 10);

/// Counts a selection that matches people by name against the caller's budget on
/// the table: 429 `name_resolution_rate_limited` (with `Retry-After`) past it.
fn admit_name_resolution(state: &AppState, table: &OpenTable, filters: &[Value]) -> ApiResult<()> {
    if !filters.iter().any(uses_name_ops) {
        return Ok(());
    }
    let principal = &table.caller.principal;
    let external = principal.principal_type == domain::principal::PrincipalType::SocialMediaClient;
    let limit = if external {
        NAME_RESOLUTIONS.1
    } else {
        NAME_RESOLUTIONS.0
    };
    let key = Uuid::new_v5(&table.row.id, principal.principal_id.as_bytes());
    match state.name_throttle.admit(key, limit, std::time::Instant::now()) {
        Admission::Allowed { .. } => Ok(()),
        Admission::Limited { retry_after } => Err(ApiError::code(
            Code::NameResolutionRateLimited,
            format!("at most {limit} name resolutions per 300 seconds on this table; retry in {retry_after} s"),
        )
        .with_header(header::RETRY_AFTER, HeaderValue::from(retry_after))),
    }
}
