//! `POST /tasks/{id}/versions/{vid}/input-preview`: the exact inputs file a run
//! would get, its digest, the runtime contract and the schema verdict. It dispatches
//! nothing; any non-restricted member of the company may call it.
//!
//! The body is parsed within the run-input bounds (1 MiB, depth 64, 100,000 nodes,
//! no NUL, no duplicate keys) before any value is built.

use super::views::*;
use crate::access::Task;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiPath;
use crate::request::Caller;
use crate::routes::sandbox::runs::admission::not_stageable;
use crate::state::AppState;
use axum::Json;
use axum::body::Bytes;
use domain::tasks::input::{self, InputLimits};
use domain::tasks::schema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// The preview route.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(input_preview))
}

/// The fixed invocation of every run.
pub const INVOCATION: &str = "sh -c '. /workspace/startup.sh && . /workspace/driver.sh'";

/// The runtime contract; `work_command` is filled for owners only.
pub fn runtime_contract(work_command: Option<String>) -> RuntimeContract {
    RuntimeContract {
        invocation: INVOCATION,
        inputs_file_env: "SERVICE_INPUTS_FILE",
        output_file_env: "SERVICE_OUTPUT_FILE",
        working_directory: "/workspace",
        network: "no outbound network at runtime; build-time RUN steps can reach the public internet",
        work_command,
    }
}

/// Previews the inputs file of a run of this version.
#[utoipa::path(post, path = "/tasks/{task_id}/versions/{version_id}/input-preview", tag = "tasks",
    params(("task_id" = Uuid, Path), ("version_id" = Uuid, Path)), request_body = SandboxInputPreviewRequest,
    responses((status = 200, body = SandboxInputPreviewResponse)))]
async fn input_preview(
    caller: Caller,
    ApiPath((task_id, version_id)): ApiPath<(Uuid, Uuid)>,
    body: Bytes,
) -> ApiResult<Json<SandboxInputPreviewResponse>> {
    let task = Task::read(&caller, task_id).await?;
    let version = task.version(&caller, version_id).await?.row.version;
    let limits = InputLimits::default();
    // The envelope `{"input": ...}` gets the bounds of the input plus a little room.
    let envelope = InputLimits {
        max_bytes: limits.max_bytes + 64,
        max_depth: limits.max_depth + 1,
        max_nodes: limits.max_nodes + 1,
    };
    let envelope = input::parse_value(&body, envelope).map_err(not_stageable)?;
    let serde_json::Value::Object(mut fields) = envelope else {
        return Err(body_shape());
    };
    let Some(value) = fields.remove("input") else {
        return Err(body_shape());
    };
    if !fields.is_empty() {
        return Err(body_shape());
    }
    let canonical = input::canonicalize(value, limits).map_err(not_stageable)?;
    let contents = version.contents.0;
    let schema_errors = match &contents.input_schema {
        Some(s) => match schema::compile(s) {
            Ok(validator) => schema::violations(&validator, &canonical.value),
            Err(problems) => problems,
        },
        None => Vec::new(),
    };
    let owner = task.owner();
    Ok(Json(SandboxInputPreviewResponse {
        input_file_content: String::from_utf8_lossy(&canonical.canonical).into_owned(),
        input_digest: canonical.digest,
        runtime_contract: runtime_contract(
            owner.then(|| contents.effective_work_command().to_string()),
        ),
        schema_valid: schema_errors.is_empty(),
        schema_errors,
    }))
}

fn body_shape() -> ApiError {
    ApiError::invalid(
        &["body", "input"],
        domain::validation::ViolationKind::Rule {
            kind: "value_error",
            message: "the body must be {\"input\": <any JSON>} with no other field".into(),
        },
        None,
    )
}
