//! Environment versions: create, list, get, archive, retry-provisioning.

use super::views::*;
use crate::access::{Environment, EnvironmentVersion as VersionHandle};
use crate::admission;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiPath;
use crate::extract::{ApiJson, ApiQuery};
use crate::limits::{capacity_retained_limit, company_limits};
use crate::pagination::LifecycleQuery;
use crate::request::Caller;
use crate::state::AppState;
use axum::Json;
use domain::catalog::ResourceProfile;
use domain::environments::environment::{
    Environment as EnvironmentAggregate, EnvironmentCommand, allocated_number,
};
use domain::environments::version::{
    EnvironmentVersion, VersionCommand, VersionCreated, VersionState,
};
use domain::error::Code;
use domain::runner_release::BUILT_IN;
use domain::validation::{ViolationKind, Violations};
use domain::wire::wire;
use projections::read_models::context_uploads::query as uploads;
use projections::read_models::environments::query;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// The version routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_versions, create_version))
        .routes(routes!(get_version))
        .routes(routes!(archive_version))
        .routes(routes!(retry_provisioning))
}

/// Versions of an environment, newest first.
#[utoipa::path(get, path = "/environments/{environment_id}/versions", tag = "environments",
    params(("environment_id" = Uuid, Path), LifecycleQuery),
    responses((status = 200, body = SandboxEnvironmentVersionListResponse)))]
async fn list_versions(
    caller: Caller,
    ApiPath(environment_id): ApiPath<Uuid>,
    ApiQuery(query): ApiQuery<LifecycleQuery>,
) -> ApiResult<Json<SandboxEnvironmentVersionListResponse>> {
    let environment = Environment::read(&caller, environment_id).await?;
    let page = query.page(50)?;
    let lifecycle = query.lifecycle.unwrap_or_default();
    let versions = async |w| query::versions(caller.pool(), environment_id, lifecycle, w).await;
    let listed = page.fetch(versions, |r| r.version.version_number).await?;
    let manager = environment.manager;
    Ok(Json(
        listed.map(|row| VersionHandle { row, manager }).into(),
    ))
}

/// Checks the create body; returns the digest of the named object, if any.
async fn check_source(
    state: &AppState,
    environment: &Environment,
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
        let selectable = domain::catalog::PROFILES
            .iter()
            .filter(|p| p.tenant_selectable)
            .map(|p| p.id.as_str().to_string())
            .collect();
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
    let digest = uploads::context_digest(&state.pool, environment.row.id, object_id).await?;
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
    responses((status = 200, body = SandboxEnvironmentVersionResponse)))]
async fn create_version(
    caller: Caller,
    ApiPath(environment_id): ApiPath<Uuid>,
    ApiJson(body): ApiJson<SandboxEnvironmentVersionCreateRequest>,
) -> ApiResult<Json<SandboxEnvironmentVersionResponse>> {
    let environment = Environment::managed(&caller, environment_id).await?;
    let digest = check_source(&caller.state, &environment, &body).await?;
    let version_id = Uuid::new_v4();
    {
        let _lock = admission::lock(caller.pool(), caller.principal.company_id, "versions").await?;
        let configured = company_limits(caller.pool(), caller.principal.company_id)
            .await?
            .capacity_retained_version_limit;
        let limit = capacity_retained_limit(configured, &caller.state.deployment.job_quotas);
        let retained = query::retained_versions(caller.pool(), caller.principal.company_id).await?;
        if retained >= limit {
            return Err(ApiError::code(
                Code::VersionAllocationExhausted,
                format!("no capacity-retained version can be allocated ({retained} of {limit})"),
            )
            .with("limit", limit));
        }
        let command = EnvironmentCommand::AllocateVersion { version_id };
        let allocated = caller
            .command::<EnvironmentAggregate>(environment_id, command)
            .await?;
        let version_number = allocated_number(&allocated.events).ok_or_else(|| {
            ApiError::internal(anyhow::anyhow!("no version number was allocated"))
        })?;
        let created = VersionCreated {
            version_id,
            environment_id,
            company_id: Some(caller.principal.company_id),
            version_number,
            owned_object_id: body.owned_object_id,
            source_digest: digest.or(body.source_digest),
            source_ref: body.source_ref,
            resource_profile: body.resource_profile.unwrap_or(ResourceProfile::Standard),
            runner_release: BUILT_IN.into(),
        };
        let command = VersionCommand::Create(created);
        caller
            .command::<EnvironmentVersion>(version_id, command)
            .await?;
    }
    Ok(Json(environment.version(&caller, version_id).await?.into()))
}

/// One version (poll until `ready`).
#[utoipa::path(get, path = "/environments/{environment_id}/versions/{version_id}", tag = "environments",
    params(("environment_id" = Uuid, Path), ("version_id" = Uuid, Path)),
    responses((status = 200, body = SandboxEnvironmentVersionResponse)))]
async fn get_version(
    caller: Caller,
    ApiPath((environment_id, version_id)): ApiPath<(Uuid, Uuid)>,
) -> ApiResult<Json<SandboxEnvironmentVersionResponse>> {
    let environment = Environment::read(&caller, environment_id).await?;
    Ok(Json(environment.version(&caller, version_id).await?.into()))
}

/// Archives a version (it stops occupying capacity).
#[utoipa::path(post, path = "/environments/{environment_id}/versions/{version_id}/archive", tag = "environments",
    params(("environment_id" = Uuid, Path), ("version_id" = Uuid, Path)),
    responses((status = 200, body = SandboxEnvironmentVersionResponse)))]
async fn archive_version(
    caller: Caller,
    ApiPath((environment_id, version_id)): ApiPath<(Uuid, Uuid)>,
) -> ApiResult<Json<SandboxEnvironmentVersionResponse>> {
    let environment = Environment::managed(&caller, environment_id).await?;
    environment.version(&caller, version_id).await?;
    caller
        .command::<EnvironmentVersion>(version_id, VersionCommand::Archive)
        .await?;
    Ok(Json(environment.version(&caller, version_id).await?.into()))
}

/// Re-drives regional provisioning. On this deployment images are provisioned when
/// built, so an eligible version is returned as it is.
#[utoipa::path(post, path = "/environments/{environment_id}/versions/{version_id}/retry-provisioning",
    tag = "environments", params(("environment_id" = Uuid, Path), ("version_id" = Uuid, Path)),
    responses((status = 200, body = SandboxEnvironmentVersionResponse)))]
async fn retry_provisioning(
    caller: Caller,
    ApiPath((environment_id, version_id)): ApiPath<(Uuid, Uuid)>,
) -> ApiResult<Json<SandboxEnvironmentVersionResponse>> {
    let environment = Environment::managed(&caller, environment_id).await?;
    let version = environment.version(&caller, version_id).await?;
    let current = version.row.version.state;
    if !matches!(
        current,
        VersionState::RegionalProvisioning
            | VersionState::ProvisioningBlocked
            | VersionState::Ready
    ) {
        return Err(ApiError::code(
            Code::ProvisioningRetryNotEligible,
            format!(
                "a version in state {} cannot retry provisioning",
                wire(&current)
            ),
        ));
    }
    Ok(Json(version.into()))
}
