//! Liveness, metrics and the OpenAPI document.

use crate::middleware::observe::metrics_handle;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde_json::{Value, json};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// Health and metrics routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(healthz))
        .routes(routes!(metrics))
}

/// 200 when the database answers, with the node's role and whether it is the one
/// that seals and projects the log (`pump_leader`).
#[utoipa::path(get, path = "/healthz", tag = "general",
    responses((status = 200, description = "healthy: `status`, `role` (`api`, `worker`, `all`), `pump_leader`")))]
async fn healthz(State(state): State<AppState>) -> (StatusCode, Json<Value>) {
    match sqlx::query("SELECT 1").execute(&state.pool).await {
        Ok(_) => (
            StatusCode::OK,
            Json(json!({
                "status": "ok",
                "role": state.deployment.role,
                "pump_leader": state.bus.pump().is_leader(),
            })),
        ),
        Err(error) => {
            tracing::warn!(%error, "health check failed");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(json!({"status": "database_unavailable"})),
            )
        }
    }
}

/// Prometheus metrics: requests and latencies per route, events appended and sealed,
/// whether this node pumps (`sandbox_pump_leader`), log head, projection lag, the sealing lag (read from the database at each
/// scrape, so a stalled sealer shows), and the kill switches (`sandbox_enabled`,
/// `sandbox_companies_disabled`).
#[utoipa::path(get, path = "/metrics", tag = "general",
    responses((status = 200, description = "Prometheus text format", content_type = "text/plain")))]
async fn metrics(State(state): State<AppState>) -> String {
    let leader = state.bus.pump().is_leader();
    metrics::gauge!("sandbox_pump_leader").set(if leader { 1.0 } else { 0.0 });
    match projections::sealer::backlog(&state.pool).await {
        Ok(backlog) => {
            metrics::gauge!("sandbox_log_sealing_lag_seconds").set(backlog.oldest_seconds);
            metrics::gauge!("sandbox_log_unsealed_events").set(backlog.events as f64);
        }
        Err(error) => tracing::warn!(%error, "cannot read the sealing backlog"),
    }
    match projections::read_models::switches::all(&state.pool).await {
        Ok(switches) => {
            let global_off = switches
                .iter()
                .any(|s| s.company_id.is_none() && !s.enabled);
            let enabled = state.deployment.enabled && !global_off;
            metrics::gauge!("sandbox_enabled").set(if enabled { 1.0 } else { 0.0 });
            let companies_off = switches
                .iter()
                .filter(|s| s.company_id.is_some() && !s.enabled)
                .count();
            metrics::gauge!("sandbox_companies_disabled").set(companies_off as f64);
        }
        Err(error) => tracing::warn!(%error, "cannot read the kill switches"),
    }
    metrics_handle().render()
}
