//! Queries of a run's objects: its artifact files and the public links to them.

use super::{RunRow, run};
use crate::read_models::page::Window;
use chrono::{DateTime, Utc};
use domain::runs::link::LinkedObject;
use sqlx::PgPool;
use uuid::Uuid;

/// An artifact file of a run (`run_artifacts`).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ArtifactRow {
    /// Id.
    pub id: Uuid,
    /// Its run.
    pub run_id: Uuid,
    /// Path under the artifacts directory.
    pub relative_path: String,
    /// Where its bytes start in the bundle.
    pub byte_offset: i64,
    /// Bytes.
    pub byte_size: i64,
    /// `sha256:` of its bytes.
    pub digest: String,
    /// Content type guessed from its name.
    pub declared_content_type: String,
}

/// The run's artifacts by relative path, after `after`.
pub async fn artifacts(
    pool: &PgPool,
    run: Uuid,
    window: Window<String>,
) -> sqlx::Result<Vec<ArtifactRow>> {
    sqlx::query_as(
        "SELECT * FROM run_artifacts WHERE run_id = $1 AND relative_path > $2
          ORDER BY relative_path LIMIT $3",
    )
    .bind(run)
    .bind(window.after.unwrap_or_default())
    .bind(window.limit)
    .fetch_all(pool)
    .await
}

/// An artifact of the run.
pub async fn artifact(pool: &PgPool, run: Uuid, id: Uuid) -> sqlx::Result<Option<ArtifactRow>> {
    sqlx::query_as("SELECT * FROM run_artifacts WHERE id = $1 AND run_id = $2")
        .bind(id)
        .bind(run)
        .fetch_optional(pool)
        .await
}

/// A public link generation (`public_links`).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct LinkRow {
    /// Id (the token is derived from it).
    pub id: Uuid,
    /// Its run.
    pub run_id: Uuid,
    /// Log, output or one artifact.
    pub object: LinkedObject,
    /// The artifact, for artifact links.
    pub artifact_id: Option<Uuid>,
    /// Whether it was revoked.
    pub revoked: bool,
    /// Minted.
    pub created_at: DateTime<Utc>,
}

/// The newest link generation of an object of a run.
pub async fn newest_link(
    pool: &PgPool,
    run: Uuid,
    object: LinkedObject,
    artifact: Option<Uuid>,
) -> sqlx::Result<Option<LinkRow>> {
    sqlx::query_as(
        "SELECT * FROM public_links
          WHERE run_id = $1 AND object = $2 AND artifact_id IS NOT DISTINCT FROM $3
          ORDER BY generation DESC LIMIT 1",
    )
    .bind(run)
    .bind(object)
    .bind(artifact)
    .fetch_optional(pool)
    .await
}

/// A live link with the run it serves, whose contents are still held.
pub async fn live_link(pool: &PgPool, id: Uuid) -> sqlx::Result<Option<(LinkRow, RunRow)>> {
    let Some(link) =
        sqlx::query_as::<_, LinkRow>("SELECT * FROM public_links WHERE id = $1 AND NOT revoked")
            .bind(id)
            .fetch_optional(pool)
            .await?
    else {
        return Ok(None);
    };
    Ok(run(pool, link.run_id)
        .await?
        .filter(RunRow::content_active)
        .map(|run| (link, run)))
}
