//! Operator routes below `/root`, opened only by an operator token
//! ([`Operator`]): `POST /root/custom-tables/run-due-triggers` runs one trigger
//! pass now (issue 22 contract), as the server's own loop does every few seconds.

use crate::auth::operator::Operator;
use crate::error::{ApiError, ApiResult};
use crate::extract::OptionalJson;
use crate::routes::tables::triggers::{TriggerRunResponse, fire};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use chrono::{DateTime, Utc};
use domain::error::Code;
use projections::read_models::trigger_runs::query as runs;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// The operator routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(run_due_triggers))
}

/// A trigger pass request.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RunDueTriggersRequest {
    /// The pass's clock; honoured only when the server runs with
    /// `SANDBOX_ALLOW_CLOCK_OVERRIDE=true` (tests), else 400. Default: now.
    pub now: Option<DateTime<Utc>>,
}

/// What a pass created.
#[derive(Debug, Serialize, ToSchema)]
pub struct RunDueTriggersResponse {
    /// Trigger runs the pass created.
    pub created: usize,
    /// Those runs, oldest first, as they stand after the pass ran them.
    pub runs: Vec<TriggerRunResponse>,
}

/// Runs one trigger pass: new writes, reached dates and due schedule windows
/// become trigger runs, pending runs run, running runs whose sandbox runs ended
/// end. It waits for a pass another node is running.
#[utoipa::path(post, path = "/root/custom-tables/run-due-triggers", tag = "operator",
    request_body = RunDueTriggersRequest,
    responses((status = 200, body = RunDueTriggersResponse)))]
async fn run_due_triggers(
    State(state): State<AppState>,
    _: Operator,
    OptionalJson(request): OptionalJson<RunDueTriggersRequest>,
) -> ApiResult<Json<RunDueTriggersResponse>> {
    let now = match request.now {
        None => Utc::now(),
        Some(now) if state.deployment.allow_clock_override => now,
        Some(_) => {
            return Err(ApiError::code(
                Code::ClockOverrideDisabled,
                "now is honoured only when the server runs with SANDBOX_ALLOW_CLOCK_OVERRIDE=true",
            ));
        }
    };
    let created = fire::fire_at(&state, now)
        .await
        .map_err(ApiError::internal)?;
    let rows = runs::by_ids(&state.pool, &created).await?;
    Ok(Json(RunDueTriggersResponse {
        created: created.len(),
        runs: rows.into_iter().map(TriggerRunResponse::from).collect(),
    }))
}
