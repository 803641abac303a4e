//! Commands (spec `custom-tables.md` section 4, the command routes): named,
//! versioned operations on one table that its moderators define
//! (`POST {scope_mount}/commands`, `PUT .../commands/{command_id}`) and others run
//! (`POST .../commands/{command_id}/execute` for write Commands,
//! `POST .../commands/{command_id}/query` for query Commands; [`run`]). The shapes
//! are this service's design (the spec names the routes only); see
//! `docs/commands.md`.

mod deliveries;
pub mod run;

use super::gates::Operation;
use super::scope::{Mount, OpenTable, open_table_id};
use super::table::ScopeResponse;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;
use crate::openapi::enums::string_enum;
use crate::request::Caller;
use crate::state::AppState;
use axum::Json;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use domain::tables::command::{
    Authority, CommandCommand, CommandDefinition, CommandKind, DEFAULT_RECONCILIATION_TTL_SECONDS,
    TableOperation, WriteEffect,
};
use projections::read_models::table_commands::query::{self as commands, CommandRow};
use projections::read_models::table_tags::query as table_tags;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// The command routes of one scope mount.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(define_command))
        .routes(routes!(redefine_command, get_command))
        .routes(routes!(run::execute_command))
        .routes(routes!(run::query_command))
}

/// `CommandPayload`: a whole definition (a PUT replaces every field).
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CommandPayload {
    /// The table it operates on (required when defining; a redefinition may only
    /// repeat it).
    pub table_id: Option<Uuid>,
    /// Display name (1..200 characters).
    pub name: String,
    /// Free text.
    pub description: Option<String>,
    /// `write` or `query`.
    #[schema(schema_with = string_enum::<CommandKind>)]
    pub kind: CommandKind,
    /// The inputs' JSON Schema (draft 2020-12), checked before anything runs.
    #[schema(value_type = Object)]
    pub inputs: Value,
    /// `caller` (default: the caller's rights) or `definition` (a restricted
    /// definition-authority Command: the author's rights, exactly this effect).
    #[schema(schema_with = string_enum::<Authority>)]
    pub authority: Option<Authority>,
    /// A raw tag id of the same scope.
    pub tag_id: Option<Uuid>,
    /// 60..604800, default 900.
    pub delivery_reconciliation_ttl_seconds: Option<i64>,
    /// Write Commands: `{op: create|update|upsert, values: {column: operand},
    /// match: {column or record_id: operand}}`; an operand `"$input.<name>"` is an
    /// input, anything else a literal.
    #[schema(value_type = Option<Object>)]
    pub write: Option<Value>,
    /// Query Commands: a record search body (`filter`, `q`, `sort`, `columns`,
    /// `limit`, ...) whose operands may be `"$input.<name>"`.
    #[schema(value_type = Option<Object>)]
    pub query: Option<Value>,
}

/// `CommandResponse`.
#[derive(Debug, Serialize, ToSchema)]
pub struct CommandResponse {
    /// Id.
    pub id: Uuid,
    /// Its table.
    pub table_id: Uuid,
    /// The table's owning scope.
    pub scope: ScopeResponse,
    /// Display name.
    pub name: String,
    /// Free text.
    pub description: Option<String>,
    /// `write` or `query`.
    pub kind: String,
    /// The inputs' JSON Schema.
    #[schema(value_type = Object)]
    pub inputs: Value,
    /// `caller` or `definition`.
    pub authority: String,
    /// A raw tag id of the same scope.
    pub tag_id: Option<Uuid>,
    /// Agent delivery reconciliation window.
    pub delivery_reconciliation_ttl_seconds: i64,
    /// The write effect.
    #[schema(value_type = Option<Object>)]
    pub write: Option<Value>,
    /// The query template.
    #[schema(value_type = Option<Object>)]
    pub query: Option<Value>,
    /// The current version (1, then one more per redefinition).
    pub version: i64,
    /// The current version's author (`user:<id>`).
    pub defined_by: String,
    /// Defined.
    pub created_at: DateTime<Utc>,
    /// Last redefined.
    pub updated_at: DateTime<Utc>,
}

impl From<CommandRow> for CommandResponse {
    fn from(row: CommandRow) -> Self {
        let d = row.definition.0;
        Self {
            id: row.id,
            table_id: row.table_id,
            scope: ScopeResponse {
                kind: row.scope_kind.as_str().into(),
                id: row.scope_id,
            },
            name: d.name,
            description: d.description,
            kind: domain::wire::wire(&d.kind),
            inputs: d.inputs,
            authority: domain::wire::wire(&d.authority),
            tag_id: d.tag_id,
            delivery_reconciliation_ttl_seconds: d.delivery_reconciliation_ttl_seconds,
            write: d.write.and_then(|w| serde_json::to_value(w).ok()),
            query: d.query,
            version: row.version,
            defined_by: row.defined_by,
            created_at: row.created_at,
            updated_at: row.updated_at,
        }
    }
}

/// The definition a payload describes (its rules are the aggregate's); its
/// `tag_id` must name a tag of the table's scope.
async fn definition(table: &OpenTable, payload: CommandPayload) -> ApiResult<CommandDefinition> {
    if let Some(tag_id) = payload.tag_id
        && table_tags::tag(
            table.caller.pool(),
            table.row.company_id,
            table.scope,
            tag_id,
        )
        .await?
        .is_none()
    {
        return Err(ApiError::invalid(
            &["body", "tag_id"],
            domain::validation::ViolationKind::Rule {
                kind: "value_error",
                message: format!("{tag_id} is not a table tag of the table's scope"),
            },
            Some(serde_json::json!(tag_id)),
        ));
    }
    let write = payload
        .write
        .map(serde_json::from_value::<WriteEffect>)
        .transpose()
        .map_err(|error| {
            ApiError::invalid(
                &["body", "write"],
                domain::validation::ViolationKind::Rule {
                    kind: "value_error",
                    message: error.to_string(),
                },
                None,
            )
        })?;
    Ok(CommandDefinition {
        name: payload.name,
        description: payload.description,
        kind: payload.kind,
        inputs: payload.inputs,
        authority: payload.authority.unwrap_or(Authority::Caller),
        tag_id: payload.tag_id,
        delivery_reconciliation_ttl_seconds: payload
            .delivery_reconciliation_ttl_seconds
            .unwrap_or(DEFAULT_RECONCILIATION_TTL_SECONDS),
        write,
        query: payload.query,
    })
}

/// The Command `command_id` of a table of this mount, with its table opened as
/// the caller for `operation` (404 for a Command of another scope or company).
pub(super) async fn open_command(
    caller: &Caller,
    mount: &Mount,
    operation: Operation,
) -> ApiResult<(CommandRow, OpenTable)> {
    let command_id = mount.uuid("command_id")?;
    let row = commands::command(caller.pool(), caller.principal.company_id, command_id)
        .await?
        .ok_or(ApiError::NotFound)?;
    let table = open_table_id(caller, mount, row.table_id, operation).await?;
    Ok((row, table))
}

async fn answer(caller: &Caller, command_id: Uuid) -> ApiResult<CommandResponse> {
    Ok(
        commands::command(caller.pool(), caller.principal.company_id, command_id)
            .await?
            .ok_or(ApiError::NotFound)?
            .into(),
    )
}

/// Defines a Command on a table of this scope (the table's moderators).
#[utoipa::path(post, path = "/commands", tag = "custom_tables", request_body = CommandPayload,
    responses((status = 201, body = CommandResponse)))]
async fn define_command(
    caller: Caller,
    mount: Mount,
    ApiJson(payload): ApiJson<CommandPayload>,
) -> ApiResult<(StatusCode, Json<CommandResponse>)> {
    let table_id = payload.table_id.ok_or_else(|| {
        ApiError::invalid(
            &["body", "table_id"],
            domain::validation::ViolationKind::Missing,
            None,
        )
    })?;
    let table = open_table_id(&caller, &mount, table_id, Operation::ManageTable).await?;
    let command_id = Uuid::new_v4();
    let command = CommandCommand::Define {
        command_id,
        company_id: table.row.company_id,
        table_id,
        scope: table.scope,
        definition: Box::new(definition(&table, payload).await?),
        defined_by: caller.principal.reference(),
    };
    caller
        .command::<TableOperation>(command_id, command)
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(answer(&caller, command_id).await?),
    ))
}

/// Replaces a Command's definition: the next version (the table's moderators).
#[utoipa::path(put, path = "/commands/{command_id}", tag = "custom_tables", request_body = CommandPayload,
    params(("command_id" = Uuid, Path, description = "The Command")),
    responses((status = 200, body = CommandResponse)))]
async fn redefine_command(
    caller: Caller,
    mount: Mount,
    ApiJson(payload): ApiJson<CommandPayload>,
) -> ApiResult<Json<CommandResponse>> {
    let (row, table) = open_command(&caller, &mount, Operation::ManageTable).await?;
    if payload.table_id.is_some_and(|id| id != row.table_id) {
        return Err(ApiError::invalid(
            &["body", "table_id"],
            domain::validation::ViolationKind::Rule {
                kind: "value_error",
                message: "a Command stays on its table".into(),
            },
            None,
        ));
    }
    let command = CommandCommand::Redefine {
        table_id: table.row.id,
        definition: Box::new(definition(&table, payload).await?),
        defined_by: caller.principal.reference(),
    };
    caller.command::<TableOperation>(row.id, command).await?;
    Ok(Json(answer(&caller, row.id).await?))
}

/// One Command (anyone who sees its table).
#[utoipa::path(get, path = "/commands/{command_id}", tag = "custom_tables",
    params(("command_id" = Uuid, Path, description = "The Command")),
    responses((status = 200, body = CommandResponse)))]
async fn get_command(caller: Caller, mount: Mount) -> ApiResult<Json<CommandResponse>> {
    let (row, _) = open_command(&caller, &mount, Operation::ReadTable).await?;
    Ok(Json(row.into()))
}
