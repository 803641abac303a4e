//! Public routes without login (spec section 4, "Public and special routes"): the
//! region and profile catalogs and the transit public key.

use crate::error::{ApiError, ApiResult};
use crate::keys::TRANSIT_ALGORITHM;
use crate::openapi::enums::string_enum;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use domain::catalog::{self, PROFILES, ResourceProfile};
use domain::error::Code;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// One region of the catalog.
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxPublicRegion {
    /// `SandboxRegionCode`.
    pub code: &'static str,
    /// Human name.
    pub display_name: &'static str,
    /// Where it is.
    pub location: &'static str,
    /// 1 preferred, 2 overflow, 3 on-prem.
    pub tier: u8,
}

/// `SandboxPublicRegionListResponse`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxPublicRegionListResponse {
    /// The regions this deployment offers.
    pub items: Vec<SandboxPublicRegion>,
}

/// One resource profile.
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxPublicProfile {
    /// Profile id.
    #[schema(schema_with = string_enum::<ResourceProfile>)]
    pub id: ResourceProfile,
    /// Human name.
    pub display_name: &'static str,
    /// Virtual CPUs.
    pub vcpu: u32,
    /// Memory the provider allocates.
    pub provider_memory_mib: u32,
    /// Memory the customer's work may use.
    pub customer_memory_mib: u32,
    /// Scratch space.
    pub workspace_mib: u32,
    /// Whether tenants may choose it.
    pub tenant_selectable: bool,
    /// Whether it is the default.
    pub is_default: bool,
}

/// `SandboxPublicProfileListResponse`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxPublicProfileListResponse {
    /// Every profile.
    pub items: Vec<SandboxPublicProfile>,
}

/// The transit public key.
#[derive(Debug, Serialize, ToSchema)]
pub struct PublicKeyResponse {
    /// SPKI PEM of the RSA key (3072 bits).
    pub public_key_pem: String,
    /// The envelope scheme: RSA-OAEP-SHA256 wrapping an AES-256-GCM key.
    pub algorithm: &'static str,
}

/// The public routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(regions))
        .routes(routes!(profiles))
        .routes(routes!(public_key))
}

/// The region catalog, filtered by this deployment's provider.
#[utoipa::path(get, path = "/public/info/sandbox/regions", tag = "general",
    responses((status = 200, body = SandboxPublicRegionListResponse)))]
async fn regions(State(state): State<AppState>) -> Json<SandboxPublicRegionListResponse> {
    let items = catalog::regions_for(state.deployment.provider)
        .into_iter()
        .map(|r| SandboxPublicRegion {
            code: r.code,
            display_name: r.display_name,
            location: r.location,
            tier: r.tier,
        })
        .collect();
    Json(SandboxPublicRegionListResponse { items })
}

/// The resource profile table.
#[utoipa::path(get, path = "/public/info/sandbox/profiles", tag = "general",
    responses((status = 200, body = SandboxPublicProfileListResponse)))]
async fn profiles() -> Json<SandboxPublicProfileListResponse> {
    let items = PROFILES
        .iter()
        .map(|p| SandboxPublicProfile {
            id: p.id,
            display_name: p.display_name,
            vcpu: p.vcpu,
            provider_memory_mib: p.provider_memory_mib,
            customer_memory_mib: p.customer_memory_mib,
            workspace_mib: p.workspace_mib,
            tenant_selectable: p.tenant_selectable,
            is_default: p.is_default,
        })
        .collect();
    Json(SandboxPublicProfileListResponse { items })
}

/// The public key secret values are encrypted to; 503 when none is configured.
#[utoipa::path(get, path = "/public/info/model_key/public_key", tag = "general",
    responses((status = 200, body = PublicKeyResponse)))]
async fn public_key(State(state): State<AppState>) -> ApiResult<Json<PublicKeyResponse>> {
    let key = state.transit.as_ref().ok_or_else(|| {
        ApiError::code(
            Code::SandboxTransitKeypairMissing,
            "no transit key pair is configured",
        )
        .with_status(StatusCode::SERVICE_UNAVAILABLE)
    })?;
    Ok(Json(PublicKeyResponse {
        public_key_pem: key.public_pem.clone(),
        algorithm: TRANSIT_ALGORITHM,
    }))
}
