//! `POST /public/module/custom_tables/callback/command-output/{token_id}` (spec
//! `sandbox-service.md` section 4): the work script of a run whose version has a
//! `custom_table_command` output policy runs the policy's Command with
//! `{inputs}`, authenticated by the run's sealed secret (`Authorization: Bearer`).
//!
//! Order of checks, each with the spec's answer: the token and the body's shape
//! (422 validation array), the credential (404 `output_run_unavailable` when
//! unknown or the secret is wrong or missing; 409 when revoked or expired, when the
//! run is no longer in progress, or when its version is no longer active and
//! published), the Command (409 `output_command_stale` when it changed since the
//! run started), authority (403 `output_policy_author_denied` when the Command is
//! no longer a restricted definition-authority Command or the submitter no longer
//! reads its table), the inputs (422 `output_schema_violation`), then the write (409
//! `output_command_conflict` when its match finds no record or several).

use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiPath};
use crate::request::{Caller, Context};
use crate::routes::tables::commands::run::{CommandExecution, Runner, checked_inputs, write};
use crate::routes::tables::gates::Operation;
use crate::routes::tables::public_tokens::{bearer, proves_secret};
use crate::routes::tables::scope::{Mount, open_table_id};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use chrono::Utc;
use domain::error::Code;
use domain::principal::AuthMethod;
use domain::tables::command::Authority;
use domain::tables::token_lifecycle::readable;
use domain::tasks::version::{ContentState, TaskVersionState};
use projections::read_models::public_tokens::callback as tokens;
use projections::read_models::runs::query as runs;
use projections::read_models::table_commands::query as commands;
use projections::read_models::tables::query as tables;
use projections::read_models::tasks::query as tasks;
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

/// `SandboxCommandOutputRequest`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxCommandOutputRequest {
    /// The Command's inputs.
    #[schema(value_type = Object)]
    pub inputs: Value,
}

fn unavailable(status: StatusCode, message: &str) -> ApiError {
    ApiError::code(Code::OutputRunUnavailable, message).with_status(status)
}

fn denied(message: &str) -> ApiError {
    ApiError::code(Code::OutputPolicyAuthorDenied, message)
}

/// Runs the run's Command with the script's inputs; answers the Command's
/// execution (null fields omitted).
#[utoipa::path(post, path = "/public/module/custom_tables/callback/command-output/{token_id}", tag = "custom_tables_public",
    params(("token_id" = Uuid, Path)), request_body = SandboxCommandOutputRequest,
    responses((status = 200, body = CommandExecution)))]
pub(super) async fn command_output(
    State(state): State<AppState>,
    ctx: Context,
    ApiPath(token_id): ApiPath<Uuid>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<SandboxCommandOutputRequest>,
) -> ApiResult<Json<CommandExecution>> {
    let token = tokens::by_id(&state.pool, token_id)
        .await?
        .filter(|t| bearer(&headers).is_some_and(|s| proves_secret(s, &t.secret_sha256)));
    let Some(token) = token else {
        return Err(unavailable(StatusCode::NOT_FOUND, "no such credential"));
    };
    let (Some(command_id), Some(run_id)) = (token.command_id, token.run_id) else {
        return Err(unavailable(StatusCode::NOT_FOUND, "no such credential"));
    };
    let conflict = |message| unavailable(StatusCode::CONFLICT, message);
    if !readable(token.revoked, token.valid_until, Utc::now()) {
        return Err(conflict("the credential is revoked or expired"));
    }
    let run = runs::run(&state.pool, run_id)
        .await?
        .filter(|r| !r.status.terminal())
        .ok_or_else(|| conflict("the run is no longer in progress"))?;
    let live = tasks::version(&state.pool, run.task_id, run.task_version_id)
        .await?
        .is_some_and(|v| {
            v.version.state == TaskVersionState::Published
                && v.version.content_state == ContentState::Active
        });
    if !live {
        return Err(conflict(
            "the task version is no longer active and published",
        ));
    }
    let command = commands::command(&state.pool, token.company_id, command_id)
        .await?
        .filter(|c| Some(c.version) == token.command_version)
        .ok_or_else(|| {
            ApiError::code(
                Code::OutputCommandStale,
                "the Command changed since the run started",
            )
        })?;
    if command.definition.authority != Authority::Definition {
        return Err(denied(
            "the Command is no longer a definition-authority Command",
        ));
    }
    submitter_sees_table(
        &state,
        &ctx,
        &token.created_by,
        token.company_id,
        command.table_id,
    )
    .await?;
    let inputs = checked_inputs(
        &command.definition,
        body.inputs,
        Code::OutputSchemaViolation,
    )?;
    let runner = Runner {
        state: &state,
        ctx,
        caller: None,
        definition_method: run.submission_source.output_method(AuthMethod::Command),
    };
    let execution = write(&runner, &command, &inputs, None)
        .await
        .map_err(|error| match error {
            ApiError::Coded(coded)
                if matches!(coded.code, Code::CommandMatchAmbiguous | Code::NotFound) =>
            {
                ApiError::code(Code::OutputCommandConflict, coded.message)
            }
            ApiError::NotFound
            | ApiError::Missing(_)
            | ApiError::Forbidden(_)
            | ApiError::Refused(_) => denied("the Command's author may no longer make its write"),
            other => other,
        })?;
    Ok(Json(execution))
}

/// The run's submitter (`user:<id>`) must still read the Command's table.
async fn submitter_sees_table(
    state: &AppState,
    ctx: &Context,
    submitter: &str,
    company: Uuid,
    table_id: Uuid,
) -> ApiResult<()> {
    let lost = || denied("the submitter no longer reads the Command's table");
    let user = submitter
        .strip_prefix("user:")
        .and_then(|id| Uuid::parse_str(id).ok())
        .ok_or_else(lost)?;
    let principal = crate::auth::user_principal(state, company, user, AuthMethod::Jwt)
        .await?
        .ok_or_else(lost)?;
    let table = tables::table(&state.pool, company, table_id)
        .await?
        .ok_or_else(lost)?;
    let caller = Caller {
        state: state.clone(),
        ctx: ctx.clone(),
        principal,
    };
    match open_table_id(
        &caller,
        &Mount::owning(&table),
        table_id,
        Operation::ReadRows,
    )
    .await
    {
        Ok(_) => Ok(()),
        Err(
            ApiError::NotFound
            | ApiError::Missing(_)
            | ApiError::Forbidden(_)
            | ApiError::Refused(_),
        ) => Err(lost()),
        Err(other) => Err(other),
    }
}
