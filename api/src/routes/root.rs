//! Operator routes below `/root`, opened only by an operator token
//! ([`Operator`]): `POST /root/custom-tables/run-due-triggers` runs one trigger
//! pass now (issue 22 contract), as the server's own loop does every few seconds;
//! `GET /root/hotfix/custom-table-agent-deliveries` lists the agent delivery
//! markers not yet acknowledged and `POST .../acknowledge` retires them (spec
//! `custom-tables.md` 5.8.4: a preview unless `execute: true`; still-valid markers
//! only with `force: true`).

use crate::auth::operator::Operator;
use crate::error::{ApiError, ApiResult};
use crate::extract::OptionalJson;
use crate::extract::{ApiJson, ApiQuery};
use crate::routes::tables::triggers::{TriggerRunResponse, fire};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use chrono::{DateTime, Utc};
use domain::error::Code;
use domain::tables::agent_delivery::{AgentDelivery, DeliveryCommand};
use projections::read_models::table_commands::query::{self as commands, DeliveryRow};
use projections::read_models::trigger_runs::query as runs;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// The operator routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(run_due_triggers))
        .routes(routes!(list_agent_deliveries))
        .routes(routes!(acknowledge_agent_deliveries))
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

/// Which markers a hotfix route looks at.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct AgentDeliveryFilter {
    /// Only this company's markers.
    pub company_id: Option<Uuid>,
    /// Only this Command's markers.
    pub command_id: Option<Uuid>,
}

/// `AgentDeliveryMarker`.
#[derive(Debug, Serialize, ToSchema)]
pub struct AgentDeliveryMarker {
    /// The marker.
    pub id: Uuid,
    /// Its company.
    pub company_id: Uuid,
    /// The Command delivered.
    pub command_id: Uuid,
    /// The agent (`social_media_client:<id>`).
    pub agent: String,
    /// The delivery's key.
    pub key: String,
    /// The record it wrote.
    pub record_id: Uuid,
    /// `created` or `updated`.
    pub op: String,
    /// Left.
    pub marked_at: DateTime<Utc>,
    /// Valid until.
    pub expires_at: DateTime<Utc>,
    /// Whether a re-delivery is still reconciled to it.
    pub valid: bool,
}

impl AgentDeliveryMarker {
    fn new(row: DeliveryRow, now: DateTime<Utc>) -> Self {
        Self {
            valid: row.expires_at > now,
            id: row.id,
            company_id: row.company_id,
            command_id: row.command_id,
            agent: row.agent,
            key: row.key,
            record_id: row.record_id,
            op: row.op,
            marked_at: row.marked_at,
            expires_at: row.expires_at,
        }
    }
}

/// `AgentDeliveryList`.
#[derive(Debug, Serialize, ToSchema)]
pub struct AgentDeliveryList {
    /// Markers not yet acknowledged (expired ones included), oldest first.
    pub markers: Vec<AgentDeliveryMarker>,
    /// Their number.
    pub total: usize,
}

/// The agent delivery markers not yet acknowledged.
#[utoipa::path(get, path = "/root/hotfix/custom-table-agent-deliveries", tag = "operator",
    params(AgentDeliveryFilter),
    responses((status = 200, body = AgentDeliveryList)))]
async fn list_agent_deliveries(
    State(state): State<AppState>,
    _: Operator,
    ApiQuery(filter): ApiQuery<AgentDeliveryFilter>,
) -> ApiResult<Json<AgentDeliveryList>> {
    let now = Utc::now();
    let rows = commands::open_markers(&state.pool, filter.company_id, filter.command_id).await?;
    let markers: Vec<_> = rows
        .into_iter()
        .map(|row| AgentDeliveryMarker::new(row, now))
        .collect();
    Ok(Json(AgentDeliveryList {
        total: markers.len(),
        markers,
    }))
}

/// `AgentDeliveryAcknowledgeRequest`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentDeliveryAcknowledgeRequest {
    /// Only these markers (default: every open marker the filters select).
    pub marker_ids: Option<Vec<Uuid>>,
    /// Only this company's markers.
    pub company_id: Option<Uuid>,
    /// Only this Command's markers.
    pub command_id: Option<Uuid>,
    /// Acknowledge (true) or only preview (false, the default).
    #[serde(default)]
    pub execute: bool,
    /// Acknowledge still-valid markers too (default: expired ones only).
    #[serde(default)]
    pub force: bool,
}

/// `AgentDeliveryAcknowledgeResponse`.
#[derive(Debug, Serialize, ToSchema)]
pub struct AgentDeliveryAcknowledgeResponse {
    /// Whether the markers were acknowledged (false: a preview).
    pub executed: bool,
    /// The markers acknowledged (or that would be).
    pub acknowledged: Vec<Uuid>,
    /// Selected markers left alone because they are still valid and `force` was
    /// not set.
    pub skipped_valid: Vec<Uuid>,
}

/// Acknowledges (retires) agent delivery markers; a preview by default.
#[utoipa::path(post, path = "/root/hotfix/custom-table-agent-deliveries/acknowledge", tag = "operator",
    request_body = AgentDeliveryAcknowledgeRequest,
    responses((status = 200, body = AgentDeliveryAcknowledgeResponse)))]
async fn acknowledge_agent_deliveries(
    State(state): State<AppState>,
    _: Operator,
    ApiJson(request): ApiJson<AgentDeliveryAcknowledgeRequest>,
) -> ApiResult<Json<AgentDeliveryAcknowledgeResponse>> {
    let now = Utc::now();
    let rows = commands::open_markers(&state.pool, request.company_id, request.command_id).await?;
    let selected = rows.into_iter().filter(|row| {
        request
            .marker_ids
            .as_ref()
            .is_none_or(|ids| ids.contains(&row.id))
    });
    let (mut acknowledged, mut skipped_valid) = (Vec::new(), Vec::new());
    for row in selected {
        if row.expires_at > now && !request.force {
            skipped_valid.push(row.id);
        } else {
            acknowledged.push(row.id);
        }
    }
    if request.execute {
        let metadata = crate::admin::operator_metadata("root");
        for id in &acknowledged {
            let command = DeliveryCommand::Acknowledge {
                reason: "operator".into(),
            };
            state
                .command::<AgentDelivery>(*id, command, &metadata)
                .await?;
        }
    }
    Ok(Json(AgentDeliveryAcknowledgeResponse {
        executed: request.execute,
        acknowledged,
        skipped_valid,
    }))
}
