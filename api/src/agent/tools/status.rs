//! `sandbox_job_status`: a run of the room the principal can read, its status and
//! bounded previews (`previews.rs`): output, log, and up to 20 artifact rows.
//! `wait_seconds` (0..60) and `artifact_page_token` are accepted and have no
//! effect (spec section 4); artifacts have no paging.

use super::super::call::AgentCall;
use super::super::refusal::{ToolError, ToolResult};
use super::previews;
use crate::access::Run;
use crate::pagination::{MAX_TOKEN_CHARS, Page};
use projections::read_models::runs::query as runs;
use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

/// The most artifact rows a status carries.
pub const ARTIFACT_ROWS: i64 = 20;
/// The longest wait a caller may ask for.
pub const MAX_WAIT_SECONDS: i64 = 60;

/// Arguments of `sandbox_job_status`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatusArgs {
    /// The run.
    run_id: Uuid,
    /// 0..60; no effect.
    wait_seconds: Option<i64>,
    /// No effect (artifacts have no paging).
    artifact_page_token: Option<String>,
}

/// The run's status and previews.
pub async fn run(call: &AgentCall, args: StatusArgs) -> ToolResult {
    if args
        .wait_seconds
        .is_some_and(|w| !(0..=MAX_WAIT_SECONDS).contains(&w))
    {
        return Err(ToolError::invalid("wait_seconds: 0..60"));
    }
    if args
        .artifact_page_token
        .is_some_and(|t| t.chars().count() > MAX_TOKEN_CHARS)
    {
        return Err(ToolError::invalid(
            "artifact_page_token: at most 512 characters",
        ));
    }
    let caller = &call.caller;
    let run = Run::in_room(caller, call.room.id, args.run_id).await?.row;
    let objects = &caller.state.objects;
    let held = run.content_active();
    let output = match (&run.output_key, held) {
        (Some(key), true) => previews::output(objects, key).await,
        _ => Value::Null,
    };
    let log = match (&run.log_key, held) {
        (Some(key), true) => previews::log(objects, key).await,
        _ => Value::Null,
    };
    let artifacts = if held {
        let page: Page<String> = Page {
            size: ARTIFACT_ROWS,
            after: None,
        };
        runs::artifacts(caller.pool(), run.id, page.window()).await?
    } else {
        Vec::new()
    };
    let truncated = artifacts.len() as i64 > ARTIFACT_ROWS;
    let rows: Vec<_> = artifacts
        .into_iter()
        .take(ARTIFACT_ROWS as usize)
        .map(|a| {
            json!({
                "id": a.id,
                "relative_path": a.relative_path,
                "byte_size": a.byte_size,
                "digest": a.digest,
                "declared_content_type": a.declared_content_type,
            })
        })
        .collect();
    Ok(json!({
        "run": super::run_summary(&run),
        "output": output,
        "log": log,
        "artifacts": {"items": rows, "truncated": truncated},
    }))
}
