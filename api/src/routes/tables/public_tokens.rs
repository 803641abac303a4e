//! Public read token management (spec `custom-tables.md` section 4): mint, list
//! and revoke under `/{scopeName}/tables/{table_id}/public-read-tokens` (the mount
//! without a scope id; the table id names the owning scope). Table moderators only.
//!
//! Minting refuses what cannot be published: a table governed by a scoped channel
//! policy (409), a view that filters or sorts on a computed column, an attachment,
//! link, rollup or lookup column in the allowlist and a `$me` row policy (422), a
//! malformed row policy (400).

use super::columns::SuccessResponse;
use super::gates::Operation;
use super::public_read::PUBLIC_READ_PREFIX;
use super::scope::{Mount, open_table};
use crate::capability::{random_secret, random_token_id};
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;
use crate::request::Caller;
use crate::state::AppState;
use axum::Json;
use axum::http::{HeaderMap, header};
use chrono::{DateTime, Utc};
use domain::error::Code;
use domain::tables::TableError;
use domain::tables::column::{ColumnDef, ColumnType};
use domain::tables::policy::{self, Mode, Targets};
use domain::tables::public_token::{PublicReadToken, PublicTokenCommand, PublicTokenTerms};
use domain::tables::query::uses_name_ops;
use domain::tables::table::ViewDef;
use domain::{AggregateExt, SpecError};
use projections::read_models::public_tokens::query::{self as tokens, PublicTokenRow};
use projections::read_models::tables::query as tables;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// Default requests per minute of a token.
pub const DEFAULT_RPM: i64 = 60;
/// Most requests per minute a token may allow.
pub const MAX_RPM: i64 = 100_000;

/// The token routes (nested under each scope name).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(mint_token, list_tokens))
        .routes(routes!(revoke_token))
}

/// `PublicReadTokenMintPayload`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PublicReadTokenMintPayload {
    /// The view to publish (of this table).
    pub view_id: Uuid,
    /// Label.
    pub name: Option<String>,
    /// Column allowlist on top of the view's projection (internal keys or names).
    pub visible_columns: Option<Vec<String>>,
    /// Row policy ANDed onto the view.
    #[schema(value_type = Option<Object>)]
    pub read_filter: Option<Value>,
    /// Whether `POST .../query` answers (default false).
    pub allow_query: Option<bool>,
    /// Requests per minute (default 60, at most 100,000).
    pub rpm: Option<i64>,
    /// true: the token id is the capability; false (default): a Bearer secret is
    /// minted and shown once.
    pub secretless: Option<bool>,
    /// UTC expiry (null: none).
    pub valid_until: Option<DateTime<Utc>>,
}

/// `PublicReadTokenMintResponse`.
#[derive(Debug, Serialize, ToSchema)]
pub struct PublicReadTokenMintResponse {
    /// The token id.
    pub token_id: Uuid,
    /// The Bearer secret, shown once (null when secretless).
    pub secret: Option<String>,
    /// The records path of the token.
    pub url_path: String,
    /// The table.
    pub table_id: Uuid,
    /// The view.
    pub view_id: Uuid,
    /// Whether the query route answers.
    pub allow_query: bool,
    /// Requests per minute.
    pub rpm: i64,
    /// Whether the id alone is the capability.
    pub secretless: bool,
    /// Expiry.
    pub valid_until: Option<DateTime<Utc>>,
}

/// `PublicReadTokenInfo` (never the secret).
#[derive(Debug, Serialize, ToSchema)]
pub struct PublicReadTokenInfo {
    /// Token id.
    pub id: Uuid,
    /// Label.
    pub name: Option<String>,
    /// Table.
    pub table_id: Uuid,
    /// View.
    pub view_id: Uuid,
    /// Column allowlist (internal keys) or null.
    pub visible_columns: Option<Vec<String>>,
    /// Row policy or null.
    #[schema(value_type = Option<Object>)]
    pub read_filter: Option<Value>,
    /// Whether the query route answers.
    pub allow_query: bool,
    /// Requests per minute.
    pub rpm: i64,
    /// Expiry.
    pub valid_until: Option<DateTime<Utc>>,
    /// Whether it is revoked.
    pub revoked: bool,
    /// Minted by.
    pub created_by: String,
    /// Minted.
    pub created_at: DateTime<Utc>,
    /// Last read (at most a minute stale).
    pub last_used_at: Option<DateTime<Utc>>,
}

impl From<PublicTokenRow> for PublicReadTokenInfo {
    fn from(row: PublicTokenRow) -> Self {
        Self {
            id: row.id,
            name: row.name,
            table_id: row.table_id,
            view_id: row.view_id,
            visible_columns: row.visible_columns,
            read_filter: row.read_filter.map(|f| f.0),
            allow_query: row.allow_query,
            rpm: row.rpm,
            valid_until: row.valid_until,
            revoked: row.revoked,
            created_by: row.created_by,
            created_at: row.created_at,
            last_used_at: row.last_used_at,
        }
    }
}

/// `PublicReadTokenListResponse`.
#[derive(Debug, Serialize, ToSchema)]
pub struct PublicReadTokenListResponse {
    /// Newest first, revoked ones included.
    pub tokens: Vec<PublicReadTokenInfo>,
}

fn not_publishable(message: String) -> ApiError {
    ApiError::code(Code::NotPublishable, message)
}

/// Whether a column type is never published (spec: attachment, link, rollup and
/// lookup are always stripped; a formula is published with the columns it reads).
pub fn never_published(column_type: ColumnType) -> bool {
    matches!(
        column_type,
        ColumnType::Link | ColumnType::Rollup | ColumnType::Lookup | ColumnType::Attachment
    )
}

/// Refuses a view that filters or sorts on a link, rollup, lookup or formula column,
/// or matches people by their directory names.
fn check_view(columns: &[ColumnDef], view: &ViewDef) -> ApiResult<()> {
    if view.filter.as_ref().is_some_and(uses_name_ops) {
        return Err(not_publishable(
            "a view that matches people by name (name_eq, name_contains) cannot be published"
                .into(),
        ));
    }
    let computed = columns
        .iter()
        .find(|c| c.column_type.is_computed() && view.filters_or_sorts_by(&c.key));
    match computed {
        Some(column) => Err(not_publishable(format!(
            "a cross-table computed view cannot be published: it filters or sorts on the {} column '{}'",
            column.column_type.as_str(),
            column.name
        ))),
        None => Ok(()),
    }
}

/// The allowlist as internal keys.
fn allowlist(columns: &[ColumnDef], names: &[String]) -> ApiResult<Vec<String>> {
    names
        .iter()
        .map(|reference| {
            let column = columns
                .iter()
                .find(|c| c.key == *reference)
                .or_else(|| columns.iter().find(|c| c.name == *reference))
                .ok_or_else(|| {
                    ApiError::from(TableError::InvalidQuery(format!(
                        "Column '{reference}' does not exist in table schema"
                    )))
                })?;
            if never_published(column.column_type) {
                return Err(not_publishable(format!(
                    "may not publish the {} column '{}'",
                    column.column_type.as_str(),
                    column.name
                )));
            }
            Ok(column.key.clone())
        })
        .collect()
}

/// Checks a row policy for publishing: no principal tokens (422), valid (400).
fn check_read_filter(columns: &[ColumnDef], node: &Value) -> ApiResult<()> {
    if policy::mentions(node, "$me") || policy::mentions(node, "$me.department") {
        return Err(not_publishable(
            "read_filter may not use $me or $me.department ($today and $now are allowed)".into(),
        ));
    }
    policy::compile(node, columns, &Targets::new(), Mode::Author)?;
    Ok(())
}

/// What a token publishes, checked before it is minted (by the mint route and by
/// a deployment's `public_read_token` rows).
pub struct Publication<'a> {
    /// The published view.
    pub view: &'a ViewDef,
    /// The column allowlist (keys or display names).
    pub visible_columns: Option<&'a [String]>,
    /// The row policy.
    pub read_filter: Option<&'a Value>,
    /// Requests per minute.
    pub rpm: i64,
    /// Expiry.
    pub valid_until: Option<DateTime<Utc>>,
    /// Label.
    pub name: Option<&'a str>,
}

impl Publication<'_> {
    /// Refuses what cannot be published from a table with these columns (409 on a
    /// governed table, 422 for a computed view or column or a `$me` policy, 400 or
    /// a validation error otherwise); answers the allowlist as internal keys.
    pub fn check(&self, columns: &[ColumnDef], governed: bool) -> ApiResult<Option<Vec<String>>> {
        if governed {
            return Err(ApiError::code(
                Code::TableChannelGoverned,
                "Cannot publish a table governed by a scoped channel policy",
            ));
        }
        check_view(columns, self.view)?;
        let visible = self
            .visible_columns
            .map(|names| allowlist(columns, names))
            .transpose()?;
        if let Some(node) = self.read_filter {
            check_read_filter(columns, node)?;
        }
        if !(1..=MAX_RPM).contains(&self.rpm) {
            return Err(rule("rpm", "rpm must be between 1 and 100000"));
        }
        future_expiry(self.valid_until)?;
        if self.name.is_some_and(|n| n.chars().count() > 200) {
            return Err(rule("name", "name must be at most 200 characters"));
        }
        Ok(visible)
    }
}

/// Refuses an expiry that has already passed: the rule a token's `valid_until`
/// obeys whatever the token (public read and callback tokens alike).
pub(super) fn future_expiry(valid_until: Option<DateTime<Utc>>) -> ApiResult<()> {
    if valid_until.is_some_and(|until| until <= Utc::now()) {
        return Err(rule("valid_until", "valid_until must be in the future"));
    }
    Ok(())
}

pub(super) fn rule(field: &str, message: &str) -> ApiError {
    ApiError::invalid(
        &["body", field],
        domain::validation::ViolationKind::Rule {
            kind: "value_error",
            message: message.into(),
        },
        None,
    )
}

/// The secret of an `Authorization: Bearer <secret>` header.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
}

/// Whether `presented` is the secret whose SHA-256 (hex) a token keeps, compared
/// as digests in constant time.
pub fn proves_secret(presented: &str, secret_sha256: &str) -> bool {
    let Ok(expected) = hex::decode(secret_sha256) else {
        return false;
    };
    Sha256::digest(presented.as_bytes())
        .as_slice()
        .ct_eq(&expected)
        .into()
}

/// Mints a public read token for a view of the table.
#[utoipa::path(post, path = "/tables/{table_id}/public-read-tokens", tag = "custom_tables",
    params(("table_id" = Uuid, Path, description = "The table")),
    request_body = PublicReadTokenMintPayload,
    responses((status = 200, body = PublicReadTokenMintResponse)))]
async fn mint_token(
    caller: Caller,
    mount: Mount,
    ApiJson(body): ApiJson<PublicReadTokenMintPayload>,
) -> ApiResult<Json<PublicReadTokenMintResponse>> {
    let table = open_table(&caller, &mount, Operation::PublishTokens).await?;
    let view = tables::view(caller.pool(), table.row.id, body.view_id)
        .await?
        .ok_or(ApiError::Missing("View not found"))?;
    let rpm = body.rpm.unwrap_or(DEFAULT_RPM);
    let publication = Publication {
        view: &view,
        visible_columns: body.visible_columns.as_deref(),
        read_filter: body.read_filter.as_ref(),
        rpm,
        valid_until: body.valid_until,
        name: body.name.as_deref(),
    };
    let visible_columns =
        publication.check(&table.all_columns, table.row.channel_scope_column.is_some())?;
    let secretless = body.secretless.unwrap_or(false);
    let (secret, secret_sha256) = if secretless {
        (None, None)
    } else {
        let (secret, hash) = random_secret();
        (Some(secret), Some(hash))
    };
    let token_id = random_token_id();
    let terms = PublicTokenTerms {
        token_id,
        company_id: table.row.company_id,
        table_id: table.row.id,
        view_id: view.id,
        name: body.name,
        visible_columns,
        read_filter: body.read_filter,
        allow_query: body.allow_query.unwrap_or(false),
        rpm,
        secretless,
        secret_sha256,
        valid_until: body.valid_until,
        created_by: caller.principal.reference(),
    };
    let response = PublicReadTokenMintResponse {
        token_id,
        secret,
        url_path: format!("{PUBLIC_READ_PREFIX}/{token_id}/records"),
        table_id: terms.table_id,
        view_id: terms.view_id,
        allow_query: terms.allow_query,
        rpm,
        secretless,
        valid_until: terms.valid_until,
    };
    caller
        .command::<PublicReadToken>(token_id, PublicTokenCommand::Mint(Box::new(terms)))
        .await?;
    Ok(Json(response))
}

/// The table's tokens, newest first (revoked ones included, never a secret).
#[utoipa::path(get, path = "/tables/{table_id}/public-read-tokens", tag = "custom_tables",
    params(("table_id" = Uuid, Path, description = "The table")),
    responses((status = 200, body = PublicReadTokenListResponse)))]
async fn list_tokens(caller: Caller, mount: Mount) -> ApiResult<Json<PublicReadTokenListResponse>> {
    let table = open_table(&caller, &mount, Operation::PublishTokens).await?;
    let rows = tokens::of_table(caller.pool(), table.row.id).await?;
    Ok(Json(PublicReadTokenListResponse {
        tokens: rows.into_iter().map(Into::into).collect(),
    }))
}

/// Revokes a token of the table; it stays listed and reads the uniform 404.
#[utoipa::path(delete, path = "/tables/{table_id}/public-read-tokens/{token_id}", tag = "custom_tables",
    params(("table_id" = Uuid, Path, description = "The table"), ("token_id" = Uuid, Path)),
    responses((status = 200, body = SuccessResponse)))]
async fn revoke_token(caller: Caller, mount: Mount) -> ApiResult<Json<SuccessResponse>> {
    revoke::<PublicReadToken>(&caller, &mount, |table_id| PublicTokenCommand::Revoke {
        table_id,
    })
    .await
}

/// Revokes the `token_id` of the mount's table (moderators; either kind of token):
/// the token stays listed and answers the uniform 404.
pub(super) async fn revoke<A>(
    caller: &Caller,
    mount: &Mount,
    command: impl FnOnce(Uuid) -> A::Command,
) -> ApiResult<Json<SuccessResponse>>
where
    A: AggregateExt<Services = ()>,
    A::Command: Clone,
    A::Error: SpecError,
{
    let table = open_table(caller, mount, Operation::PublishTokens).await?;
    let missing = |_| ApiError::Missing("Token not found");
    let token_id = mount.uuid("token_id").map_err(missing)?;
    caller
        .command::<A>(token_id, command(table.row.id))
        .await
        .map_err(|error| match error {
            ApiError::NotFound => missing(error),
            other => other,
        })?;
    Ok(Json(SuccessResponse {
        message: "Token revoked".into(),
    }))
}
