//! The anonymous public read API (spec `custom-tables.md` section 4, "Public read"):
//! `GET .../read/{token_id}/records`, `.../records/{record_id}` and
//! `POST .../read/{token_id}/query`, under `/public/module/custom_tables`.
//!
//! Order of checks: request validation (`skip`/`limit` 422; the query body's size
//! 413 before anything else), then the token ([`published::open`]: the uniform
//! 404, then its rate window, 429), then the query body (400). Reads return only
//! the fields the spec lists: per row `id`, `created_at`, `updated_at`, `data` by
//! display name; per page `records`, `total`, `table_name`, `columns`.

mod published;
pub mod query;

use crate::error::{ApiError, ApiResult};
use crate::extract::ApiQuery;
use crate::middleware::body_limit::read_capped;
use crate::routes::tables::records::window;
use crate::state::AppState;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use domain::tables::query::resolve_filter;
use projections::read_models::tables::read::{RecordRow, Selection};
use published::Published;
use query::{PublicQueryRequest, invalid_body};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// Where the public read routes live.
pub const PUBLIC_READ_PREFIX: &str = "/public/module/custom_tables/read";
/// Most bytes of a query body (16,384 is accepted, 16,385 is 413).
pub const MAX_QUERY_BODY: usize = 16_384;

/// The public read routes (absolute paths; no authentication layer).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(public_records))
        .routes(routes!(public_record))
        .routes(routes!(public_query))
}

/// `PublicColumnInfo`.
#[derive(Debug, Serialize, ToSchema)]
pub struct PublicColumnInfo {
    /// Display name.
    pub name: String,
    /// Column type.
    #[serde(rename = "type")]
    pub column_type: String,
}

/// `PublicRecordOut`.
#[derive(Debug, Serialize, ToSchema)]
pub struct PublicRecordOut {
    /// Record id.
    pub id: Uuid,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last changed.
    pub updated_at: DateTime<Utc>,
    /// Published cells by display name (unpublished columns are absent).
    #[schema(value_type = Object)]
    pub data: Map<String, Value>,
}

/// `PublicRecordListResponse`.
#[derive(Debug, Serialize, ToSchema)]
pub struct PublicRecordListResponse {
    /// The published columns.
    pub columns: Vec<PublicColumnInfo>,
    /// One page.
    pub records: Vec<PublicRecordOut>,
    /// The table's display name.
    pub table_name: String,
    /// Published records matching, before paging.
    pub total: i64,
}

/// Paging of the records route.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// Rows to skip (default 0).
    pub skip: Option<i64>,
    /// Rows to return, 1..100 (default 50).
    pub limit: Option<i64>,
}

fn record(row: RecordRow) -> PublicRecordOut {
    PublicRecordOut {
        id: row.id,
        created_at: row.created_at,
        updated_at: row.updated_at,
        data: row
            .cells
            .into_iter()
            .map(|(column, value)| (column.name, value))
            .collect(),
    }
}

/// One page of the published rows and their total. The total is counted once per
/// table version for all the pages of a selection (unless the rows depend on the
/// clock); until then the page query counts too.
async fn page(
    state: &AppState,
    published: &Published,
    selection: &Selection,
) -> ApiResult<PublicRecordListResponse> {
    let handle = published.handle();
    let totals = &state.public_reads.totals;
    let (token, version) = (published.token.id, published.table.data_version);
    let selected = format!("{:?} {:?}", selection.condition, selection.q);
    let key = hex::encode(Sha256::digest(selected));
    let pool = &state.pool;
    let (rows, total) = match totals.get(token, &key, version) {
        Some(total) => (
            handle
                .page(pool, selection)
                .await
                .map_err(ApiError::Internal)?,
            total,
        ),
        None => {
            let (rows, counted) = handle
                .page_counted(pool, selection)
                .await
                .map_err(ApiError::Internal)?;
            let total = match counted {
                Some(total) => total,
                None => handle
                    .count(pool, selection)
                    .await
                    .map_err(ApiError::Internal)?,
            };
            if !published.time_dependent {
                totals.put(token, key, version, total);
            }
            (rows, total)
        }
    };
    Ok(PublicRecordListResponse {
        columns: published
            .columns
            .iter()
            .map(|c| PublicColumnInfo {
                name: c.name.clone(),
                column_type: c.column_type.as_str().into(),
            })
            .collect(),
        records: rows.into_iter().map(record).collect(),
        table_name: published.table.name.clone(),
        total,
    })
}

/// A JSON answer from its bytes.
fn json_answer(body: Bytes) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// Serves `request` of the token from the answer cache while its table is
/// unchanged; otherwise computes it, and keeps it unless it depends on the clock.
async fn answer<T, F>(
    state: &AppState,
    raw_token: &str,
    headers: &HeaderMap,
    request: String,
    compute: F,
) -> ApiResult<Response>
where
    T: Serialize,
    F: AsyncFnOnce(&Published) -> ApiResult<T>,
{
    let (token, table) = published::authenticate(state, raw_token, headers).await?;
    let version = table.data_version;
    let answers = &state.public_reads.answers;
    if let Some(body) = answers.get(token.id, &request, version) {
        return Ok(json_answer(body));
    }
    let published = published::publish(state, token, table).await?;
    let value = compute(&published).await?;
    let body = Bytes::from(serde_json::to_vec(&value).map_err(|e| ApiError::Internal(e.into()))?);
    if !published.time_dependent {
        answers.put(published.token.id, request, version, body.clone());
    }
    Ok(json_answer(body))
}

/// A page of the records a token publishes.
#[utoipa::path(get, path = "/public/module/custom_tables/read/{token_id}/records", tag = "custom_tables_public",
    params(("token_id" = String, Path), PageQuery),
    responses((status = 200, body = PublicRecordListResponse)))]
async fn public_records(
    State(state): State<AppState>,
    Path(token_id): Path<String>,
    headers: HeaderMap,
    ApiQuery(paging): ApiQuery<PageQuery>,
) -> ApiResult<Response> {
    let (skip, limit) = window(paging.skip, paging.limit, "query")?;
    let request = format!("records {skip} {limit}");
    answer(&state, &token_id, &headers, request, async |published| {
        let mut selection = published.selection(None);
        selection.offset = skip;
        selection.limit = Some(limit);
        page(&state, published, &selection).await
    })
    .await
}

/// One published record.
#[utoipa::path(get, path = "/public/module/custom_tables/read/{token_id}/records/{record_id}", tag = "custom_tables_public",
    params(("token_id" = String, Path), ("record_id" = String, Path)),
    responses((status = 200, body = PublicRecordOut)))]
async fn public_record(
    State(state): State<AppState>,
    Path((token_id, record_id)): Path<(String, String)>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let request = format!("record {record_id}");
    answer(&state, &token_id, &headers, request, async |published| {
        let record_id = Uuid::parse_str(&record_id).map_err(|_| ApiError::NotFound)?;
        let by_id = resolve_filter(
            &json!({"column": "id", "op": "eq", "value": record_id}),
            &published.columns,
        )?;
        let mut selection = published.selection(Some(by_id));
        selection.limit = Some(1);
        let row = published
            .handle()
            .page(&state.pool, &selection)
            .await
            .map_err(ApiError::Internal)?
            .pop()
            .ok_or(ApiError::NotFound)?;
        Ok(record(row))
    })
    .await
}

/// Filters, searches and sorts the published rows (tokens with `allow_query`).
#[utoipa::path(post, path = "/public/module/custom_tables/read/{token_id}/query", tag = "custom_tables_public",
    params(("token_id" = String, Path)), request_body = PublicQueryRequest,
    responses((status = 200, body = PublicRecordListResponse)))]
async fn public_query(
    State(state): State<AppState>,
    Path(token_id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    let bytes = read_capped(&headers, body, MAX_QUERY_BODY).await?;
    let request = format!("query {}", hex::encode(Sha256::digest(&bytes)));
    answer(&state, &token_id, &headers, request, async |published| {
        if !published.token.allow_query {
            return Err(ApiError::NotFound);
        }
        let request: PublicQueryRequest = if bytes.iter().all(u8::is_ascii_whitespace) {
            PublicQueryRequest::default()
        } else {
            serde_json::from_slice(&bytes).map_err(invalid_body)?
        };
        let resolved = query::resolve(published, &request)?;
        let mut selection = published.selection(resolved.condition);
        if let Some(sort) = resolved.sort {
            selection.sort = sort;
        }
        selection.q = resolved.q;
        selection.offset = resolved.skip;
        selection.limit = Some(resolved.limit);
        page(&state, published, &selection).await
    })
    .await
}
