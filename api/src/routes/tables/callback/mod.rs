//! External writes through callback tokens (spec `custom-tables.md` sections 4, 5
//! and 8): `POST /public/module/custom_tables/callback/{token_id}` creates or
//! updates a record, `GET .../callback/{token_id}/form-schema` describes what it
//! may write.
//!
//! Order of checks on a write: the body's size (413 above 65,536 bytes, before
//! anything else), the credentials (the uniform 404, [`credentials`]), the token's
//! minute window (429), the body (400), the token's operations (403), then the
//! write itself as the minting moderator through the one record write path
//! (`records::insert`, `records::change`): their permissions, the channel floor,
//! the migration lock (423) and every column's checks. An approval rule of the
//! table holds the write instead ([`hold`]). An `idempotency_key` makes the write
//! happen once for 24 hours ([`delivery`]).

mod command_output;
mod credentials;
mod delivery;
pub(crate) mod hold;

use super::gates::Operation;
use super::public_read::PublicColumnInfo;
use super::public_read::query::invalid_body;
use super::records;
use super::scope::{Mount, OpenTable, open_table_id};
use crate::access::INSUFFICIENT;
use crate::auth::user_principal;
use crate::error::{ApiError, ApiResult};
use crate::idempotency::{IdempotencyKey, MAX_KEY_CHARS, request_hash};
use crate::middleware::body_limit::read_capped;
use crate::openapi::enums::string_enum;
use crate::request::{Caller, Context};
use crate::state::AppState;
use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use domain::error::Code;
use domain::principal::AuthMethod;
use domain::tables::callback_delivery::CallbackOp;
use domain::tables::callback_token::AllowedOps;
use domain::tables::column::{ColumnType, is_column_key};
use projections::read_models::public_tokens::callback::CallbackTokenRow;
use projections::read_models::runs::query as runs;
use projections::read_models::tables::query as tables;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// Where the callback routes live.
pub use domain::tables::callback_token::CALLBACK_PREFIX;
/// Most bytes of a callback body (65,536 is accepted, 65,537 is 413).
pub const MAX_CALLBACK_BODY: usize = 65_536;

/// The callback routes (absolute paths; no session authentication).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(callback_write))
        .routes(routes!(form_schema))
        .routes(routes!(command_output::command_output))
}

/// `CallbackWriteBody`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CallbackWriteBody {
    /// `create` or `update`.
    #[schema(schema_with = string_enum::<CallbackOp>, example = "create")]
    pub op: CallbackOp,
    /// Cells: display names or internal keys for `create`, internal keys only for
    /// `update`.
    #[schema(value_type = Object)]
    pub data: Map<String, Value>,
    /// The record to update (required for `update`, refused for `create`).
    pub record_id: Option<Uuid>,
    /// Makes the write happen once: the same key and body within 24 hours answer
    /// the first result with `replayed: true`; another body answers 409.
    pub idempotency_key: Option<String>,
}

/// `CallbackWriteResult`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CallbackWriteResult {
    /// Always true on success.
    pub ok: bool,
    /// `create` or `update`.
    pub op: String,
    /// `created`, `updated`, `held_for_approval` (an approval rule matched; a
    /// terminal success: do not resend) or `already_pending` (an update of a record
    /// that already has one waiting; the original process is reused).
    pub status: String,
    /// The record written (null when held).
    pub record_id: Option<Uuid>,
    /// The approval process of a held write.
    pub process_id: Option<Uuid>,
    /// The staged change of a held write.
    pub staged_change_id: Option<Uuid>,
    /// The approval rule that held the write.
    pub rule_label: Option<String>,
    /// Whether this answers an earlier request with the same idempotency key.
    pub replayed: bool,
}

impl CallbackWriteResult {
    /// The result of a write that applied.
    pub fn applied(op: CallbackOp, record_id: Uuid, replayed: bool) -> Self {
        Self {
            ok: true,
            op: op.as_str().into(),
            status: op.applied_status().into(),
            record_id: Some(record_id),
            process_id: None,
            staged_change_id: None,
            rule_label: None,
            replayed,
        }
    }
}

/// `CallbackFormSchema`.
#[derive(Debug, Serialize, ToSchema)]
pub struct CallbackFormSchema {
    /// The table's display name.
    pub table_name: String,
    /// The columns a callback may write (never rollup, lookup or formula).
    pub columns: Vec<PublicColumnInfo>,
}

/// The token's table opened as the moderator who minted the token (a run's
/// submitter for its writeback credential), for `operation`. A run's credential
/// minted before its table became commands-only is refused (403
/// `governed_context_required`).
async fn open_as_moderator(
    state: &AppState,
    ctx: Context,
    token: &CallbackTokenRow,
    operation: Operation,
) -> ApiResult<OpenTable> {
    let method = match token.run_id {
        Some(run_id) => {
            runs::run(&state.pool, run_id)
                .await?
                .map_or(AuthMethod::CallbackToken, |run| {
                    run.submission_source
                        .output_method(AuthMethod::CallbackToken)
                })
        }
        None => AuthMethod::CallbackToken,
    };
    let author = Author {
        company_id: token.company_id,
        table_id: token.table_id,
        user: &token.created_by,
        method,
    };
    let table = open_as(state, ctx, author, operation).await?;
    if token.run_id.is_some() && table.row.agent_writes_via_commands_only {
        return Err(ApiError::code(
            Code::GovernedContextRequired,
            "this table takes agent writes through its Commands only",
        ));
    }
    Ok(table)
}

/// Whom a write made on someone's behalf acts as: a callback token's minting
/// moderator, or a definition-authority Command's author, on its table.
pub struct Author<'a> {
    /// The company.
    pub company_id: Uuid,
    /// The token's table.
    pub table_id: Uuid,
    /// The moderator or author (`user:<id>`).
    pub user: &'a str,
    /// How the write is made (the event metadata's `auth_method`).
    pub method: AuthMethod,
}

/// The table opened as a write's author for `operation` (a callback write, a write
/// held for approval, a definition-authority Command). A deleted table is the
/// uniform 404; a table governed by a channel policy is refused (such a write has
/// no room to write from).
pub async fn open_as(
    state: &AppState,
    ctx: Context,
    author: Author<'_>,
    operation: Operation,
) -> ApiResult<OpenTable> {
    let row = tables::table(&state.pool, author.company_id, author.table_id)
        .await?
        .ok_or(ApiError::NotFound)?;
    if row.channel_scope_column.is_some() {
        return Err(ApiError::code(
            Code::TableChannelGoverned,
            "Cannot write through a callback to a table governed by a scoped channel policy",
        ));
    }
    let moderator = author
        .user
        .strip_prefix("user:")
        .and_then(|id| Uuid::parse_str(id).ok())
        .ok_or(ApiError::Forbidden(INSUFFICIENT))?;
    let principal = user_principal(state, author.company_id, moderator, author.method)
        .await?
        .ok_or(ApiError::Forbidden(INSUFFICIENT))?;
    let caller = Caller {
        state: state.clone(),
        ctx,
        principal,
    };
    open_table_id(&caller, &Mount::owning(&row), row.id, operation).await
}

/// Applies a write to `record_id`.
pub async fn apply(
    table: &OpenTable,
    op: CallbackOp,
    record_id: Uuid,
    data: &Map<String, Value>,
) -> ApiResult<()> {
    match op {
        CallbackOp::Create => records::insert(table, record_id, data).await,
        CallbackOp::Update => records::change(table, record_id, data).await,
    }
}

/// What a write targets, checked against the token: the record (a new id for a
/// creation) and the operation's permission.
fn target(token: &CallbackTokenRow, write: &CallbackWriteBody) -> ApiResult<(Uuid, Operation)> {
    match write.op {
        CallbackOp::Create => match write.record_id {
            Some(_) => Err(invalid_body("record_id is only for op update")),
            None => Ok((Uuid::new_v4(), Operation::InsertRows)),
        },
        CallbackOp::Update => {
            if token.allowed_ops != AllowedOps::CreateUpdate.as_str() {
                return Err(ApiError::code(
                    Code::CallbackOpNotAllowed,
                    "this callback token may only create records",
                ));
            }
            let record_id = write
                .record_id
                .ok_or_else(|| invalid_body("record_id is required for op update"))?;
            if let Some(name) = write.data.keys().find(|k| !is_column_key(k)) {
                return Err(invalid_body(format!(
                    "update data accepts internal column keys only, not '{name}'"
                )));
            }
            Ok((record_id, Operation::EditRows))
        }
    }
}

/// Creates or updates a record of the token's table.
#[utoipa::path(post, path = "/public/module/custom_tables/callback/{token_id}", tag = "custom_tables_public",
    params(("token_id" = String, Path)), request_body = CallbackWriteBody,
    responses((status = 200, body = CallbackWriteResult)))]
async fn callback_write(
    State(state): State<AppState>,
    ctx: Context,
    Path(token_id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Json<CallbackWriteResult>> {
    let bytes = read_capped(&headers, body, MAX_CALLBACK_BODY).await?;
    let token = credentials::authenticate(&state, &token_id, &headers, &bytes).await?;
    credentials::admit(&state, &token)?;
    let write: CallbackWriteBody = serde_json::from_slice(&bytes).map_err(invalid_body)?;
    let (record_id, operation) = target(&token, &write)?;
    // A shape problem of the body: 400 like the others, not the header's 422.
    let key = write
        .idempotency_key
        .as_deref()
        .map(|key| IdempotencyKey::parse(Some(key)))
        .transpose()
        .map_err(|_| {
            invalid_body(format!(
                "idempotency_key must be 1 to {MAX_KEY_CHARS} characters, without NUL"
            ))
        })?;
    let table = open_as_moderator(&state, ctx, &token, operation).await?;
    let held = hold::Write {
        token_id: token.id,
        body: &write,
        record_id,
        key: key.as_ref().map(|k| k.0.as_str()),
        source: domain::tables::staged_change::HoldSource::CallbackToken,
    };
    if let Some(held) = hold::hold_if_ruled(&table, held).await? {
        return Ok(Json(held));
    }
    let result = match key {
        None => {
            apply(&table, write.op, record_id, &write.data).await?;
            CallbackWriteResult::applied(write.op, record_id, false)
        }
        Some(key) => {
            let request = delivery::Request {
                token_id: token.id,
                key: key.0,
                hash: request_hash(&write),
                op: write.op,
                record_id,
                data: &write.data,
            };
            delivery::deliver(&table, request).await?
        }
    };
    Ok(Json(result))
}

/// The table's name and the columns a callback may write.
#[utoipa::path(get, path = "/public/module/custom_tables/callback/{token_id}/form-schema", tag = "custom_tables_public",
    params(("token_id" = String, Path)),
    responses((status = 200, body = CallbackFormSchema)))]
async fn form_schema(
    State(state): State<AppState>,
    ctx: Context,
    Path(token_id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Json<CallbackFormSchema>> {
    let token = credentials::authenticate(&state, &token_id, &headers, b"").await?;
    let table = open_as_moderator(&state, ctx, &token, Operation::InsertRows).await?;
    let columns = table
        .columns
        .iter()
        .filter(|c| !c.column_type.is_computed() || c.column_type == ColumnType::Link)
        .map(|c| PublicColumnInfo {
            name: c.name.clone(),
            column_type: c.column_type.as_str().into(),
        })
        .collect();
    Ok(Json(CallbackFormSchema {
        table_name: table.row.name.clone(),
        columns,
    }))
}
