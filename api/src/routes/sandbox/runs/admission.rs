//! Admitting a run: the input is bounded, canonicalized and staged before anything
//! else (spec rule 3); then the room, the version, the live share and the input
//! schema are checked; then, under the company's admission lock, the queue limits
//! and the budget (the pricing envelope, `budget.rs`), together with the
//! company's other waiting submissions (`together.rs`); and only then is the run
//! queued. The lock covers the decision and the append, not the wait for the read
//! models (the counts include submissions not projected yet). Submission and retry
//! share this path.

use super::detail::detail_of;
use super::together::{self, Candidate};
use super::views::SandboxRunDetailResponse;
use crate::access::Room;
use crate::admission;
use crate::error::{ApiError, ApiResult, from_spec};
use crate::objects::Written;
use crate::request::Caller;
use crate::routes::sandbox::tasks::output_policy;
use crate::secrets::slots;
use crate::state::AppState;
use bytes::Bytes;
use domain::catalog::{Provider, ResourceProfile};
use domain::error::Code;
use domain::runs::run::{Run, RunError, RunSubmitted, StoredObject, SubmissionSource};
use domain::sharing::binding::SlotAssignment;
use domain::tasks::contents::VersionContents;
use domain::tasks::input::{self, InputError, InputLimits};
use domain::tasks::schema;
use projections::read_models::environments::query as environments;
use projections::read_models::runs::query as runs;
use projections::read_models::tasks::VersionRow;
use serde_json::{Value, json};
use uuid::Uuid;

/// The on-prem queue of one company (the smaller of this and the policy's
/// queued-run limit applies; Quick Run included).
pub const ONPREM_COMPANY_QUEUE: i64 = 20;
/// The on-prem fleet queue.
pub const ONPREM_FLEET_QUEUE: i64 = 200;
/// `Retry-After` of `queue_full`.
pub const QUEUE_RETRY_AFTER_SECONDS: i64 = 60;
/// The longest `timeout_seconds`.
pub const MAX_TIMEOUT_SECONDS: i64 = 604_680;

/// A staged inputs file.
#[derive(Debug, Clone)]
pub struct StagedInput {
    /// The input value.
    pub value: Value,
    /// The stored canonical bytes.
    pub object: StoredObject,
}

/// The refusal of an input that cannot be canonicalized or kept.
pub fn not_stageable(error: InputError) -> ApiError {
    ApiError::code(Code::InputNotStageable, error.to_string()).with("rule", error.rule())
}

/// Canonicalizes an input and stores its inputs file, content-addressed (the same
/// bytes always land on the same key, so a replay or a conflict never rewrites
/// another run's input).
pub async fn stage(caller: &Caller, value: Value) -> ApiResult<StagedInput> {
    let canonical = input::canonicalize(value, InputLimits::default()).map_err(not_stageable)?;
    let hex = canonical.digest.trim_start_matches("sha256:");
    let company = caller.principal.company_id;
    let key = format!("runs/inputs/{company}/{hex}.json");
    let bytes = Bytes::from(canonical.canonical.clone());
    let written = put_input(&caller.state, company, &key, bytes)
        .await
        .map_err(staging_unavailable)?;
    Ok(StagedInput {
        value: canonical.value,
        object: StoredObject {
            key,
            byte_size: written.byte_size as i64,
            digest: written.digest,
        },
    })
}

/// An inputs file staged earlier, verified against its digest (`None` when it is
/// gone, unreadable or not the bytes recorded): a retry's or a confirmed
/// proposal's input. It is put in place again, so it counts as freshly staged for
/// the janitor, which keeps a recently written inputs file; a failure to put it
/// is `input_staging_unavailable`, as for a new input.
pub async fn staged_input(
    state: &AppState,
    company: Uuid,
    key: &str,
    digest: &str,
) -> ApiResult<Option<StagedInput>> {
    let Ok(bytes) = state.objects.get_bytes(key).await else {
        return Ok(None);
    };
    if input::digest(&bytes) != digest {
        return Ok(None);
    }
    let Ok(value) = serde_json::from_slice::<Value>(&bytes) else {
        return Ok(None);
    };
    let byte_size = bytes.len() as i64;
    put_input(state, company, key, bytes)
        .await
        .map_err(staging_unavailable)?;
    Ok(Some(StagedInput {
        value,
        object: StoredObject {
            key: key.to_string(),
            byte_size,
            digest: digest.to_string(),
        },
    }))
}

fn staging_unavailable(error: anyhow::Error) -> ApiError {
    tracing::error!(error = format!("{error:#}"), "input staging failed");
    ApiError::code(
        Code::InputStagingUnavailable,
        "the input could not be stored; try again later",
    )
}

/// Puts an inputs file in place under its object lock: the run contents janitor
/// checks and deletes an expired run's inputs file under the same lock, so a
/// submission of the same bytes either lands first (the file is fresh and stays)
/// or after the file went (and puts it back).
async fn put_input(
    state: &AppState,
    company: Uuid,
    key: &str,
    bytes: Bytes,
) -> anyhow::Result<Written> {
    let _lock = admission::object_lock(&state.pool, company, key).await?;
    state.objects.put_content_addressed(key, bytes).await
}

/// Enforces the version's input schema; fails open when the stored schema cannot
/// be compiled (spec rule 2).
pub fn check_schema(contents: &VersionContents, value: &Value) -> ApiResult<()> {
    let Some(stored) = &contents.input_schema else {
        return Ok(());
    };
    let Ok(validator) = schema::compile(stored) else {
        tracing::warn!("a published input schema does not compile; the input is not checked");
        return Ok(());
    };
    let problems = schema::violations(&validator, value);
    if problems.is_empty() {
        return Ok(());
    }
    Err(ApiError::code(
        Code::InputSchemaViolation,
        "the input does not satisfy the version's input schema",
    )
    .with("errors", json!(problems)))
}

/// Checks a submission's timeout (1..604680; it may exceed the company ceiling).
pub fn check_timeout(timeout: i64) -> ApiResult<i64> {
    let mut violations = domain::validation::Violations::new();
    violations.range("timeout_seconds", timeout, 1, MAX_TIMEOUT_SECONDS);
    violations
        .into_result()
        .map_err(|v| ApiError::Validation(v.0))?;
    Ok(timeout)
}

/// Everything a new run is made of.
pub struct Admission<'a> {
    /// The run's id (from the Idempotency-Key).
    pub run_id: Uuid,
    /// The room.
    pub room: &'a Room,
    /// The version.
    pub version: &'a VersionRow,
    /// The staged input.
    pub input: &'a StagedInput,
    /// Seconds from start.
    pub timeout_seconds: i64,
    /// Where it comes from.
    pub source: SubmissionSource,
    /// The run it retries.
    pub retry_of_run_id: Option<Uuid>,
    /// Whether a live share must reach the room (not for Quick Run's hidden task).
    pub share_required: bool,
    /// Facts of the request beyond the run's own (Quick Run's scripts), so a reused
    /// key with another request is a conflict rather than a replay.
    pub request_facts: Option<String>,
}

/// The run's resource profile: the one of the environment version the task version
/// pins (it decides the run's CPU and memory limits, catalog `resource_profiles`).
async fn resource_profile(caller: &Caller, version: &VersionRow) -> ApiResult<ResourceProfile> {
    let pinned = version.contents.environment_version_id;
    let (environment_version, _) = environments::version_with_environment(caller.pool(), pinned)
        .await?
        .ok_or_else(|| {
            ApiError::internal(anyhow::anyhow!(
                "the pinned environment version {pinned} is unknown"
            ))
        })?;
    Ok(environment_version.resource_profile)
}

/// What a submission asks for, as the Run aggregate compares a key's replay with
/// its first request.
fn request_hash(
    room: Uuid,
    version: Uuid,
    input_digest: &str,
    timeout_seconds: i64,
    retry_of_run_id: Option<Uuid>,
    request_facts: Option<&str>,
) -> String {
    let request = json!([
        room,
        version,
        input_digest,
        timeout_seconds,
        retry_of_run_id,
        request_facts
    ]);
    input::digest(request.to_string().as_bytes())
}

/// The answer to a retry resent with its key and no input, when the key's run
/// exists: that run (whatever happened since to the source's content or version,
/// which a new retry needs), or 409 `idempotency_conflict` when the first retry
/// asked for something else. `None`: the key made no run yet, or the read models
/// do not show it yet.
pub async fn replayed_retry(
    caller: &Caller,
    run_id: Uuid,
    room: Uuid,
    source: &runs::RunRow,
) -> ApiResult<Option<SandboxRunDetailResponse>> {
    let run = caller.state.bus.load::<Run>(&run_id.to_string()).await?;
    let Some(first) = run.submitted else {
        return Ok(None);
    };
    let replay = request_hash(
        room,
        source.task_version_id,
        &source.input_digest,
        source.timeout_seconds,
        Some(source.id),
        None,
    );
    if first.request_hash != replay {
        return Err(from_spec(&RunError::IdempotencyConflict));
    }
    match detail_of(&caller.state, run_id).await {
        Ok(detail) => Ok(Some(detail)),
        // Not shown yet (its first request is still settling): the usual path answers.
        Err(ApiError::NotFound) => Ok(None),
        Err(error) => Err(error),
    }
}

/// Checks the live share and the queue limits and queues the run (or replays it).
pub async fn admit(
    caller: &Caller,
    admission: Admission<'_>,
) -> ApiResult<SandboxRunDetailResponse> {
    let Admission {
        run_id,
        room,
        version,
        input,
        timeout_seconds,
        source,
        retry_of_run_id,
        share_required,
        request_facts,
    } = admission;
    let request_hash = request_hash(
        room.id,
        version.id,
        &input.object.digest,
        timeout_seconds,
        retry_of_run_id,
        request_facts.as_deref(),
    );
    // A replay answers the original run whatever changed since (the aggregate
    // compares the request); only a new run is checked against the share, the
    // schema and the queues.
    let exists = runs::exists(caller.pool(), run_id).await?;
    let grant = if share_required && !exists {
        Some(room.required_grant(caller, version.task_id).await?)
    } else {
        None
    };
    if !exists {
        check_schema(&version.contents, &input.value)?;
        output_policy::check_submission(caller, room.id, &version.contents).await?;
    }
    let slot_sources = match &grant {
        Some(grant) => {
            let slots = SlotAssignment::all(
                version.contents.secret_slot_names(),
                &grant.secret_slot_policies,
            );
            slots::pin(
                caller.pool(),
                room.place(),
                version.task_id,
                &version.contents,
                slots,
            )
            .await?
        }
        None => None,
    };
    let profile = resource_profile(caller, version).await?;
    let submitted = RunSubmitted {
        run_id,
        company_id: caller.principal.company_id,
        chatroom_id: room.id,
        task_id: version.task_id,
        task_version_id: version.id,
        share_grant_id: grant.map(|g| g.id),
        principal_type: caller.principal.principal_type,
        principal_id: caller.principal.principal_id,
        auth_method: caller.principal.auth_method,
        api_key_id: caller.principal.api_key_id,
        submission_source: source,
        input_digest: input.object.digest.clone(),
        input: input.object.clone(),
        timeout_seconds,
        resource_profile: profile.as_str().into(),
        retry_of_run_id,
        request_hash,
        slot_sources,
        hold: None,
    };
    let candidate = Candidate {
        submitted,
        profile,
        // Quick Run is outside the queued-run limit; its retries are not.
        counted: source != SubmissionSource::QuickRun || retry_of_run_id.is_some(),
        onprem: caller.state.deployment.provider == Provider::Onprem,
    };
    let committed = together::admit(caller, candidate).await?;
    caller.wait(&committed).await?;
    detail_of(&caller.state, run_id).await
}
