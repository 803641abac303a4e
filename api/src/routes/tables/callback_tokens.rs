//! Callback token management (spec `custom-tables.md` section 4, "Callback tokens
//! and external writes"): mint (201, the secret shown once), list (never a secret)
//! and revoke under `{scope mount}/tables/{table_id}/callback-tokens`. Table
//! moderators only. A token writes one table, with the operations it allows, as
//! the moderator who minted it.

use super::callback::CALLBACK_PREFIX;
use super::columns::SuccessResponse;
use super::gates::Operation;
use super::public_tokens::{future_expiry, revoke, rule};
use super::scope::{Mount, open_table};
use crate::capability::{random_secret, random_token_id};
use crate::error::ApiResult;
use crate::extract::ApiJson;
use crate::openapi::enums::string_enum;
use crate::request::Caller;
use crate::state::AppState;
use axum::Json;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use domain::tables::callback_token::{
    AllowedOps, CallbackToken, CallbackTokenCommand, CallbackTokenTerms,
};
use projections::read_models::public_tokens::callback::{self as tokens, CallbackTokenRow};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// The token routes (nested under each scope mount).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(mint_token, list_tokens))
        .routes(routes!(revoke_token))
}

/// `CallbackTokenMintPayload`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CallbackTokenMintPayload {
    /// Label, 1..200 characters.
    #[schema(schema_with = crate::openapi::shapes::name_200)]
    pub name: String,
    /// `create` (default) or `create,update`; there is no update-only token.
    #[schema(schema_with = string_enum::<AllowedOps>, example = "create,update")]
    pub allowed_ops: Option<AllowedOps>,
    /// UTC expiry (null: none).
    pub valid_until: Option<DateTime<Utc>>,
}

/// `CallbackTokenMintResponse`.
#[derive(Debug, Serialize, ToSchema)]
pub struct CallbackTokenMintResponse {
    /// The token id.
    pub token_id: Uuid,
    /// The secret, shown once (Bearer credential; its SHA-256 keys signatures).
    pub secret: String,
    /// The table it writes.
    pub table_id: Uuid,
    /// `create` or `create,update`.
    pub allowed_ops: String,
    /// Expiry.
    pub valid_until: Option<DateTime<Utc>>,
    /// The write path of the token.
    pub url_path: String,
}

/// `CallbackTokenInfo` (never the secret).
#[derive(Debug, Serialize, ToSchema)]
pub struct CallbackTokenInfo {
    /// Token id.
    pub id: Uuid,
    /// Label.
    pub name: String,
    /// Table.
    pub table_id: Uuid,
    /// `create` or `create,update`.
    pub allowed_ops: String,
    /// Expiry.
    pub valid_until: Option<DateTime<Utc>>,
    /// Whether it is revoked.
    pub revoked: bool,
    /// The minting moderator, whose permissions its writes use.
    pub created_by: String,
    /// Minted.
    pub created_at: DateTime<Utc>,
}

impl From<CallbackTokenRow> for CallbackTokenInfo {
    fn from(row: CallbackTokenRow) -> Self {
        Self {
            id: row.id,
            name: row.name,
            table_id: row.table_id,
            allowed_ops: row.allowed_ops,
            valid_until: row.valid_until,
            revoked: row.revoked,
            created_by: row.created_by,
            created_at: row.created_at,
        }
    }
}

/// `CallbackTokenListResponse`.
#[derive(Debug, Serialize, ToSchema)]
pub struct CallbackTokenListResponse {
    /// Newest first, revoked ones included.
    pub tokens: Vec<CallbackTokenInfo>,
}

/// Mints a callback token for the table.
#[utoipa::path(post, path = "/tables/{table_id}/callback-tokens", tag = "custom_tables",
    params(("table_id" = Uuid, Path, description = "The table")),
    request_body = CallbackTokenMintPayload,
    responses((status = 201, body = CallbackTokenMintResponse)))]
async fn mint_token(
    caller: Caller,
    mount: Mount,
    ApiJson(body): ApiJson<CallbackTokenMintPayload>,
) -> ApiResult<(StatusCode, Json<CallbackTokenMintResponse>)> {
    let table = open_table(&caller, &mount, Operation::PublishTokens).await?;
    let name = body.name.trim().to_string();
    if name.is_empty() || name.chars().count() > 200 {
        return Err(rule("name", "name must be 1 to 200 characters"));
    }
    future_expiry(body.valid_until)?;
    let (secret, secret_sha256) = random_secret();
    let token_id = random_token_id();
    let terms = CallbackTokenTerms {
        token_id,
        company_id: table.row.company_id,
        table_id: table.row.id,
        name,
        allowed_ops: body.allowed_ops.unwrap_or(AllowedOps::Create),
        secret_sha256,
        valid_until: body.valid_until,
        created_by: caller.principal.reference(),
        run_id: None,
        command: None,
    };
    let response = CallbackTokenMintResponse {
        token_id,
        secret,
        table_id: terms.table_id,
        allowed_ops: terms.allowed_ops.as_str().into(),
        valid_until: terms.valid_until,
        url_path: format!("{CALLBACK_PREFIX}/{token_id}"),
    };
    caller
        .command::<CallbackToken>(token_id, CallbackTokenCommand::Mint(Box::new(terms)))
        .await?;
    Ok((StatusCode::CREATED, Json(response)))
}

/// The table's callback tokens, newest first (revoked ones included, never a
/// secret).
#[utoipa::path(get, path = "/tables/{table_id}/callback-tokens", tag = "custom_tables",
    params(("table_id" = Uuid, Path, description = "The table")),
    responses((status = 200, body = CallbackTokenListResponse)))]
async fn list_tokens(caller: Caller, mount: Mount) -> ApiResult<Json<CallbackTokenListResponse>> {
    let table = open_table(&caller, &mount, Operation::PublishTokens).await?;
    let rows = tokens::of_table(caller.pool(), table.row.id).await?;
    Ok(Json(CallbackTokenListResponse {
        tokens: rows.into_iter().map(Into::into).collect(),
    }))
}

/// Revokes a callback token of the table; it stays listed and writes answer the
/// uniform 404.
#[utoipa::path(delete, path = "/tables/{table_id}/callback-tokens/{token_id}", tag = "custom_tables",
    params(("table_id" = Uuid, Path, description = "The table"), ("token_id" = Uuid, Path)),
    responses((status = 200, body = SuccessResponse)))]
async fn revoke_token(caller: Caller, mount: Mount) -> ApiResult<Json<SuccessResponse>> {
    revoke::<CallbackToken>(&caller, &mount, |table_id| CallbackTokenCommand::Revoke {
        table_id,
    })
    .await
}
