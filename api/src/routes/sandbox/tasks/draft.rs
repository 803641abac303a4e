//! Building a draft's contents from a create or update request: script handles,
//! JSON-or-text fields, the environment pin, the output policy, and the checks that
//! turn into 422 responses (field bounds as the validation array, the job contract
//! as `job_contract_invalid`).

use super::views::{Patch, SandboxTaskVersionRequest};
use super::{bundles, output_policy, scripts};
use crate::access::Task;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use domain::environments::environment::OwnerScope;
use domain::environments::version::VersionState;
use domain::error::Code;
use domain::tasks::contents::{
    DEFAULT_TIMEOUT_SECONDS, OutputPolicy, VersionContents, contract_problems, field_problems,
};
use domain::tasks::input::{self, InputLimits};
use domain::validation::{Violation, ViolationKind};
use projections::read_models::environments::query as environments;
use serde_json::{Value, json};
use uuid::Uuid;

/// The contents of a new draft: defaults, then the request.
pub async fn create(
    state: &AppState,
    task: &Task,
    request: SandboxTaskVersionRequest,
) -> ApiResult<VersionContents> {
    let Some(Some(environment_version_id)) = request.environment_version_id else {
        return Err(ApiError::invalid(
            &["body", "environment_version_id"],
            ViolationKind::Missing,
            None,
        ));
    };
    let base = VersionContents {
        environment_version_id,
        startup_script: String::new(),
        work_script: String::new(),
        ordinary_env: Default::default(),
        input_instructions: None,
        input_example: None,
        input_schema: None,
        work_command: None,
        timeout_seconds: DEFAULT_TIMEOUT_SECONDS,
        secret_slot_declarations: Vec::new(),
        requires_confirmation: false,
        output_policy: None,
        bundle: None,
    };
    update(state, task, base, request).await
}

/// The contents of a draft after an update: every field the request names replaces
/// the current one (`null` clears an optional field).
pub async fn update(
    state: &AppState,
    task: &Task,
    current: VersionContents,
    request: SandboxTaskVersionRequest,
) -> ApiResult<VersionContents> {
    let mut c = current;
    let mut contract = Vec::new();
    match request.environment_version_id {
        Some(Some(id)) => c.environment_version_id = id,
        Some(None) => return Err(missing("environment_version_id")),
        None => {}
    }
    if let Some(script) = script(
        state,
        task,
        request.startup_script,
        request.startup_script_id,
        "startup_script",
    )
    .await?
    {
        c.startup_script = script;
    }
    if let Some(script) = script(
        state,
        task,
        request.work_script,
        request.work_script_id,
        "work_script",
    )
    .await?
    {
        c.work_script = script;
    }
    if let Some(env) = request.ordinary_env {
        c.ordinary_env = env.unwrap_or_default();
    }
    if let Some(text) = request.input_instructions {
        c.input_instructions = text;
    }
    if let Some(example) = request.input_example {
        c.input_example = json_field(example, "input_example", &mut contract);
    }
    if let Some(schema) = request.input_schema {
        c.input_schema = json_field(schema, "input_schema", &mut contract);
    }
    if let Some(command) = request.work_command {
        c.work_command = command;
    }
    if let Some(timeout) = request.timeout_seconds {
        c.timeout_seconds = timeout.unwrap_or(DEFAULT_TIMEOUT_SECONDS);
    }
    if let Some(slots) = request.secret_slot_declarations {
        c.secret_slot_declarations = slots
            .unwrap_or_default()
            .into_iter()
            .map(Into::into)
            .collect();
    }
    if let Some(confirmation) = request.requires_confirmation {
        c.requires_confirmation = confirmation.unwrap_or(false);
    }
    if let Some(policy) = request.output_policy {
        c.output_policy = policy.map(output_policy).transpose()?;
    }
    match request.bundle_id {
        Some(Some(handle)) => c.bundle = Some(bundles::resolve(state, task, handle).await?),
        Some(None) => c.bundle = None,
        None => {}
    }
    check_fields(&c)?;
    contract.extend(contract_problems(&c));
    contract.truncate(domain::tasks::schema::MAX_PROBLEMS);
    if !contract.is_empty() {
        return Err(ApiError::code(
            Code::JobContractInvalid,
            format!("the job contract has {} problem(s)", contract.len()),
        )
        .with("errors", json!(contract)));
    }
    check_pin(state, task, c.environment_version_id).await?;
    if let Some(policy) = &c.output_policy {
        output_policy::check_draft(state, task.row.task.company_id, policy).await?;
    }
    Ok(c)
}

fn missing(field: &str) -> ApiError {
    ApiError::invalid(&["body", field], ViolationKind::Missing, None)
}

/// A script given inline or as a script-upload handle (not both).
async fn script(
    state: &AppState,
    task: &Task,
    inline: Patch<String>,
    handle: Patch<Uuid>,
    field: &'static str,
) -> ApiResult<Option<String>> {
    match (inline, handle) {
        (Some(_), Some(_)) => Err(ApiError::invalid(
            &["body", field],
            ViolationKind::Rule {
                kind: "value_error",
                message: format!("send {field} or {field}_id, not both"),
            },
            None,
        )),
        (Some(text), None) => Ok(Some(text.unwrap_or_default())),
        (None, Some(Some(id))) => scripts::resolve(state, task, id, field).await.map(Some),
        (None, Some(None)) => Ok(Some(String::new())),
        (None, None) => Ok(None),
    }
}

/// A field that may be a JSON value or a string holding JSON text. Text that is not
/// JSON is a job-contract problem.
fn json_field(value: Option<Value>, field: &str, contract: &mut Vec<String>) -> Option<Value> {
    match value? {
        Value::String(text) => match input::parse_value(text.as_bytes(), InputLimits::default()) {
            Ok(value) => Some(value),
            Err(error) => {
                contract.push(format!("{field} is not JSON: {error}"));
                None
            }
        },
        other => Some(other),
    }
}

fn output_policy(value: Value) -> ApiResult<OutputPolicy> {
    serde_json::from_value(value).map_err(|error| {
        ApiError::code(Code::OutputPolicyInvalid, format!("output_policy: {error}"))
    })
}

/// The environment version must exist in the caller's company (or be curated) and
/// be one the task may pin: a department's environment only by tasks of that
/// department or company-owned tasks.
async fn check_pin(state: &AppState, task: &Task, version_id: Uuid) -> ApiResult<()> {
    let task_row = &task.row.task;
    let pinnable = match environments::version_with_environment(&state.pool, version_id).await? {
        None => false,
        Some((version, _)) if version.state == VersionState::Archived => false,
        Some((_, environment)) if environment.curated() => true,
        Some((_, environment)) => {
            environment.company_id == Some(task_row.company_id)
                && (environment.owner_scope == OwnerScope::Company
                    || task_row.owner_scope == OwnerScope::Company
                    || environment.owner_id == Some(task_row.owner_id))
        }
    };
    if pinnable {
        Ok(())
    } else {
        Err(ApiError::invalid(
            &["body", "environment_version_id"],
            ViolationKind::Rule {
                kind: "value_error",
                message: "not an environment version this task may pin".into(),
            },
            Some(version_id.to_string().into()),
        ))
    }
}

/// Refuses contents whose fields are out of bounds (the standard validation array).
pub fn check_fields(contents: &VersionContents) -> ApiResult<()> {
    let problems = field_problems(contents);
    if problems.is_empty() {
        return Ok(());
    }
    Err(ApiError::Validation(
        problems
            .into_iter()
            .map(|p| Violation {
                loc: vec!["body".into(), p.field.into()],
                kind: ViolationKind::Rule {
                    kind: "value_error",
                    message: p.message,
                },
                input: None,
            })
            .collect(),
    ))
}
