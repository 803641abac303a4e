//! `sandbox_job_menu`: the room's adopted exact versions with their input schema
//! and secret slots: the REST menu's entries without `runtime_contract` (and, like
//! it, never scripts).

use super::super::call::AgentCall;
use super::super::refusal::{ToolError, ToolResult};
use crate::pagination::PageQuery;
use crate::routes::sandbox::rooms::menu::menu_page;
use serde::Deserialize;
use serde_json::json;

/// The longest `query`.
pub const MAX_QUERY_CHARS: usize = 256;

/// Arguments of `sandbox_job_menu`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MenuArgs {
    /// Entries per page, 1..100 (default 20).
    page_size: Option<i64>,
    /// Cursor of a previous page.
    page_token: Option<String>,
    /// Only tasks whose name contains this (case-insensitive).
    query: Option<String>,
}

/// One page of the menu.
pub async fn run(call: &AgentCall, args: MenuArgs) -> ToolResult {
    if args
        .query
        .as_ref()
        .is_some_and(|q| q.chars().count() > MAX_QUERY_CHARS)
    {
        return Err(ToolError::invalid(format!(
            "query: at most {MAX_QUERY_CHARS} characters"
        )));
    }
    let page = PageQuery {
        page_size: args.page_size,
        page_token: args.page_token,
    }
    .page(20)?;
    let search = args
        .query
        .as_deref()
        .map(str::trim)
        .filter(|q| !q.is_empty());
    let menu = menu_page(&call.caller, &call.room, search, page).await?;
    let items: Vec<_> = menu
        .items
        .into_iter()
        .map(|item| {
            json!({
                "task_id": item.task_id,
                "task_name": item.task_name,
                "task_version_id": item.task_version_id,
                "task_version_digest": item.task_version_digest,
                "input_schema": item.input_schema,
                "secret_slots": item.secret_slots,
                "secret_use_risk_warning": item.secret_use_risk_warning,
            })
        })
        .collect();
    Ok(json!({"items": items, "next_page_token": menu.next_page_token}))
}
