//! Scripts by file: `POST /tasks/{id}/script-uploads` (a handle reusable for 24
//! hours as `startup_script_id` / `work_script_id`) and
//! `POST /tasks/{id}/versions/{vid}/script-file?target=startup|work`.
//!
//! Both take multipart `file`. The body is guarded by Content-Length before it is
//! read (1 MiB of script plus multipart framing); the file is read with a cap, so a
//! script over 1 MiB is refused with 422 `script_too_large` without buffering it.

use super::draft;
use super::views::{
    SandboxScriptUploadResponse, SandboxTaskVersionRequest, SandboxTaskVersionResponse,
};
use crate::access::Task;
use crate::admission;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiQuery;
use crate::extract::{ApiPath, read_file_part};
use crate::middleware::body_limit;
use crate::request::Caller;
use crate::routes::sandbox::environments::check_upload_rate;
use crate::state::AppState;
use axum::Json;
use axum::extract::{DefaultBodyLimit, Multipart};
use axum::middleware::from_fn_with_state;
use bytes::Bytes;
use domain::error::Code;
use domain::objects::{ObjectCommand, ObjectKind, OwnedObject, StoredObject};
use domain::tasks::contents::MAX_SCRIPT_BYTES;
use domain::tasks::input;
use domain::tasks::version::TaskVersionCommand;
use projections::read_models::owned_objects::query as objects;
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// How long a script-upload handle works.
pub const HANDLE_TTL_HOURS: i64 = 24;

/// Multipart framing allowed on top of the script.
const FRAMING_BYTES: usize = 64 << 10;

/// The multipart routes, with their own body guard.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(upload_script))
        .routes(routes!(script_file))
        .layer(from_fn_with_state(
            MAX_SCRIPT_BYTES + FRAMING_BYTES,
            body_limit::guard,
        ))
        .layer(DefaultBodyLimit::max(MAX_SCRIPT_BYTES + FRAMING_BYTES))
}

fn script_error(code: Code, message: &str) -> ApiError {
    ApiError::code(code, message)
}

/// Reads the multipart `file` field as a script: at most 1 MiB, UTF-8, no NUL.
async fn read_script(multipart: Multipart) -> ApiResult<String> {
    let too_large = || script_error(Code::ScriptTooLarge, "the script is larger than 1 MiB");
    let bytes = read_file_part(multipart, MAX_SCRIPT_BYTES as u64, too_large).await?;
    let text = String::from_utf8(bytes)
        .map_err(|_| script_error(Code::ScriptNotUtf8, "the script is not UTF-8"))?;
    if text.contains('\0') {
        return Err(script_error(
            Code::ScriptContainsNul,
            "the script contains a NUL character",
        ));
    }
    Ok(text)
}

/// Stores a script and returns a handle for the task's drafts.
#[utoipa::path(post, path = "/tasks/{task_id}/script-uploads", tag = "tasks",
    params(("task_id" = Uuid, Path)),
    request_body(content_type = "multipart/form-data", description = "`file`: UTF-8, up to 1 MiB"),
    responses((status = 200, body = SandboxScriptUploadResponse)))]
async fn upload_script(
    caller: Caller,
    ApiPath(task_id): ApiPath<Uuid>,
    multipart: Multipart,
) -> ApiResult<Json<SandboxScriptUploadResponse>> {
    Task::owned(&caller, task_id).await?;
    let text = read_script(multipart).await?;
    let object_id = Uuid::new_v4();
    let key = format!(
        "scripts/{}/{task_id}/{object_id}",
        caller.principal.company_id
    );
    let digest = input::digest(text.as_bytes());
    let byte_size = text.len();
    {
        let _lock = admission::lock(caller.pool(), caller.principal.company_id, "uploads").await?;
        check_upload_rate(&caller.state, caller.principal.company_id, caller.ctx.time).await?;
        caller
            .state
            .objects
            .put_bytes(&key, Bytes::from(text))
            .await
            .map_err(ApiError::Internal)?;
        let stored = StoredObject {
            object_id,
            company_id: Some(caller.principal.company_id),
            kind: ObjectKind::Script,
            digest: digest.clone(),
            byte_size: byte_size as u64,
            key,
        };
        let command = ObjectCommand::Record(stored);
        caller.command::<OwnedObject>(object_id, command).await?;
    }
    Ok(Json(SandboxScriptUploadResponse {
        script_id: object_id,
        byte_size: byte_size as i64,
        digest,
        expires_at: caller.ctx.time + chrono::Duration::hours(HANDLE_TTL_HOURS),
    }))
}

/// The text behind a script-upload handle of this task, while it is valid.
pub async fn resolve(
    state: &AppState,
    task: &Task,
    handle: Uuid,
    field: &'static str,
) -> ApiResult<String> {
    let company = task.row.task.company_id;
    let prefix = format!("scripts/{company}/{}/", task.id());
    let ttl = HANDLE_TTL_HOURS as i32;
    let kind = ObjectKind::Script.as_str();
    let script = objects::live_upload(&state.pool, kind, company, handle, &prefix, ttl).await?;
    let Some((key, size)) = script.map(|o| (o.key, o.byte_size)) else {
        return Err(ApiError::invalid(
            &["body", &format!("{field}_id")],
            domain::validation::ViolationKind::Rule {
                kind: "value_error",
                message: "unknown or expired script upload".into(),
            },
            Some(handle.to_string().into()),
        ));
    };
    if size == 0 {
        return Ok(String::new());
    }
    let bytes = state
        .objects
        .get_range(&key, 0..size as u64)
        .await
        .map_err(ApiError::Internal)?;
    String::from_utf8(bytes.to_vec())
        .map_err(|_| script_error(Code::ScriptNotUtf8, "the script is not UTF-8"))
}

/// Which script a file replaces.
#[derive(Debug, Clone, Copy, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ScriptTarget {
    /// `startup` or `work`.
    #[param(value_type = ScriptTargetNames, inline)]
    pub target: Target,
}

crate::openapi::enums::names_of!(ScriptTargetNames, Target);

/// `startup` or `work`.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// The startup script.
    Startup,
    /// The work script.
    Work,
}

/// Replaces one script of a draft with an uploaded file.
#[utoipa::path(post, path = "/tasks/{task_id}/versions/{version_id}/script-file", tag = "tasks",
    params(("task_id" = Uuid, Path), ("version_id" = Uuid, Path), ScriptTarget),
    request_body(content_type = "multipart/form-data", description = "`file`: UTF-8, up to 1 MiB"),
    responses((status = 200, body = SandboxTaskVersionResponse)))]
async fn script_file(
    caller: Caller,
    ApiPath((task_id, version_id)): ApiPath<(Uuid, Uuid)>,
    ApiQuery(query): ApiQuery<ScriptTarget>,
    multipart: Multipart,
) -> ApiResult<Json<SandboxTaskVersionResponse>> {
    let task = Task::owned(&caller, task_id).await?;
    let version = task.version(&caller, version_id).await?.row.version;
    let text = read_script(multipart).await?;
    let mut request = SandboxTaskVersionRequest::default();
    match query.target {
        Target::Startup => request.startup_script = Some(Some(text)),
        Target::Work => request.work_script = Some(Some(text)),
    }
    let contents = draft::update(&caller.state, &task, version.contents.0, request).await?;
    let command = TaskVersionCommand::Edit(contents);
    super::versions::changed(&caller, &task, version_id, command).await
}
