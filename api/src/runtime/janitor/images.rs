//! Image storage cleanup: the image of an archived environment version that no
//! live task version pins and no unfinished run uses is deleted once it has been
//! unreferenced for the owning company's `unreferenced_image_retention_days`
//! (curated environments: the default, 30). Each removal is an `ImageRemoved`
//! event, which the owners hear of as `image_storage_cleanup_completed`.

use super::metadata;
use crate::runtime::Runtime;
use crate::runtime::buildah::Buildah;
use chrono::{DateTime, Utc};
use domain::environments::version::{EnvironmentVersion, VersionCommand};
use domain::settings::PolicyValues;
use uuid::Uuid;

/// Archived versions holding an image, unreferenced since (the latest of the
/// version's archive and its pinning task versions' archives) before `$1` minus
/// the retention (`$2` days without a recorded policy).
const UNREFERENCED: &str = "
    SELECT v.id, v.company_id, v.image
      FROM environment_versions v
      LEFT JOIN company_settings s ON s.company_id = v.company_id AND s.recorded
     WHERE v.state = 'archived' AND v.image IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM task_versions t
                        WHERE t.environment_version_id = v.id AND t.state <> 'archived')
       AND NOT EXISTS (SELECT 1 FROM runs r JOIN task_versions t ON t.id = r.task_version_id
                        WHERE t.environment_version_id = v.id AND r.terminal_at IS NULL)
       AND greatest(v.updated_at,
                    (SELECT max(t.updated_at) FROM task_versions t WHERE t.environment_version_id = v.id))
           < $1 - make_interval(days => coalesce(s.unreferenced_image_retention_days, $2))
     ORDER BY v.updated_at LIMIT 100";

/// Deletes the images past their retention, then records each removal. A crash
/// between the two leaves the version listed; the next sweep finds its image gone
/// and records the removal. An image that stays (buildah failed) is tried again
/// at the next sweep.
pub(super) async fn remove_unreferenced(state: &Runtime, now: DateTime<Utc>) -> anyhow::Result<()> {
    let unreferenced: Vec<(Uuid, Option<Uuid>, String)> = sqlx::query_as(UNREFERENCED)
        .bind(now)
        .bind(PolicyValues::DEFAULT_RETENTION_DAYS)
        .fetch_all(&state.pool)
        .await?;
    if unreferenced.is_empty() {
        return Ok(());
    }
    let buildah = Buildah::new(&state.builder);
    for (version_id, company, image) in unreferenced {
        if let Err(error) = buildah.remove_image(&image).await
            && buildah.image_exists(&image).await
        {
            tracing::warn!(%version_id, error = format!("{error:#}"), "image removal failed");
            continue;
        }
        let meta = metadata(company, version_id, now);
        state
            .bus
            .record::<EnvironmentVersion>(
                &version_id.to_string(),
                VersionCommand::RemoveImage { now },
                &meta,
            )
            .await?;
    }
    Ok(())
}
