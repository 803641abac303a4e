//! Company settings (spec section 4, "Settings"): `GET/PUT /settings`, company
//! managers only.

use crate::access::require_company_manager;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;
use crate::request::Caller;
use crate::routes::sandbox::pricing::{self, SandboxPricing};
use crate::state::AppState;
use axum::Json;
use domain::catalog;
use domain::settings::{
    CompanySettings, OperatorLimits, PolicyChanges, PolicyValues, SettingsCommand,
};
use domain::validation::{ViolationKind, Violations};
use projections::read_models::company_settings::SettingsRow;
use projections::read_models::company_settings::query as settings;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// `SandboxCompanySettingsUpdate`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxCompanySettingsUpdate {
    /// Days run content is kept, 1..365; unchanged when absent.
    #[schema(minimum = 1, maximum = 365)]
    pub run_content_retention_days: Option<i32>,
    /// Days unreferenced images are kept, 1..90; unchanged when absent.
    #[schema(minimum = 1, maximum = 90)]
    pub unreferenced_image_retention_days: Option<i32>,
    /// Regions runtime jobs may be placed in (at least one); intersected with the
    /// selectable regions; unchanged when absent.
    #[schema(min_items = 1)]
    pub allowed_regions: Option<Vec<String>>,
    /// The `policy_version` the caller read (optimistic lock).
    pub policy_version: i64,
}

/// The operator's runtime egress policy (read-only).
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxEgressPolicy {
    /// `none`: runs have no outbound network.
    pub runtime: &'static str,
    /// `public_internet`: build-time RUN steps can reach the public internet.
    pub build: &'static str,
}

/// Readiness of one region for runtime jobs.
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxRegionReadiness {
    /// Whether runs can be placed there now.
    pub ready: bool,
    /// Region tier.
    pub tier: u8,
}

/// `SandboxCompanySettingsResponse`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxCompanySettingsResponse {
    /// Days run content is kept.
    pub run_content_retention_days: i32,
    /// Days unreferenced images are kept.
    pub unreferenced_image_retention_days: i32,
    /// Regions runtime jobs may be placed in.
    pub allowed_regions: Vec<String>,
    /// Optimistic-lock version.
    pub policy_version: i64,
    /// Highest `timeout_seconds` a version may publish with.
    pub timeout_ceiling_seconds: i64,
    /// Active environments allowed.
    pub active_environment_limit: i64,
    /// Configured capacity-retained version limit.
    pub capacity_retained_version_limit: i64,
    /// Runs executing at once.
    pub run_concurrency_limit: i64,
    /// Queued runs allowed.
    pub queued_run_limit: i64,
    /// Builds running at once.
    pub active_build_limit: i64,
    /// Builds queued.
    pub queued_build_limit: i64,
    /// Always `runtime_execution_only`: `allowed_regions` places runtime jobs only.
    pub placement_scope: &'static str,
    /// What `allowed_regions` does not govern.
    pub does_not_govern: Vec<&'static str>,
    /// Always false.
    pub residency_guaranteed: bool,
    /// Fixed grace period (days) for regional job capacity changes.
    pub regional_job_capacity_grace_days_fixed: i64,
    /// The operator's live active region set.
    pub selectable_regions: Vec<String>,
    /// Pricing, when published.
    pub pricing: Option<SandboxPricing>,
    /// The operator's egress policy.
    pub egress_policy: SandboxEgressPolicy,
    /// Readiness per selectable region.
    pub region_readiness: BTreeMap<String, SandboxRegionReadiness>,
}

/// Settings routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(get_settings, put_settings))
}

/// The company's settings; the first read records the default policy.
#[utoipa::path(get, path = "/settings", tag = "settings",
    responses((status = 200, body = SandboxCompanySettingsResponse)))]
async fn get_settings(caller: Caller) -> ApiResult<Json<SandboxCompanySettingsResponse>> {
    require_company_manager(&caller.principal)?;
    let row = recorded(&caller).await?;
    let values = PolicyValues {
        run_content_retention_days: row.run_content_retention_days,
        unreferenced_image_retention_days: row.unreferenced_image_retention_days,
        allowed_regions: row.allowed_regions,
    };
    let mut response = respond(&caller.state, values, row.policy_version, row.limits.0);
    response.pricing = pricing::view(&caller).await?;
    Ok(Json(response))
}

/// Replaces the writable settings when `policy_version` is current.
#[utoipa::path(put, path = "/settings", tag = "settings", request_body = SandboxCompanySettingsUpdate,
    responses((status = 200, body = SandboxCompanySettingsResponse)))]
async fn put_settings(
    caller: Caller,
    ApiJson(update): ApiJson<SandboxCompanySettingsUpdate>,
) -> ApiResult<Json<SandboxCompanySettingsResponse>> {
    require_company_manager(&caller.principal)?;
    let changes = PolicyChanges {
        run_content_retention_days: update.run_content_retention_days,
        unreferenced_image_retention_days: update.unreferenced_image_retention_days,
        allowed_regions: update
            .allowed_regions
            .as_deref()
            .map(|r| allowed_regions(&caller.state, r))
            .transpose()?,
    };
    let command = SettingsCommand::Update {
        company_id: caller.principal.company_id,
        defaults: PolicyValues::defaults(&caller.state.deployment.selectable_regions),
        expected_policy_version: update.policy_version,
        changes,
    };
    let committed = caller
        .command::<CompanySettings>(caller.principal.company_id, command)
        .await?;
    let settings = committed.state;
    let values = settings
        .values
        .ok_or_else(|| ApiError::internal(anyhow::anyhow!("an update leaves a policy")))?;
    let mut response = respond(
        &caller.state,
        values,
        settings.policy_version,
        settings.limits,
    );
    response.pricing = pricing::view(&caller).await?;
    Ok(Json(response))
}

/// Validates region codes and intersects them with the selectable set.
fn allowed_regions(state: &AppState, requested: &[String]) -> ApiResult<Vec<String>> {
    let codes: Vec<String> = catalog::REGIONS
        .iter()
        .map(|r| r.code.to_string())
        .collect();
    let mut violations = Violations::new();
    for (index, code) in requested.iter().enumerate() {
        if !codes.contains(code) {
            violations.0.push(domain::validation::Violation {
                loc: vec!["body".into(), "allowed_regions".into(), index.to_string()],
                kind: ViolationKind::Enum(codes.clone()),
                input: Some(code.clone().into()),
            });
        }
    }
    if requested.is_empty() {
        violations.push(
            "allowed_regions",
            ViolationKind::TooShort(1),
            Some(serde_json::json!([])),
        );
    }
    violations
        .into_result()
        .map_err(|v| ApiError::Validation(v.0))?;
    let mut kept: Vec<String> = Vec::new();
    for code in requested {
        if state.deployment.selectable_regions.contains(code) && !kept.contains(code) {
            kept.push(code.clone());
        }
    }
    if kept.is_empty() {
        return Err(ApiError::invalid(
            &["body", "allowed_regions"],
            ViolationKind::Rule {
                kind: "value_error",
                message: "allowed_regions must name at least one region this deployment offers"
                    .into(),
            },
            Some(requested.to_vec().into()),
        ));
    }
    Ok(kept)
}

async fn read(caller: &Caller) -> ApiResult<Option<SettingsRow>> {
    Ok(settings::recorded(caller.pool(), caller.principal.company_id).await?)
}

/// The settings row, recording the default policy first when there is none.
async fn recorded(caller: &Caller) -> ApiResult<SettingsRow> {
    if let Some(row) = read(caller).await? {
        return Ok(row);
    }
    let command = SettingsCommand::RecordDefault {
        company_id: caller.principal.company_id,
        defaults: PolicyValues::defaults(&caller.state.deployment.selectable_regions),
    };
    caller
        .command::<CompanySettings>(caller.principal.company_id, command)
        .await?;
    read(caller)
        .await?
        .ok_or_else(|| ApiError::internal(anyhow::anyhow!("default policy not projected")))
}

fn respond(
    state: &AppState,
    values: PolicyValues,
    policy_version: i64,
    limits: OperatorLimits,
) -> SandboxCompanySettingsResponse {
    let selectable = state.deployment.selectable_regions.clone();
    let region_readiness = selectable
        .iter()
        .filter_map(|code| catalog::region(code))
        .map(|r| {
            (
                r.code.to_string(),
                SandboxRegionReadiness {
                    ready: true,
                    tier: r.tier,
                },
            )
        })
        .collect();
    SandboxCompanySettingsResponse {
        run_content_retention_days: values.run_content_retention_days,
        unreferenced_image_retention_days: values.unreferenced_image_retention_days,
        allowed_regions: values
            .allowed_regions
            .into_iter()
            .filter(|r| selectable.contains(r))
            .collect(),
        policy_version,
        timeout_ceiling_seconds: limits.timeout_ceiling_seconds,
        active_environment_limit: limits.active_environment_limit,
        capacity_retained_version_limit: limits.capacity_retained_version_limit,
        run_concurrency_limit: limits.run_concurrency_limit,
        queued_run_limit: limits.queued_run_limit,
        active_build_limit: limits.active_build_limit,
        queued_build_limit: limits.queued_build_limit,
        placement_scope: "runtime_execution_only",
        does_not_govern: vec![
            "build",
            "validator",
            "registry",
            "object_storage",
            "log",
            "control_plane",
        ],
        residency_guaranteed: false,
        regional_job_capacity_grace_days_fixed: 7,
        selectable_regions: selectable,
        pricing: None,
        egress_policy: SandboxEgressPolicy {
            runtime: "none",
            build: "public_internet",
        },
        region_readiness,
    }
}
