//! Build cache cleanup: each environment's `RUN --mount=type=cache` directories
//! live under the build storage's `cache/<environment id>` (see
//! `Buildah::build`). An archived environment builds no more, so once none of its
//! attempts is open its cache is removed. The caches are this host's; each host's
//! janitor clears its own.

use crate::runtime::Runtime;
use crate::runtime::buildah::Buildah;
use projections::read_models::environments::query as environments;
use uuid::Uuid;

/// Removes the build caches of retired environments.
pub(super) async fn remove_retired(state: &Runtime) -> anyhow::Result<()> {
    let buildah = Buildah::new(&state.builder);
    let Ok(entries) = std::fs::read_dir(buildah.caches()) else {
        return Ok(());
    };
    let held: Vec<Uuid> = entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    if held.is_empty() {
        return Ok(());
    }
    for environment in environments::retired_environments(&state.pool, &held).await? {
        let cache = buildah.caches().join(environment.to_string());
        let removed = tokio::task::spawn_blocking(move || std::fs::remove_dir_all(cache)).await?;
        if let Err(error) = removed {
            tracing::warn!(%environment, %error, "build cache removal failed");
        }
    }
    Ok(())
}
