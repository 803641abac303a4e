//! `POST .../records/search` and `POST .../records/aggregate`.

use super::gates::Operation;
use super::records::{RecordListResponse, page, window};
use super::scope::{Mount, OpenTable, open_table};
use super::selection::{self, Query, SortSpec};
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;
use crate::request::Caller;
use crate::state::AppState;
use axum::Json;
use domain::tables::TableError;
use domain::tables::access::both;
use domain::tables::query::{self, AggregateOp, Condition, Field, Op};
use projections::read_models::review::query as review;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// Search and aggregate routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(search_records))
        .routes(routes!(aggregate_records))
}

/// The record search body.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordSearch {
    /// Row filter: `{and: [...]}`, `{or: [...]}`, `{not: node}` or
    /// `{column, op, value}` (op: eq, neq, gt, gte, lt, lte, in, contains, is_null,
    /// is_not_null, name_eq, name_contains).
    #[schema(value_type = Option<Object>)]
    pub filter: Option<Value>,
    /// Case-insensitive substring over string and text columns.
    pub q: Option<String>,
    /// Sort keys (take precedence over `sort_by`).
    pub sort: Option<Vec<SortSpec>>,
    /// One sort column.
    pub sort_by: Option<String>,
    /// `asc` or `desc`.
    #[schema(schema_with = crate::openapi::shapes::sort_order)]
    pub sort_order: Option<String>,
    /// Columns to return (internal keys or display names).
    pub columns: Option<Vec<String>>,
    /// A stored view whose filter, sort and projection apply first.
    pub view_id: Option<Uuid>,
    /// Rows to skip.
    pub skip: Option<i64>,
    /// Rows to return, 1..100.
    pub limit: Option<i64>,
    /// Only rows the caller may (true) or may not (false) edit.
    pub editable: Option<bool>,
    /// Only rows with (true) or without (false) a pending approval.
    pub pending_approval: Option<bool>,
}

/// Searches records: filter, search, sort, paging.
#[utoipa::path(post, path = "/tables/{table_id}/records/search", tag = "custom_tables", request_body = RecordSearch,
    params(("table_id" = Uuid, Path, description = "The table")),
    responses((status = 200, body = RecordListResponse)))]
async fn search_records(
    caller: Caller,
    mount: Mount,
    ApiJson(body): ApiJson<RecordSearch>,
) -> ApiResult<Json<RecordListResponse>> {
    let table = open_table(&caller, &mount, Operation::ReadRows).await?;
    Ok(Json(search(&table, body).await?))
}

/// One page of a search of an opened table, as the table's caller (the records
/// search route and query Commands).
pub async fn search(table: &OpenTable, body: RecordSearch) -> ApiResult<RecordListResponse> {
    let caller = &table.caller;
    let (skip, limit) = window(body.skip, body.limit, "body")?;
    let sort = body.sort.or_else(|| {
        body.sort_by.map(|column| {
            vec![SortSpec {
                column,
                order: body.sort_order,
            }]
        })
    });
    let query = Query {
        filter: body.filter,
        q: body.q,
        sort,
        columns: body.columns,
        view_id: body.view_id,
    };
    let mut selection = selection::resolve(&caller.state, table, query).await?;
    if let Some(pending) = body.pending_approval {
        // Records with an update held for approval (a held creation has no row).
        let ids = review::pending_records(caller.pool(), table.row.id).await?;
        let held = Condition::Test {
            field: Field::Id,
            op: Op::In,
            operands: ids
                .into_iter()
                .map(|id| Value::String(id.to_string()))
                .collect(),
        };
        let held = if pending {
            held
        } else {
            Condition::Not(Box::new(held))
        };
        selection.condition = Some(match selection.condition.take() {
            Some(condition) => Condition::And(vec![condition, held]),
            None => held,
        });
    }
    if let Some(editable) = body.editable {
        // A row whose edit right cannot be decided (an unresolvable policy) is not
        // editable: it belongs to `editable=false`.
        let rows = Condition::IsTrue(Box::new(table.access.editable()));
        let rows = if editable {
            rows
        } else {
            Condition::Not(Box::new(rows))
        };
        selection.access = Some(both(table.access.visible(), rows));
    }
    selection.limit = Some(limit);
    selection.offset = skip;
    page(&caller.state, table, &selection).await
}

/// One aggregation.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AggregationSpec {
    /// count, count_distinct, sum, avg, min, max.
    pub op: String,
    /// The column (not needed for count).
    pub column: Option<String>,
    /// Name of the value in the result (default `<op>` or `<op>_<column>`).
    pub alias: Option<String>,
}

/// The aggregate body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordAggregate {
    /// Row filter (as in search).
    #[schema(value_type = Option<Object>)]
    pub filter: Option<Value>,
    /// Substring over string and text columns.
    pub q: Option<String>,
    /// A stored view whose filter applies first.
    pub view_id: Option<Uuid>,
    /// Group keys (scalar columns; principal groups by the tagged string).
    pub group_by: Option<Vec<String>>,
    /// The values to compute (1..20).
    #[schema(min_items = 1, max_items = 20)]
    pub aggregations: Vec<AggregationSpec>,
}

/// One group.
#[derive(Debug, Serialize, ToSchema)]
pub struct AggregateGroup {
    /// Group key values by column display name.
    #[schema(value_type = Object)]
    pub key: Map<String, Value>,
    /// Computed values by alias.
    #[schema(value_type = Object)]
    pub values: Map<String, Value>,
}

/// The aggregate result (at most 1,000 groups).
#[derive(Debug, Serialize, ToSchema)]
pub struct RecordAggregateResponse {
    /// The groups, ordered by key.
    pub groups: Vec<AggregateGroup>,
}

fn invalid(message: String) -> ApiError {
    ApiError::from(TableError::InvalidQuery(message))
}

/// Groups and aggregates matching records.
#[utoipa::path(post, path = "/tables/{table_id}/records/aggregate", tag = "custom_tables", request_body = RecordAggregate,
    params(("table_id" = Uuid, Path, description = "The table")),
    responses((status = 200, body = RecordAggregateResponse)))]
async fn aggregate_records(
    caller: Caller,
    mount: Mount,
    ApiJson(body): ApiJson<RecordAggregate>,
) -> ApiResult<Json<RecordAggregateResponse>> {
    let table = open_table(&caller, &mount, Operation::ReadRows).await?;
    if body.aggregations.is_empty() || body.aggregations.len() > 20 {
        return Err(invalid("aggregations must hold 1..20 entries".into()));
    }
    let group_names = body.group_by.unwrap_or_default();
    let group_by = group_names
        .iter()
        .map(|r| query::group_field(&table.columns, r).map_err(ApiError::from))
        .collect::<ApiResult<Vec<_>>>()?;
    let mut aggregations = Vec::new();
    let mut aliases = Vec::new();
    for spec in &body.aggregations {
        let op = AggregateOp::parse(&spec.op)
            .ok_or_else(|| invalid(format!("unknown aggregation '{}'", spec.op)))?;
        let field = spec
            .column
            .as_deref()
            .map(|c| query::field(&table.columns, c).map_err(ApiError::from))
            .transpose()?;
        op.check(field.as_ref()).map_err(ApiError::from)?;
        aliases.push(spec.alias.clone().unwrap_or_else(|| match &spec.column {
            Some(c) => format!("{}_{c}", spec.op),
            None => spec.op.clone(),
        }));
        aggregations.push((op, field));
    }
    let query = Query {
        filter: body.filter,
        q: body.q,
        view_id: body.view_id,
        ..Default::default()
    };
    let selection = selection::resolve(&caller.state, &table, query).await?;
    let rows = table
        .handle()
        .aggregate(caller.pool(), &selection, &group_by, &aggregations)
        .await
        .map_err(ApiError::Internal)?;
    let key_names: Vec<String> = group_by
        .iter()
        .zip(&group_names)
        .map(|(f, r)| match f {
            query::Field::Column(c) => c.name.clone(),
            _ => r.clone(),
        })
        .collect();
    let groups = rows
        .into_iter()
        .map(|(keys, values)| AggregateGroup {
            key: key_names.iter().cloned().zip(keys).collect(),
            values: aliases.iter().cloned().zip(values).collect(),
        })
        .collect();
    Ok(Json(RecordAggregateResponse { groups }))
}
