//! Environment versions: create, list, get, archive, retry-provisioning.

use super::access::{self, EnvironmentAccess};
use super::views::*;
use crate::admission;
use crate::auth::Auth;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiQuery};
use crate::limits::{capacity_retained_limit, company_limits};
use crate::pagination::{LifecycleQuery, finish};
use crate::request::Context;
use crate::state::AppState;
use axum::Json;
use axum::extract::{Path, State};
use chrono::{DateTime, Utc};
use domain::catalog::ResourceProfile;
use domain::environments::environment::{Environment, EnvironmentCommand, EnvironmentEvent};
use domain::environments::version::{EnvironmentVersion, VersionCommand, VersionCreated};
use domain::error::Code;
use domain::validation::{ViolationKind, Violations};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// The runner release images are built with.
pub const RUNNER_RELEASE: &str = "5.21.0";

/// The version routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_versions, create_version))
        .routes(routes!(get_version))
        .routes(routes!(archive_version))
        .routes(routes!(retry_provisioning))
}

/// A version row as the routes read it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct VersionRow {
    /// Id.
    pub id: Uuid,
    /// Environment.
    pub environment_id: Uuid,
    /// Environment name.
    pub environment_name: String,
    /// Number.
    pub version_number: i64,
    /// State.
    pub state: String,
    /// Security state.
    pub security_state: String,
    /// Runtime profile.
    pub resource_profile: String,
    /// Context digest.
    pub source_digest: Option<String>,
    /// Free reference.
    pub source_ref: Option<String>,
    /// Runner release.
    pub runner_release: String,
    /// Ready since.
    pub ready_at: Option<DateTime<Utc>>,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

const VERSION_SELECT: &str = "SELECT v.id, v.environment_id, e.name AS environment_name, v.version_number, v.state,
        v.security_state, v.resource_profile, v.source_digest, v.source_ref, v.runner_release, v.ready_at,
        v.created_at, v.updated_at
   FROM environment_versions v JOIN environments e ON e.id = v.environment_id";

impl VersionRow {
    /// The response; `source_digest` and `source_ref` only for owners.
    pub fn respond(self, owner: bool) -> SandboxEnvironmentVersionResponse {
        SandboxEnvironmentVersionResponse {
            id: self.id,
            environment_id: self.environment_id,
            environment_name: self.environment_name,
            version_number: self.version_number,
            capacity_retained: self.state != "archived",
            state: self.state,
            security_state: self.security_state,
            resource_profile: self.resource_profile,
            ready_at: self.ready_at,
            runner_release: self.runner_release,
            runner_release_approved: true,
            runner_release_next_action: None,
            source_digest: if owner { self.source_digest } else { None },
            source_ref: if owner { self.source_ref } else { None },
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }
}

/// A version of the environment (404 when it belongs to another).
pub async fn version(
    state: &AppState,
    environment: &EnvironmentAccess,
    version_id: Uuid,
) -> ApiResult<VersionRow> {
    sqlx::query_as(&format!(
        "{VERSION_SELECT} WHERE v.id = $1 AND v.environment_id = $2"
    ))
    .bind(version_id)
    .bind(environment.row.id)
    .fetch_optional(&state.pool)
    .await?
    .ok_or(ApiError::NotFound)
}

/// Versions of an environment, newest first.
#[utoipa::path(get, path = "/environments/{environment_id}/versions", tag = "environments",
    params(("environment_id" = Uuid, Path), LifecycleQuery),
    responses((status = 200, body = SandboxEnvironmentVersionListResponse), (status = 404, description = "not found")))]
async fn list_versions(
    State(state): State<AppState>,
    Auth(principal): Auth,
    Path(environment_id): Path<Uuid>,
    ApiQuery(query): ApiQuery<LifecycleQuery>,
) -> ApiResult<Json<SandboxEnvironmentVersionListResponse>> {
    let environment = access::environment(&state, &principal, environment_id).await?;
    let page = query.page::<i64>(50)?;
    let lifecycle = super::catalog::lifecycle_name(query.lifecycle.unwrap_or_default());
    let rows: Vec<VersionRow> = sqlx::query_as(&format!(
        "{VERSION_SELECT}
          WHERE v.environment_id = $1 AND v.version_number < $2
            AND ($3 = 'all' OR ($3 = 'active') = (v.state <> 'archived'))
          ORDER BY v.version_number DESC LIMIT $4"
    ))
    .bind(environment_id)
    .bind(page.after.unwrap_or(i64::MAX))
    .bind(lifecycle)
    .bind(page.size + 1)
    .fetch_all(&state.pool)
    .await?;
    let (rows, next_page_token) = finish(rows, page.size, |r| r.version_number);
    let items = rows
        .into_iter()
        .map(|r| r.respond(environment.can_manage))
        .collect();
    Ok(Json(SandboxEnvironmentVersionListResponse {
        items,
        next_page_token,
    }))
}

/// Checks the create body; returns the digest of the named object, if any.
async fn check_source(
    state: &AppState,
    environment: &EnvironmentAccess,
    body: &SandboxEnvironmentVersionCreateRequest,
) -> ApiResult<Option<String>> {
    let mut violations = Violations::new();
    if body.owned_object_id.is_none() && body.source_digest.is_none() {
        let kind = ViolationKind::Rule {
            kind: "missing",
            message: "send owned_object_id (from upload complete) or source_digest".into(),
        };
        violations.push("owned_object_id", kind, None);
    }
    if let Some(digest) = &body.source_digest
        && !is_sha256_digest(digest)
    {
        let kind = ViolationKind::Rule {
            kind: "string_pattern_mismatch",
            message: "String should match pattern '^sha256:[0-9a-f]{64}$'".into(),
        };
        violations.push("source_digest", kind, Some(digest.clone().into()));
    }
    if let Some(source_ref) = &body.source_ref {
        violations.length("source_ref", source_ref, 0, 1024);
    }
    if body
        .resource_profile
        .is_some_and(|p| !p.spec().tenant_selectable)
    {
        let selectable = ["standard", "performance", "large"]
            .map(String::from)
            .to_vec();
        violations.push(
            "resource_profile",
            ViolationKind::Enum(selectable),
            Some("xlarge".into()),
        );
    }
    violations
        .into_result()
        .map_err(|v| ApiError::Validation(v.0))?;
    let Some(object_id) = body.owned_object_id else {
        return Ok(None);
    };
    let digest: Option<String> = sqlx::query_scalar(
        "SELECT o.digest FROM owned_objects o
           JOIN context_uploads u ON u.owned_object_id = o.id
          WHERE o.id = $1 AND u.environment_id = $2 AND o.kind = 'context' AND o.deletion_state = 'active'",
    )
    .bind(object_id)
    .bind(environment.row.id)
    .fetch_optional(&state.pool)
    .await?;
    let invalid = |message: &str| {
        let kind = ViolationKind::Rule {
            kind: "value_error",
            message: message.into(),
        };
        ApiError::invalid(
            &["body", "owned_object_id"],
            kind,
            Some(object_id.to_string().into()),
        )
    };
    let digest = digest.ok_or_else(|| {
        invalid("owned_object_id is not a completed context upload of this environment")
    })?;
    if body.source_digest.as_ref().is_some_and(|d| *d != digest) {
        return Err(invalid("source_digest does not match the uploaded archive"));
    }
    Ok(Some(digest))
}

fn is_sha256_digest(text: &str) -> bool {
    text.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// Creates a draft version from a completed upload.
#[utoipa::path(post, path = "/environments/{environment_id}/versions", tag = "environments",
    params(("environment_id" = Uuid, Path)), request_body = SandboxEnvironmentVersionCreateRequest,
    responses((status = 200, body = SandboxEnvironmentVersionResponse), (status = 404, description = "not found"),
              (status = 409, description = "version_allocation_exhausted or environment_archived"),
              (status = 422, description = "validation error")))]
async fn create_version(
    State(state): State<AppState>,
    ctx: Context,
    Auth(principal): Auth,
    Path(environment_id): Path<Uuid>,
    ApiJson(body): ApiJson<SandboxEnvironmentVersionCreateRequest>,
) -> ApiResult<Json<SandboxEnvironmentVersionResponse>> {
    let environment = access::managed_environment(&state, &principal, environment_id).await?;
    let digest = check_source(&state, &environment, &body).await?;
    let meta = ctx.metadata(&principal);
    let version_id = Uuid::new_v4();
    {
        let _lock = admission::lock(&state.pool, principal.company_id, "versions").await?;
        let configured = company_limits(&state, principal.company_id)
            .await?
            .capacity_retained_version_limit;
        let limit = capacity_retained_limit(configured, &state.deployment.job_quotas);
        let retained: i64 =
            sqlx::query_scalar("SELECT count(*) FROM environment_versions WHERE company_id = $1 AND state <> 'archived'")
                .bind(principal.company_id)
                .fetch_one(&state.pool)
                .await?;
        if retained >= limit {
            return Err(ApiError::code(
                Code::VersionAllocationExhausted,
                format!("no capacity-retained version can be allocated ({retained} of {limit})"),
            )
            .with("limit", limit));
        }
        let command = EnvironmentCommand::AllocateVersion { version_id };
        let allocated = state
            .bus
            .execute::<Environment>(&environment_id.to_string(), command, &meta)
            .await?;
        let version_number = allocated
            .events
            .iter()
            .find_map(|e| match e {
                EnvironmentEvent::VersionNumberAllocated { version_number, .. } => {
                    Some(*version_number)
                }
                _ => None,
            })
            .ok_or_else(|| {
                ApiError::internal(anyhow::anyhow!("no version number was allocated"))
            })?;
        let created = VersionCreated {
            version_id,
            environment_id,
            company_id: Some(principal.company_id),
            version_number,
            owned_object_id: body.owned_object_id,
            source_digest: digest.or(body.source_digest),
            source_ref: body.source_ref,
            resource_profile: body.resource_profile.unwrap_or(ResourceProfile::Standard),
            runner_release: RUNNER_RELEASE.into(),
        };
        state
            .bus
            .execute::<EnvironmentVersion>(
                &version_id.to_string(),
                VersionCommand::Create(created),
                &meta,
            )
            .await?;
    }
    Ok(Json(
        version(&state, &environment, version_id)
            .await?
            .respond(true),
    ))
}

/// One version (poll until `ready`).
#[utoipa::path(get, path = "/environments/{environment_id}/versions/{version_id}", tag = "environments",
    params(("environment_id" = Uuid, Path), ("version_id" = Uuid, Path)),
    responses((status = 200, body = SandboxEnvironmentVersionResponse), (status = 404, description = "not found")))]
async fn get_version(
    State(state): State<AppState>,
    Auth(principal): Auth,
    Path((environment_id, version_id)): Path<(Uuid, Uuid)>,
) -> ApiResult<Json<SandboxEnvironmentVersionResponse>> {
    let environment = access::environment(&state, &principal, environment_id).await?;
    Ok(Json(
        version(&state, &environment, version_id)
            .await?
            .respond(environment.can_manage),
    ))
}

/// Archives a version (it stops occupying capacity).
#[utoipa::path(post, path = "/environments/{environment_id}/versions/{version_id}/archive", tag = "environments",
    params(("environment_id" = Uuid, Path), ("version_id" = Uuid, Path)),
    responses((status = 200, body = SandboxEnvironmentVersionResponse), (status = 404, description = "not found"),
              (status = 409, description = "already_archived or nonterminal_exists")))]
async fn archive_version(
    State(state): State<AppState>,
    ctx: Context,
    Auth(principal): Auth,
    Path((environment_id, version_id)): Path<(Uuid, Uuid)>,
) -> ApiResult<Json<SandboxEnvironmentVersionResponse>> {
    let environment = access::managed_environment(&state, &principal, environment_id).await?;
    version(&state, &environment, version_id).await?;
    let meta = ctx.metadata(&principal);
    state
        .bus
        .execute::<EnvironmentVersion>(&version_id.to_string(), VersionCommand::Archive, &meta)
        .await?;
    Ok(Json(
        version(&state, &environment, version_id)
            .await?
            .respond(true),
    ))
}

/// Re-drives regional provisioning. On this deployment images are provisioned when
/// built, so an eligible version is returned as it is.
#[utoipa::path(post, path = "/environments/{environment_id}/versions/{version_id}/retry-provisioning",
    tag = "environments", params(("environment_id" = Uuid, Path), ("version_id" = Uuid, Path)),
    responses((status = 200, body = SandboxEnvironmentVersionResponse), (status = 404, description = "not found"),
              (status = 409, description = "provisioning_retry_not_eligible")))]
async fn retry_provisioning(
    State(state): State<AppState>,
    Auth(principal): Auth,
    Path((environment_id, version_id)): Path<(Uuid, Uuid)>,
) -> ApiResult<Json<SandboxEnvironmentVersionResponse>> {
    let environment = access::managed_environment(&state, &principal, environment_id).await?;
    let row = version(&state, &environment, version_id).await?;
    if !matches!(
        row.state.as_str(),
        "regional_provisioning" | "provisioning_blocked" | "ready"
    ) {
        return Err(ApiError::code(
            Code::ProvisioningRetryNotEligible,
            format!("a version in state {} cannot retry provisioning", row.state),
        ));
    }
    Ok(Json(row.respond(true)))
}
