//! `POST /chatrooms/{cid}/quick-run`: a room manager runs scripts on a company-owned
//! or curated environment version without a catalog task. The input is staged after
//! the manager check and before anything is created; then a hidden task with a
//! published version 1 (within the company's timeout ceiling) and a run with
//! `submission_source=quick_run`. The task, version and run ids all derive from the
//! `Idempotency-Key`, so a repeated request replays the same run.

use super::admission::{Admission, admit, not_stageable, stage};
use super::views::{SandboxQuickRunRequest, SandboxQuickRunResponse};
use crate::access::{Room, TaskVersion as RunnableVersion};
use crate::error::{ApiError, ApiResult, from_spec};
use crate::extract::ApiPath;
use crate::extract::parse_json;
use crate::idempotency::IdempotencyKey;
use crate::middleware::body_limit;
use crate::request::Caller;
use crate::routes::sandbox::owners::check_text;
use crate::routes::sandbox::tasks::draft::check_fields;
use crate::routes::sandbox::tasks::versions::check_ceiling;
use crate::state::AppState;
use axum::Json;
use axum::extract::DefaultBodyLimit;
use axum::middleware::from_fn_with_state;
use bytes::Bytes;
use domain::environments::environment::OwnerScope;
use domain::environments::version::VersionState;
use domain::error::Code;
use domain::runs::run::{Run, RunError, SubmissionSource};
use domain::tasks::contents::VersionContents;
use domain::tasks::input::{self, InputLimits};
use domain::tasks::task::{Task, TaskCommand, TaskCreated, TaskError};
use domain::tasks::version::{
    TaskVersion, TaskVersionCommand, TaskVersionDrafted, TaskVersionError, TaskVersionState,
};
use projections::read_models::environments::query as environments;
use projections::store::CommandError;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// Two scripts of up to 1 MiB, the environment (256 KiB) and an input of up to 1 MiB.
pub const QUICK_RUN_BODY_LIMIT: usize = (3 << 20) + (320 << 10);

/// The Quick Run route, guarding its own body size.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(quick_run))
        .layer(from_fn_with_state(QUICK_RUN_BODY_LIMIT, body_limit::guard))
        .layer(DefaultBodyLimit::max(QUICK_RUN_BODY_LIMIT))
}

/// A ready environment version the company may run Quick Runs on: its own
/// company-owned ones and curated ones (404 otherwise; 409 when not ready).
async fn quick_run_environment(caller: &Caller, id: Uuid) -> ApiResult<()> {
    let usable = |e: &projections::read_models::environments::EnvironmentRow| {
        e.curated()
            || (e.company_id == Some(caller.principal.company_id)
                && e.owner_scope == OwnerScope::Company)
    };
    let pinned = environments::version_with_environment(caller.pool(), id).await?;
    match pinned.filter(|(_, e)| usable(e)) {
        None => Err(ApiError::NotFound),
        Some((v, _)) if v.state == VersionState::Ready => Ok(()),
        Some(_) => Err(ApiError::code(
            Code::EnvironmentVersionNotReady,
            "the environment version is not ready",
        )),
    }
}

/// Creates (or finds, on a replay) the hidden task and its published version 1.
/// Every step tolerates another request with the same key having done it (the
/// allocation is idempotent per version id, a second draft or publish is refused
/// harmlessly), and the function returns only once the read models show the
/// published version, whoever published it.
async fn hidden_task(
    caller: &Caller,
    ids: (Uuid, Uuid),
    name: String,
    contents: VersionContents,
) -> ApiResult<()> {
    let (task_id, version_id) = ids;
    let created = TaskCreated {
        task_id,
        company_id: caller.principal.company_id,
        owner_scope: OwnerScope::Company,
        owner_id: caller.principal.company_id,
        name,
        description: String::new(),
        agent_enabled: false,
        hidden: true,
    };
    let bus = &caller.state.bus;
    let meta = &caller.metadata();
    let task = task_id.to_string();
    match bus
        .append::<Task>(&task, TaskCommand::Create(created), meta)
        .await
    {
        Ok(_) | Err(CommandError::Rejected(TaskError::AlreadyExists)) => {}
        Err(error) => return Err(error.into()),
    }
    let allocate = TaskCommand::AllocateVersion { version_id };
    bus.append::<Task>(&task, allocate, meta).await?;
    let drafted = TaskVersionDrafted {
        version_id,
        task_id,
        company_id: caller.principal.company_id,
        version_number: 1,
        contents,
    };
    let version = version_id.to_string();
    match bus
        .append::<TaskVersion>(&version, TaskVersionCommand::Draft(drafted), meta)
        .await
    {
        Ok(_) | Err(CommandError::Rejected(TaskVersionError::AlreadyExists)) => {}
        Err(error) => return Err(error.into()),
    }
    match bus
        .append::<TaskVersion>(&version, TaskVersionCommand::Publish, meta)
        .await
    {
        Ok(_) | Err(CommandError::Rejected(TaskVersionError::IllegalTransition(..))) => {}
        Err(error) => return Err(error.into()),
    }
    bus.settle::<Task>(&task).await?;
    let settled = bus.settle::<TaskVersion>(&version).await?;
    if settled.state != TaskVersionState::Published {
        return Err(ApiError::internal(anyhow::anyhow!(
            "the hidden task version {version_id} is {:?}, not published",
            settled.state
        )));
    }
    Ok(())
}

/// Runs scripts on an environment version through a hidden task (room managers).
#[utoipa::path(post, path = "/chatrooms/{chatroom_id}/quick-run", tag = "runs",
    params(("chatroom_id" = Uuid, Path), ("Idempotency-Key" = String, Header)),
    request_body = SandboxQuickRunRequest,
    responses((status = 200, body = SandboxQuickRunResponse)))]
async fn quick_run(
    caller: Caller,
    key: IdempotencyKey,
    ApiPath(chatroom_id): ApiPath<Uuid>,
    body: Bytes,
) -> ApiResult<Json<SandboxQuickRunResponse>> {
    let room = Room::managed(&caller, chatroom_id).await?;
    let limits = InputLimits {
        max_bytes: QUICK_RUN_BODY_LIMIT,
        max_depth: InputLimits::default().max_depth + 2,
        max_nodes: InputLimits::default().max_nodes + 200,
    };
    input::parse_value(&body, limits).map_err(not_stageable)?;
    let request: SandboxQuickRunRequest = parse_json(&body)?;
    check_text(Some(&request.name), None)?;
    let staged = stage(&caller, request.input).await?;
    quick_run_environment(&caller, request.environment_version_id).await?;
    let facts = input::digest(
        serde_json::json!([
            &request.name,
            request.environment_version_id,
            &request.startup_script,
            &request.work_script,
            &request.ordinary_env,
            request.timeout_seconds
        ])
        .to_string()
        .as_bytes(),
    );
    let contents = VersionContents {
        environment_version_id: request.environment_version_id,
        startup_script: request.startup_script,
        work_script: request.work_script,
        ordinary_env: request.ordinary_env,
        input_instructions: None,
        input_example: None,
        input_schema: None,
        work_command: None,
        timeout_seconds: request.timeout_seconds,
        secret_slot_declarations: Vec::new(),
        requires_confirmation: false,
        output_policy: None,
        bundle: None,
    };
    check_fields(&contents)?;
    check_ceiling(
        &caller.state,
        caller.principal.company_id,
        contents.timeout_seconds,
    )
    .await?;
    let run_id = key.target(&caller.principal, &format!("runs.quick_run.{chatroom_id}"));
    // The hidden task is the request's: a key whose first request made no run (it
    // was refused at admission) runs what its next request sends, not what the
    // first one did.
    let made_of = [run_id.to_string(), facts.clone()];
    let made_of = [made_of[0].as_str(), made_of[1].as_str()];
    let task_id = domain::ids::derive("quick_run_task", &made_of);
    let version_id = domain::ids::derive("quick_run_version", &made_of);
    let first = caller.state.bus.load::<Run>(&run_id.to_string()).await?;
    if first
        .submitted
        .is_some_and(|first| first.task_version_id != version_id)
    {
        // The key's run was made of other scripts: nothing new is created.
        return Err(from_spec(&RunError::IdempotencyConflict));
    }
    hidden_task(&caller, (task_id, version_id), request.name, contents).await?;
    let version = RunnableVersion::runnable(&caller, version_id).await?;
    let admission = Admission {
        run_id,
        room: &room,
        version: &version,
        input: &staged,
        timeout_seconds: request.timeout_seconds,
        source: SubmissionSource::QuickRun,
        retry_of_run_id: None,
        share_required: false,
        request_facts: Some(facts),
    };
    let run = admit(&caller, admission).await?;
    Ok(Json(SandboxQuickRunResponse {
        task_id,
        task_version_id: version_id,
        run,
    }))
}
