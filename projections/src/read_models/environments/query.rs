//! Queries of the environment read models, as the routes and the builder read them.
//!
//! Callers pass the ids an authorized handle holds (the company, the environment);
//! rows come back typed, with the domain's enums.

use super::rows::{AttemptRow, EnvironmentRow, VersionRow};
use crate::read_models::page::{LifecycleFilter, Window};
use chrono::{DateTime, Utc};
use sqlx::PgPool;
use uuid::Uuid;

/// An environment by id (any company; the caller decides visibility).
pub async fn environment(pool: &PgPool, id: Uuid) -> sqlx::Result<Option<EnvironmentRow>> {
    sqlx::query_as("SELECT * FROM environments WHERE id = $1")
        .bind(id)
        .fetch_optional(pool)
        .await
}

/// The environments a company sees (its own and the curated ones), newest first.
pub async fn environments(
    pool: &PgPool,
    company: Uuid,
    lifecycle: LifecycleFilter,
    window: Window<(DateTime<Utc>, Uuid)>,
) -> sqlx::Result<Vec<EnvironmentRow>> {
    let (after_time, after_id) = window
        .after
        .unwrap_or((DateTime::<Utc>::MAX_UTC, Uuid::max()));
    sqlx::query_as(
        "SELECT * FROM environments
          WHERE (company_id = $1 OR owner_kind = 'system_curated')
            AND ($2 OR (lifecycle = 'active') = $3)
            AND (created_at, id) < ($4, $5)
          ORDER BY created_at DESC, id DESC
          LIMIT $6",
    )
    .bind(company)
    .bind(lifecycle == LifecycleFilter::All)
    .bind(lifecycle == LifecycleFilter::Active)
    .bind(after_time)
    .bind(after_id)
    .bind(window.limit)
    .fetch_all(pool)
    .await
}

/// The company's active environments (the active-environment limit counts them).
pub async fn active_environments(pool: &PgPool, company: Uuid) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "SELECT count(*) FROM environments WHERE company_id = $1 AND lifecycle = 'active'",
    )
    .bind(company)
    .fetch_one(pool)
    .await
}

/// A version with its environment's name.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct NamedVersion {
    /// The version.
    #[sqlx(flatten)]
    pub version: VersionRow,
    /// Its environment's name.
    pub environment_name: String,
    /// The operator's decision on its runner release (`None`: none made).
    pub runner_release_decision: Option<bool>,
}

const NAMED_VERSION: &str =
    "SELECT v.*, e.name AS environment_name, r.approved AS runner_release_decision
   FROM environment_versions v JOIN environments e ON e.id = v.environment_id
   LEFT JOIN runner_releases r ON r.release = v.runner_release";

/// A version of the environment.
pub async fn version(
    pool: &PgPool,
    environment: Uuid,
    version: Uuid,
) -> sqlx::Result<Option<NamedVersion>> {
    sqlx::query_as(&format!(
        "{NAMED_VERSION} WHERE v.id = $1 AND v.environment_id = $2"
    ))
    .bind(version)
    .bind(environment)
    .fetch_optional(pool)
    .await
}

/// A version with its environment, by version id alone (the pin of a task version,
/// Quick Run); the caller decides visibility from the environment.
pub async fn version_with_environment(
    pool: &PgPool,
    version: Uuid,
) -> sqlx::Result<Option<(VersionRow, EnvironmentRow)>> {
    let Some(version) =
        sqlx::query_as::<_, VersionRow>("SELECT * FROM environment_versions WHERE id = $1")
            .bind(version)
            .fetch_optional(pool)
            .await?
    else {
        return Ok(None);
    };
    Ok(environment(pool, version.environment_id)
        .await?
        .map(|environment| (version, environment)))
}

/// Versions of an environment, newest first; a version is live until archived.
pub async fn versions(
    pool: &PgPool,
    environment: Uuid,
    lifecycle: LifecycleFilter,
    window: Window<i64>,
) -> sqlx::Result<Vec<NamedVersion>> {
    sqlx::query_as(&format!(
        "{NAMED_VERSION}
          WHERE v.environment_id = $1 AND v.version_number < $2
            AND ($3 OR (v.state <> 'archived') = $4)
          ORDER BY v.version_number DESC LIMIT $5"
    ))
    .bind(environment)
    .bind(window.after.unwrap_or(i64::MAX))
    .bind(lifecycle == LifecycleFilter::All)
    .bind(lifecycle == LifecycleFilter::Active)
    .bind(window.limit)
    .fetch_all(pool)
    .await
}

/// The company's versions that occupy a capacity-retained slot (every version not
/// archived).
pub async fn retained_versions(pool: &PgPool, company: Uuid) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "SELECT count(*) FROM environment_versions WHERE company_id = $1 AND state <> 'archived'",
    )
    .bind(company)
    .fetch_one(pool)
    .await
}

/// An attempt of the version.
pub async fn attempt(
    pool: &PgPool,
    version: Uuid,
    attempt: Uuid,
) -> sqlx::Result<Option<AttemptRow>> {
    sqlx::query_as("SELECT * FROM build_attempts WHERE id = $1 AND version_id = $2")
        .bind(attempt)
        .bind(version)
        .fetch_optional(pool)
        .await
}

/// Attempts of a version, newest first, optionally of some statuses only.
pub async fn attempts(
    pool: &PgPool,
    version: Uuid,
    statuses: &[String],
    window: Window<i64>,
) -> sqlx::Result<Vec<AttemptRow>> {
    sqlx::query_as(
        "SELECT * FROM build_attempts WHERE version_id = $1 AND attempt_number < $2
            AND (cardinality($3::text[]) = 0 OR status = ANY($3))
          ORDER BY attempt_number DESC LIMIT $4",
    )
    .bind(version)
    .bind(window.after.unwrap_or(i64::MAX))
    .bind(statuses)
    .bind(window.limit)
    .fetch_all(pool)
    .await
}

/// The company's attempts waiting for validation (the queued-build limit counts them).
pub async fn queued_builds(pool: &PgPool, company: Uuid) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "SELECT count(*) FROM build_attempts WHERE company_id = $1 AND status = 'validation_queued'",
    )
    .bind(company)
    .fetch_one(pool)
    .await
}

/// Of `ids`, the archived environments with no build attempt still open: they
/// build no more, so their build caches can go.
pub async fn retired_environments(pool: &PgPool, ids: &[Uuid]) -> sqlx::Result<Vec<Uuid>> {
    sqlx::query_scalar(
        "SELECT e.id FROM environments e
          WHERE e.id = ANY($1) AND e.lifecycle = 'archived'
            AND NOT EXISTS (SELECT 1 FROM build_attempts a
                             WHERE a.environment_id = e.id
                               AND a.status IN ('validation_queued', 'validating', 'build_queued',
                                                'building', 'verifying', 'cancelling'))",
    )
    .bind(ids)
    .fetch_all(pool)
    .await
}
