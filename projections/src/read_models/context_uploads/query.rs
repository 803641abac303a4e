//! Queries of the upload-session read model.

use super::UploadRow;
use crate::read_models::page::{LifecycleFilter, Window};
use chrono::{DateTime, Utc};
use domain::environments::archive::ArchiveFormat;
use domain::objects::DeletionState;
use sqlx::PgPool;
use uuid::Uuid;

/// A session of the environment.
pub async fn session(
    pool: &PgPool,
    environment: Uuid,
    session: Uuid,
) -> sqlx::Result<Option<UploadRow>> {
    sqlx::query_as("SELECT * FROM context_uploads WHERE id = $1 AND environment_id = $2")
        .bind(session)
        .bind(environment)
        .fetch_optional(pool)
        .await
}

/// The company's live staging: sessions still uploading or completing and the
/// bytes they declared.
pub async fn live_staging(
    pool: &PgPool,
    company: Uuid,
    now: DateTime<Utc>,
) -> sqlx::Result<(i64, i64)> {
    sqlx::query_as(
        "SELECT count(*), coalesce(sum(declared_bytes), 0)::bigint FROM context_uploads
          WHERE company_id = $1 AND state IN ('uploading', 'completing') AND expires_at > $2",
    )
    .bind(company)
    .bind(now)
    .fetch_one(pool)
    .await
}

/// Sessions the company opened since `since` (they count toward the upload rate).
pub async fn opened_since(pool: &PgPool, company: Uuid, since: DateTime<Utc>) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "SELECT count(*) FROM context_uploads WHERE company_id = $1 AND created_at > $2",
    )
    .bind(company)
    .bind(since)
    .fetch_one(pool)
    .await
}

/// Sessions past their expiry that never completed.
pub async fn expired(pool: &PgPool, now: DateTime<Utc>) -> sqlx::Result<Vec<(Uuid, Uuid)>> {
    sqlx::query_as(
        "SELECT id, company_id FROM context_uploads WHERE state IN ('uploading', 'completing') AND expires_at < $1",
    )
    .bind(now)
    .fetch_all(pool)
    .await
}

/// The digest of a completed, live context object uploaded to the environment.
pub async fn context_digest(
    pool: &PgPool,
    environment: Uuid,
    object: Uuid,
) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar(
        "SELECT o.digest FROM owned_objects o
           JOIN context_uploads u ON u.owned_object_id = o.id
          WHERE o.id = $1 AND u.environment_id = $2 AND o.kind = 'context' AND o.deletion_state = 'active'",
    )
    .bind(object)
    .bind(environment)
    .fetch_optional(pool)
    .await
}

/// A completed upload with its object and the versions built from it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct CompletedUpload {
    /// The session.
    pub session_id: Uuid,
    /// Its object.
    pub owned_object_id: Uuid,
    /// `sha256:` of the archive.
    pub digest: String,
    /// Its size.
    pub byte_size: i64,
    /// Archive format.
    pub archive_format: ArchiveFormat,
    /// Whether the object's bytes are still held.
    pub deletion_state: DeletionState,
    /// When it completed.
    pub created_at: DateTime<Utc>,
    /// The versions that name it, by number.
    pub used_by: Vec<Uuid>,
}

/// Completed uploads of the environment, newest first; an upload is live while its
/// object is.
pub async fn completed(
    pool: &PgPool,
    environment: Uuid,
    lifecycle: LifecycleFilter,
    window: Window<(DateTime<Utc>, Uuid)>,
) -> sqlx::Result<Vec<CompletedUpload>> {
    let (after_time, after_id) = window
        .after
        .unwrap_or((DateTime::<Utc>::MAX_UTC, Uuid::max()));
    sqlx::query_as(
        "SELECT u.id AS session_id, o.id AS owned_object_id, o.digest, o.byte_size, u.archive_format,
                o.deletion_state, u.updated_at AS created_at,
                coalesce(array_agg(v.id ORDER BY v.version_number) FILTER (WHERE v.id IS NOT NULL), '{}') AS used_by
           FROM context_uploads u
           JOIN owned_objects o ON o.id = u.owned_object_id
           LEFT JOIN environment_versions v ON v.owned_object_id = o.id
          WHERE u.environment_id = $1 AND u.state = 'completed'
            AND ($2 OR (o.deletion_state = 'active') = $3)
            AND (u.updated_at, u.id) < ($4, $5)
          GROUP BY u.id, o.id
          ORDER BY u.updated_at DESC, u.id DESC
          LIMIT $6",
    )
    .bind(environment)
    .bind(lifecycle == LifecycleFilter::All)
    .bind(lifecycle == LifecycleFilter::Active)
    .bind(after_time)
    .bind(after_id)
    .bind(window.limit)
    .fetch_all(pool)
    .await
}
