//! `sandbox_submitted_jobs`: the principal's pending proposals in the room, each
//! with a freshly signed receipt, and a page of its recent runs there. Never an
//! output, a log, a secret or a URL.

use super::super::call::AgentCall;
use super::super::receipt::ReceiptBinding;
use super::super::refusal::ToolResult;
use crate::pagination::PageQuery;
use chrono::Utc;
use projections::read_models::agent_proposals::query as proposals;
use projections::read_models::runs::query::{self as runs, Submitter};
use serde::Deserialize;
use serde_json::json;

/// Arguments of `sandbox_submitted_jobs`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubmittedArgs {
    /// Runs per page, 1..100 (default 20).
    page_size: Option<i64>,
    /// Cursor of a previous page of runs.
    page_token: Option<String>,
}

/// Pending proposals and recent runs.
pub async fn run(call: &AgentCall, args: SubmittedArgs) -> ToolResult {
    let page = PageQuery {
        page_size: args.page_size,
        page_token: args.page_token,
    }
    .page(20)?;
    let caller = &call.caller;
    let company = caller.principal.company_id;
    let now = Utc::now();
    let principal = caller.principal.reference();
    let pending: Vec<_> = proposals::pending(caller.pool(), company, call.principal(), now)
        .await?
        .into_iter()
        .filter(|p| p.chatroom_id == call.room.id)
        .map(|p| {
            let binding = ReceiptBinding {
                proposal_id: p.id,
                principal: &principal,
                chatroom_id: p.chatroom_id,
                input_digest: &p.input_digest,
                task_version_id: p.task_version_id,
            };
            json!({
                "proposal_id": p.id,
                "proposal_receipt": caller.state.receipts.sign(&binding, now.timestamp()),
                "summary": p.summary,
                "requires_confirmation": p.requires_confirmation,
                "task_id": p.task_id,
                "task_version_id": p.task_version_id,
                "state": p.state,
                "created_at": p.created_at,
                "expires_at": p.expires_at,
            })
        })
        .collect();
    let who = Submitter::Principal(
        caller.principal.principal_type,
        caller.principal.principal_id,
    );
    let room = call.room.id;
    let recent = async |w| runs::room_runs(caller.pool(), company, room, &[], who, w).await;
    let listed = page.fetch(recent, |r| (r.queued_at, r.id)).await?;
    let runs: Vec<_> = listed.items.iter().map(super::run_summary).collect();
    Ok(json!({
        "pending_proposals": pending,
        "runs": runs,
        "next_page_token": listed.next_page_token,
    }))
}
