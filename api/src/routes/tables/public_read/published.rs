//! Opening a public read token: authentication, the uniform 404, the token's rate
//! window, and what the token publishes (the intersection of the table's columns,
//! the view's projection and the token's allowlist; the view's filter AND the
//! token's row policy; the view's sort).
//!
//! Every failure that could tell a stranger something about a token (unknown,
//! revoked, expired, a wrong or missing secret, a deleted table, a stale view, a
//! table now governed by a channel policy) is the same [`ApiError::NotFound`].

use crate::answer_cache::Schema;
use crate::error::{ApiError, ApiResult};
use crate::routes::tables::public_tokens::{bearer, never_published, proves_secret};
use crate::state::AppState;
use crate::throttle::Admission;
use axum::http::{HeaderMap, HeaderValue, header};
use chrono::Utc;
use domain::error::Code;
use domain::tables::column::ColumnDef;
use domain::tables::formula;
use domain::tables::policy::{self, Mode, Targets, Tokens};
use domain::tables::query::{self, Condition, Field, Order};
use domain::tables::table::ViewDef;
use domain::tables::token_lifecycle::readable;
use projections::read_models::public_tokens::query::{self as tokens, PublicTokenRow};
use projections::read_models::tables::query::{self as tables, TableRow};
use projections::read_models::tables::read::{Selection, TableHandle};
use std::sync::Arc;
use std::time::Instant;
use uuid::Uuid;

/// What a token publishes.
pub struct Published {
    /// The token.
    pub token: PublicTokenRow,
    /// Its table.
    pub table: TableRow,
    /// The view it publishes.
    pub view: ViewDef,
    /// Every column of the table (for reporting computed columns by name).
    pub all_columns: Vec<ColumnDef>,
    /// The columns a reader sees, in table order.
    pub columns: Vec<ColumnDef>,
    /// The view's filter AND the token's row policy.
    pub rows: Option<Condition>,
    /// The view's sort.
    pub sort: Vec<(Field, Order)>,
    /// Whether the rows depend on the clock (`$today`, `$now`), so that an answer
    /// may not be kept.
    pub time_dependent: bool,
}

/// Whether the view and the token list the column (whatever its type).
fn listed(view: &ViewDef, token: &PublicTokenRow, key: &String) -> bool {
    let lists = |keys: &Option<Vec<String>>| keys.as_ref().is_none_or(|keys| keys.contains(key));
    lists(&view.columns) && lists(&token.visible_columns)
}

impl Published {
    /// Whether the view and the token list the column: a column they do not list
    /// is hidden, and answers as a missing one does.
    pub fn lists(&self, column: &ColumnDef) -> bool {
        listed(&self.view, &self.token, &column.key)
    }

    /// The read handle over the visible columns.
    pub fn handle(&self) -> TableHandle {
        TableHandle {
            company_id: self.table.company_id,
            table_id: self.table.id,
            columns: self.columns.clone(),
            gates: Vec::new(),
        }
    }

    /// A selection of the published rows with `extra` ANDed on.
    pub fn selection(&self, extra: Option<Condition>) -> Selection {
        let condition = match (self.rows.clone(), extra) {
            (Some(rows), Some(extra)) => Some(Condition::And(vec![rows, extra])),
            (rows, extra) => rows.or(extra),
        };
        Selection {
            condition,
            sort: self.sort.clone(),
            ..Default::default()
        }
    }
}

/// Whether the request carries the token's secret (`Authorization: Bearer`).
fn carries_secret(headers: &HeaderMap, secret_sha256: Option<&str>) -> bool {
    secret_sha256
        .is_some_and(|expected| proves_secret(bearer(headers).unwrap_or_default(), expected))
}

/// Whether a filter tree uses a clock token.
fn uses_clock(node: &serde_json::Value) -> bool {
    match node {
        serde_json::Value::String(s) => s == "$now" || s.starts_with("$today"),
        serde_json::Value::Array(items) => items.iter().any(uses_clock),
        serde_json::Value::Object(fields) => fields.values().any(uses_clock),
        _ => false,
    }
}

/// The token `raw` names, authenticated, inside its rate window, and its table.
pub async fn authenticate(
    state: &AppState,
    raw: &str,
    headers: &HeaderMap,
) -> ApiResult<(PublicTokenRow, TableRow)> {
    let token_id = Uuid::parse_str(raw).map_err(|_| ApiError::NotFound)?;
    let token = tokens::by_id(&state.pool, token_id)
        .await?
        .ok_or(ApiError::NotFound)?;
    let secret_ok = token.secretless || carries_secret(headers, token.secret_sha256.as_deref());
    if !secret_ok || !readable(token.revoked, token.valid_until, Utc::now()) {
        return Err(ApiError::NotFound);
    }
    let table = tables::table(&state.pool, token.company_id, token.table_id)
        .await?
        .filter(|t| t.channel_scope_column.is_none())
        .ok_or(ApiError::NotFound)?;
    match state.throttle.admit(token.id, token.rpm, Instant::now()) {
        Admission::Limited { retry_after } => Err(ApiError::code(
            Code::PublicTokenRateLimited,
            format!("rate limit exceeded ({}/min per token)", token.rpm),
        )
        .with_header(header::RETRY_AFTER, HeaderValue::from(retry_after))),
        Admission::Allowed { first } => {
            if first {
                tokens::touch(&state.pool, token.id, Utc::now()).await?;
            }
            Ok((token, table))
        }
    }
}

/// The view and the columns of the table as they stand at its data version.
async fn schema(state: &AppState, table: &TableRow, view_id: Uuid) -> ApiResult<Schema> {
    let cache = &state.public_reads.schemas;
    let key = view_id.to_string();
    if let Some(schema) = cache.get(table.id, &key, table.data_version) {
        return Ok(schema);
    }
    let (view, columns) = tokio::try_join!(
        tables::view(&state.pool, table.id, view_id),
        tables::columns(&state.pool, table.id)
    )?;
    let schema = Arc::new((view, columns));
    cache.put(table.id, key, table.data_version, schema.clone());
    Ok(schema)
}

/// What an authenticated token publishes, with its view still valid.
pub async fn publish(
    state: &AppState,
    token: PublicTokenRow,
    table: TableRow,
) -> ApiResult<Published> {
    let schema = schema(state, &table, token.view_id).await?;
    let (view, all_columns) = (schema.0.clone(), schema.1.clone());
    let view = view.ok_or(ApiError::NotFound)?;
    // A view changed since minting to filter or sort by a column reading another
    // table (rollups, lookups, formulas with cross-table references, which read them under a caller's permissions) publishes nothing.
    if all_columns
        .iter()
        .any(|c| !c.reads_tables().is_empty() && view.filters_or_sorts_by(&c.key))
    {
        return Err(ApiError::NotFound);
    }
    let shown = |c: &&ColumnDef| !never_published(c.column_type) && listed(&view, &token, &c.key);
    let unshown = all_columns
        .iter()
        .filter(|c| !shown(c))
        .map(|c| c.key.clone())
        .collect();
    // A formula is published only with every column it reads.
    let unshown = formula::with_dependents(&all_columns, unshown);
    let columns: Vec<ColumnDef> = all_columns
        .iter()
        .filter(|c| !unshown.contains(&c.key))
        .cloned()
        .collect();
    // A view that no longer resolves (a column it names was deleted or changed) is
    // stale: the token reads nothing.
    let stale = |_| ApiError::NotFound;
    if view
        .filter
        .as_ref()
        .is_some_and(domain::tables::query::uses_name_ops)
    {
        return Err(ApiError::NotFound);
    }
    let mut conditions = Vec::new();
    if let Some(filter) = &view.filter {
        conditions.push(query::resolve_filter(filter, &all_columns).map_err(stale)?);
    }
    if let Some(node) = &token.read_filter {
        let now = Utc::now();
        let tokens = Tokens {
            today: now.date_naive(),
            now,
            me: None,
            me_department: None,
        };
        let targets = Targets::new();
        conditions.push(
            policy::compile(&node.0, &all_columns, &targets, Mode::Read(&tokens)).map_err(stale)?,
        );
    }
    let rows = match conditions.len() {
        0 => None,
        1 => conditions.pop(),
        _ => Some(Condition::And(conditions)),
    };
    let sort = view
        .sort
        .iter()
        .map(|key| {
            let field = query::sort_field(&all_columns, &key.column).map_err(stale)?;
            let order = if key.order == "desc" {
                Order::Desc
            } else {
                Order::Asc
            };
            Ok((field, order))
        })
        .collect::<ApiResult<_>>()?;
    let time_dependent = view.filter.as_ref().is_some_and(uses_clock)
        || token.read_filter.as_ref().is_some_and(|f| uses_clock(&f.0));
    Ok(Published {
        time_dependent,
        token,
        table,
        view,
        all_columns,
        columns,
        rows,
        sort,
    })
}
