//! Running a Command: its inputs are checked against its schema (422
//! `input_schema_violation`), then its effect runs as the caller (`caller`
//! authority) or as its author (`definition` authority, the Command named in the
//! write's event metadata), through the one record write path: the actor's
//! permissions, the channel floor, the migration lock, every column's checks,
//! approval rules (a held write waits for reviewers), history and triggers.

use super::{deliveries, open_command};
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;
use crate::idempotency::IdempotencyKey;
use crate::request::{Caller, Context};
use crate::routes::tables::callback::{Author, CallbackWriteBody, hold, open_as};
use crate::routes::tables::cells::RecordResponse;
use crate::routes::tables::gates::Operation;
use crate::routes::tables::records::{self, RecordListResponse};
use crate::routes::tables::scope::{Mount, OpenTable, open_table_id};
use crate::routes::tables::search::{RecordSearch, search};
use crate::state::AppState;
use axum::Json;
use axum::http::HeaderMap;
use domain::error::Code;
use domain::principal::{AuthMethod, PrincipalType};
use domain::tables::callback_delivery::CallbackOp;
use domain::tables::column::ColumnType;
use domain::tables::command::{Authority, CommandDefinition, CommandKind, WriteOp, substitute};
use domain::tables::staged_change::HoldSource;
use domain::tasks::schema;
use domain::validation::ViolationKind;
use projections::read_models::table_commands::query::CommandRow;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use utoipa::ToSchema;
use uuid::Uuid;

/// `CommandRunRequest`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CommandRunRequest {
    /// The inputs, checked against the Command's `inputs` schema.
    #[schema(value_type = Object)]
    pub inputs: Value,
}

/// One value a write left in its record (null values are omitted).
#[derive(Debug, Serialize, ToSchema)]
pub struct CommandValue {
    /// The column's display name.
    pub column: String,
    /// Its internal key.
    pub key: String,
    /// The value as records show it.
    #[schema(value_type = Object)]
    pub value: Value,
    /// The column type, or for people cells whom the value names: `user`,
    /// `social_client` or `principal` (a room).
    pub value_type: String,
}

/// `CommandExecution`.
#[derive(Debug, Serialize, ToSchema)]
pub struct CommandExecution {
    /// The Command.
    pub command_id: Uuid,
    /// The version that ran.
    pub version: i64,
    /// `created` or `updated`.
    pub op: String,
    /// `applied`, `held_for_approval` (an approval rule of the table holds the
    /// write until reviewers decide; nothing is written yet) or `already_pending`
    /// (an update of a record that already has one waiting).
    pub status: String,
    /// The record written (for a held creation: the id it will take).
    pub record_id: Uuid,
    /// What the record holds now, column by column (null values omitted).
    pub values: Vec<CommandValue>,
    /// Whether this answers an earlier request with the same `Idempotency-Key`.
    pub replayed: bool,
    /// The review process of a held write.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process_id: Option<Uuid>,
    /// The staged change of a held write.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub staged_change_id: Option<Uuid>,
    /// The approval rule that held the write.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule_label: Option<String>,
}

/// `CommandQueryResult`.
#[derive(Debug, Serialize, ToSchema)]
pub struct CommandQueryResult {
    /// The Command.
    pub command_id: Uuid,
    /// The version that ran.
    pub version: i64,
    /// The records, as the actor reads them.
    pub records: Vec<RecordResponse>,
    /// Records matching, before paging.
    pub total: i64,
}

fn wrong_kind(message: &str) -> ApiError {
    ApiError::invalid(
        &["path", "command_id"],
        ViolationKind::Rule {
            kind: "value_error",
            message: message.into(),
        },
        None,
    )
}

/// The inputs, when they satisfy the Command's schema; else 422 with `code`
/// (`input_schema_violation`, or `output_schema_violation` on the command-output
/// route) and the violations as `errors`.
pub(crate) fn checked_inputs(
    definition: &CommandDefinition,
    inputs: Value,
    code: Code,
) -> ApiResult<Map<String, Value>> {
    let validator = schema::compile(&definition.inputs).map_err(|_| {
        ApiError::Internal(anyhow::anyhow!("a stored inputs schema does not compile"))
    })?;
    let problems = schema::violations(&validator, &inputs);
    if !problems.is_empty() {
        return Err(ApiError::code(
            code,
            "the inputs do not satisfy the Command's inputs schema",
        )
        .with("errors", json!(problems)));
    }
    match inputs {
        Value::Object(map) => Ok(map),
        _ => Ok(Map::new()),
    }
}

/// Who runs a Command: a route's caller (through its scope mount), or a run's
/// command-output credential (definition-authority Commands only).
pub(crate) struct Runner<'a> {
    /// The service.
    pub state: &'a AppState,
    /// The request.
    pub ctx: Context,
    /// The route's caller and mount, which a caller-authority Command runs as.
    pub caller: Option<(&'a Caller, &'a Mount)>,
    /// How a definition-authority Command's writes are recorded: `command`, or
    /// `trigger` for the output of a run a trigger started
    /// (`SubmissionSource::output_method`).
    pub definition_method: AuthMethod,
}

/// The table opened as the Command's actor for `operation`.
async fn open_as_actor(
    runner: &Runner<'_>,
    row: &CommandRow,
    operation: Operation,
) -> ApiResult<OpenTable> {
    let mut table = match (row.definition.authority, runner.caller) {
        (Authority::Caller, Some((caller, mount))) => {
            open_table_id(caller, mount, row.table_id, operation).await
        }
        (Authority::Caller, None) => Err(ApiError::Forbidden(crate::access::INSUFFICIENT)),
        (Authority::Definition, _) => {
            let mut ctx = runner.ctx.clone();
            ctx.request_id = format!("{} command:{} v{}", ctx.request_id, row.id, row.version);
            let author = Author {
                company_id: row.company_id,
                table_id: row.table_id,
                user: &row.defined_by,
                method: runner.definition_method,
            };
            open_as(runner.state, ctx, author, operation).await
        }
    }?;
    table.through_command = true;
    Ok(table)
}

/// The record an update or upsert targets: `None` when nothing matches.
async fn matched(table: &OpenTable, match_on: &Map<String, Value>) -> ApiResult<Option<Uuid>> {
    if let Some(id) = match_on.get("record_id") {
        let id = id
            .as_str()
            .and_then(|s| Uuid::parse_str(s).ok())
            .ok_or_else(|| wrong_input("record_id must be a record id"))?;
        return Ok(exists(table, id).await?.then_some(id));
    }
    let tests: Vec<Value> = match_on
        .iter()
        .map(|(column, value)| json!({"column": column, "op": "eq", "value": value}))
        .collect();
    let body = RecordSearch {
        filter: Some(json!({"and": tests})),
        limit: Some(2),
        ..RecordSearch::default()
    };
    let page = search(table, body).await?;
    match page.records.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(one.id)),
        _ => Err(ApiError::code(
            Code::CommandMatchAmbiguous,
            "the Command's match finds more than one record",
        )),
    }
}

fn wrong_input(message: &str) -> ApiError {
    ApiError::invalid(
        &["body", "inputs"],
        ViolationKind::Rule {
            kind: "value_error",
            message: message.into(),
        },
        None,
    )
}

/// The record's non-null values with their value types.
fn values(table: &OpenTable, record: &RecordResponse) -> Vec<CommandValue> {
    table
        .columns
        .iter()
        .filter_map(|column| {
            let value = record.data.get(&column.name)?;
            if value.is_null() {
                return None;
            }
            let value_type = match column.column_type {
                ColumnType::Principal => match value.get("kind").and_then(Value::as_str) {
                    Some("user") => "user",
                    Some("smc" | "social_client") => "social_client",
                    _ => "principal",
                },
                other => other.as_str(),
            };
            Some(CommandValue {
                column: column.name.clone(),
                key: column.key.clone(),
                value: value.clone(),
                value_type: value_type.into(),
            })
        })
        .collect()
}

/// Runs a write Command with inputs. Under an `Idempotency-Key` a creation
/// happens once: the same key answers the record it created (`replayed: true`)
/// before any match is tried; a keyed update applies the same cells again. A
/// social media client's keyed delivery is reconciled by its delivery markers
/// instead (for the Command's `delivery_reconciliation_ttl_seconds`).
#[utoipa::path(post, path = "/commands/{command_id}/execute", tag = "custom_tables",
    params(("command_id" = Uuid, Path, description = "The Command"),
           ("Idempotency-Key" = Option<String>, Header)),
    request_body = CommandRunRequest,
    responses((status = 200, body = CommandExecution)))]
pub(super) async fn execute_command(
    caller: Caller,
    mount: Mount,
    headers: HeaderMap,
    ApiJson(body): ApiJson<CommandRunRequest>,
) -> ApiResult<Json<CommandExecution>> {
    let key = headers
        .get("idempotency-key")
        .map(|v| IdempotencyKey::parse(v.to_str().ok()))
        .transpose()?;
    let (row, _) = open_command(&caller, &mount, Operation::ReadTable).await?;
    let definition = &row.definition.0;
    if definition.kind != CommandKind::Write {
        return Err(wrong_kind("a query Command runs at .../query"));
    }
    let inputs = checked_inputs(definition, body.inputs, Code::InputSchemaViolation)?;
    let runner = Runner {
        state: &caller.state,
        ctx: caller.ctx.clone(),
        caller: Some((&caller, &mount)),
        definition_method: AuthMethod::Command,
    };
    if let (PrincipalType::SocialMediaClient, Some(key)) = (caller.principal.principal_type, &key) {
        let execution = deliveries::deliver(&runner, &caller, &row, &inputs, &key.0).await?;
        return Ok(Json(execution));
    }
    let keyed = key
        .as_ref()
        .map(|key| key.target(&caller.principal, &format!("commands.execute.{}", row.id)));
    Ok(Json(write(&runner, &row, &inputs, keyed).await?))
}

/// Runs a write Command's effect with checked inputs; `keyed` names the record a
/// creation makes (an existing one is answered as a replay).
pub(crate) async fn write(
    runner: &Runner<'_>,
    row: &CommandRow,
    inputs: &Map<String, Value>,
    keyed: Option<Uuid>,
) -> ApiResult<CommandExecution> {
    let Some(effect) = row.definition.write.as_ref() else {
        return Err(wrong_kind("a query Command runs at .../query"));
    };
    // The actor's view of the table: a replay and the answer read through it.
    let reader = open_as_actor(runner, row, Operation::ReadTable).await?;
    if let Some(record_id) = keyed
        && exists(&reader, record_id).await?
    {
        return answer(runner.state, row, &reader, record_id, "created", true).await;
    }
    let data = match substitute(&Value::Object(effect.values.clone()), inputs) {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    let target = match &effect.match_on {
        None => None,
        Some(match_on) => {
            let Value::Object(match_on) = substitute(&Value::Object(match_on.clone()), inputs)
            else {
                return Err(wrong_input("the match does not resolve"));
            };
            let rows = open_as_actor(runner, row, Operation::ReadRows).await?;
            matched(&rows, &match_on).await?
        }
    };
    let (record_id, op) = match (effect.op, target) {
        (WriteOp::Update, None) => {
            return Err(ApiError::code(
                Code::NotFound,
                "the Command's match finds no record",
            ));
        }
        (_, Some(record_id)) => {
            let table = open_as_actor(runner, row, Operation::EditRows).await?;
            let update = (CallbackOp::Update, record_id, None);
            if let Some(held) = held(&table, row, update, &data).await? {
                return Ok(held);
            }
            records::change(&table, record_id, &data).await?;
            (record_id, "updated")
        }
        (_, None) => {
            let table = open_as_actor(runner, row, Operation::InsertRows).await?;
            let record_id = keyed.unwrap_or_else(Uuid::new_v4);
            // A keyed creation is held once: a resend answers the same hold.
            let key = keyed.map(|id| id.to_string());
            let create = (CallbackOp::Create, record_id, key.as_deref());
            if let Some(held) = held(&table, row, create, &data).await? {
                return Ok(held);
            }
            records::insert(&table, record_id, &data).await?;
            (record_id, "created")
        }
    };
    answer(runner.state, row, &reader, record_id, op, false).await
}

/// The write (its operation, record and idempotency key) held for approval when a
/// rule of the table lists its event (the one approval path of callback writes;
/// the process applies it as the actor).
async fn held(
    table: &OpenTable,
    row: &CommandRow,
    (op, record_id, key): (CallbackOp, Uuid, Option<&str>),
    data: &Map<String, Value>,
) -> ApiResult<Option<CommandExecution>> {
    let body = CallbackWriteBody {
        op,
        data: data.clone(),
        record_id: (op == CallbackOp::Update).then_some(record_id),
        idempotency_key: None,
    };
    let write = hold::Write {
        token_id: row.id,
        body: &body,
        record_id,
        key,
        source: HoldSource::Command,
    };
    Ok(hold::hold_if_ruled(table, write)
        .await?
        .map(|held| CommandExecution {
            command_id: row.id,
            version: row.version,
            op: match op {
                CallbackOp::Create => "created".into(),
                CallbackOp::Update => "updated".into(),
            },
            status: held.status,
            record_id,
            values: Vec::new(),
            replayed: held.replayed,
            process_id: held.process_id,
            staged_change_id: held.staged_change_id,
            rule_label: held.rule_label,
        }))
}

async fn exists(table: &OpenTable, record_id: Uuid) -> ApiResult<bool> {
    let found = table
        .handle()
        .existing(&table.caller.state.pool, &[record_id])
        .await
        .map_err(ApiError::Internal)?;
    Ok(!found.is_empty())
}

/// The answer of an earlier execution that wrote `record_id`.
pub(super) async fn answer_record(
    runner: &Runner<'_>,
    row: &CommandRow,
    record_id: Uuid,
    op: &str,
    replayed: bool,
) -> ApiResult<CommandExecution> {
    let table = open_as_actor(runner, row, Operation::ReadTable).await?;
    answer(runner.state, row, &table, record_id, op, replayed).await
}

/// The execution's answer: the record as its actor reads it now (a
/// definition-authority Command's: its declared cells of it).
async fn answer(
    state: &AppState,
    row: &CommandRow,
    table: &OpenTable,
    record_id: Uuid,
    op: &str,
    replayed: bool,
) -> ApiResult<CommandExecution> {
    let record = records::read_written(state, table, record_id).await?;
    let mut values = values(table, &record);
    // A definition-authority Command answers the cells it declares only: the rest
    // of the record is its author's to read, not its caller's.
    if row.definition.authority == Authority::Definition {
        let declared = row.definition.write.as_ref().map(|write| &write.values);
        values.retain(|value| {
            declared.is_some_and(|d| d.contains_key(&value.key) || d.contains_key(&value.column))
        });
    }
    Ok(CommandExecution {
        command_id: row.id,
        version: row.version,
        op: op.into(),
        record_id,
        status: "applied".into(),
        values,
        replayed,
        process_id: None,
        staged_change_id: None,
        rule_label: None,
    })
}

/// Runs a query Command with inputs: its search, as its actor reads the table.
#[utoipa::path(post, path = "/commands/{command_id}/query", tag = "custom_tables",
    params(("command_id" = Uuid, Path, description = "The Command")),
    request_body = CommandRunRequest,
    responses((status = 200, body = CommandQueryResult)))]
pub(super) async fn query_command(
    caller: Caller,
    mount: Mount,
    ApiJson(body): ApiJson<CommandRunRequest>,
) -> ApiResult<Json<CommandQueryResult>> {
    let (row, _) = open_command(&caller, &mount, Operation::ReadTable).await?;
    let definition = &row.definition.0;
    let Some(template) = definition
        .query
        .as_ref()
        .filter(|_| definition.kind == CommandKind::Query)
    else {
        return Err(wrong_kind("a write Command runs at .../execute"));
    };
    let inputs = checked_inputs(definition, body.inputs, Code::InputSchemaViolation)?;
    let search_body: RecordSearch = serde_json::from_value(substitute(template, &inputs))
        .map_err(|e| wrong_input(&format!("the query does not resolve: {e}")))?;
    let runner = Runner {
        state: &caller.state,
        ctx: caller.ctx.clone(),
        caller: Some((&caller, &mount)),
        definition_method: AuthMethod::Command,
    };
    let table = open_as_actor(&runner, &row, Operation::ReadRows).await?;
    let RecordListResponse { records, total } = search(&table, search_body).await?;
    Ok(Json(CommandQueryResult {
        command_id: row.id,
        version: row.version,
        records,
        total,
    }))
}
