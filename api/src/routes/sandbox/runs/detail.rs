//! The run detail as the routes answer it, with its queue position and ETA.

use super::views::{SandboxRunDetailResponse, SandboxRunListResponse};
use crate::error::{ApiError, ApiResult};
use crate::pagination::Listed;
use crate::state::AppState;
use domain::catalog::Provider;
use domain::runs::run::RunStatus;
use domain::secrets::resolve::SlotSources;
use domain::wire::wire;
use projections::read_models::runs::query::{self as runs, RunRow};
use serde_json::{Value, json};
use std::collections::HashMap;
use uuid::Uuid;

/// The queue positions and ETAs of runs, by id: managed cloud counts the company's
/// queued runs (no ETA); on-prem counts the executor queue (`starting` included)
/// and estimates from the last 20 completed runs of the profile. One query for
/// every position of a page, one per resource profile for the means.
async fn queue_facts(
    state: &AppState,
    rows: &[RunRow],
) -> ApiResult<HashMap<Uuid, (Option<i64>, Option<i64>)>> {
    let onprem = state.deployment.provider == Provider::Onprem;
    let waiting: Vec<&RunRow> = rows
        .iter()
        .filter(|row| match row.status {
            RunStatus::Queued => true,
            RunStatus::Starting => onprem,
            _ => false,
        })
        .collect();
    let positions = runs::queue_positions(&state.pool, &waiting, onprem).await?;
    let slots = state.builder.run_slots.max(1) as i64;
    let mut means: HashMap<&str, Option<f64>> = HashMap::new();
    let mut facts = HashMap::new();
    for row in waiting {
        let Some(position) = positions.get(&row.id).copied() else {
            continue;
        };
        let eta = if onprem {
            let profile = row.resource_profile.as_str();
            let mean = match means.get(profile) {
                Some(mean) => *mean,
                None => {
                    let mean = runs::mean_duration(&state.pool, profile).await?;
                    means.insert(profile, mean);
                    mean
                }
            };
            mean.map(|mean| ((position + slots - 1) / slots) * mean.ceil() as i64)
        } else {
            None
        };
        facts.insert(row.id, (Some(position), eta));
    }
    Ok(facts)
}

/// The detail of a run, with its queue facts.
fn render(
    row: RunRow,
    (queue_position, eta_seconds): (Option<i64>, Option<i64>),
) -> SandboxRunDetailResponse {
    SandboxRunDetailResponse {
        id: row.id,
        company_id: row.company_id,
        chatroom_id: row.chatroom_id,
        status: wire(&row.status),
        resource_profile: row.resource_profile,
        principal_type: row.principal_type.as_str().into(),
        principal_id: row.principal_id,
        auth_method: row.auth_method.as_str().into(),
        task_id: row.task_id,
        task_version_id: row.task_version_id,
        timeout_seconds: row.timeout_seconds,
        submission_source: wire(&row.submission_source),
        input_digest: row.input_digest,
        retry_of_run_id: row.retry_of_run_id,
        error_code: row.error_code,
        queue_position,
        eta_seconds,
        queued_at: Some(row.queued_at),
        terminal_at: row.terminal_at,
        secret_slot_provenance: row.slot_sources.map(|sources| provenance(&sources)),
    }
}

/// The detail of a run.
pub async fn detail(state: &AppState, row: RunRow) -> ApiResult<SandboxRunDetailResponse> {
    let mut facts = queue_facts(state, std::slice::from_ref(&row)).await?;
    let own = facts.remove(&row.id).unwrap_or((None, None));
    Ok(render(row, own))
}

/// `{slot: {resolved_via, consumer_scope}}`: whose value each slot used, masked
/// (no consumer id, no version, no value).
fn provenance(sources: &SlotSources) -> Value {
    sources
        .iter()
        .map(|(slot, source)| {
            let masked = json!({
                "resolved_via": source.resolved_via.as_str(),
                "consumer_scope": source.consumer_scope.as_str(),
            });
            (slot.clone(), masked)
        })
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// A page of runs with their details, in order.
pub async fn details(state: &AppState, page: Listed<RunRow>) -> ApiResult<SandboxRunListResponse> {
    let mut facts = queue_facts(state, &page.items).await?;
    let items = page
        .items
        .into_iter()
        .map(|row| {
            let own = facts.remove(&row.id).unwrap_or((None, None));
            render(row, own)
        })
        .collect();
    Ok(SandboxRunListResponse {
        items,
        next_page_token: page.next_page_token,
    })
}

/// Loads a run by id (after the caller's own command) and answers its detail.
pub async fn detail_of(state: &AppState, id: Uuid) -> ApiResult<SandboxRunDetailResponse> {
    let row = runs::run(&state.pool, id)
        .await?
        .ok_or(ApiError::NotFound)?;
    detail(state, row).await
}
