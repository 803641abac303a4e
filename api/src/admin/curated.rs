//! Curated environments: operator-owned, readable by every company, built from a
//! context archive the operator provides (`sandboxctl environments publish-curated`,
//! with `--environment` for a new version of an existing one).

use super::operator_metadata;
use crate::state::AppState;
use anyhow::Context;
use bytes::Bytes;
use domain::catalog::{self, ResourceProfile};
use domain::environments::archive::{self, ArchiveFormat, ArchiveLimits};
use domain::environments::environment::{
    Environment, EnvironmentCommand, EnvironmentCreated, OwnerKind, OwnerScope, allocated_number,
};
use domain::environments::version::{
    BuildProfile, EnvironmentVersion, VersionCommand, VersionCreated,
};
use domain::objects::{ObjectCommand, ObjectKind, OwnedObject, StoredObject};
use domain::principal::EventMetadata;
use uuid::Uuid;

/// What was published.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Published {
    /// The curated environment.
    pub environment_id: Uuid,
    /// Its first version.
    pub version_id: Uuid,
    /// The queued build attempt.
    pub attempt_id: Uuid,
}

/// Creates a curated environment with one version built from `context` and queues
/// its build (a build worker picks it up).
pub async fn publish(
    state: &AppState,
    operator: &str,
    name: &str,
    description: &str,
    format: ArchiveFormat,
    context: Vec<u8>,
) -> anyhow::Result<Published> {
    check_archive(format, &context).await?;
    let meta = operator_metadata(operator);
    let environment_id = Uuid::new_v4();
    let created = EnvironmentCreated {
        environment_id,
        company_id: None,
        owner_kind: OwnerKind::SystemCurated,
        owner_scope: OwnerScope::Company,
        owner_id: None,
        name: name.to_string(),
        description: description.to_string(),
    };
    state
        .bus
        .execute::<Environment>(
            &environment_id.to_string(),
            EnvironmentCommand::Create(created),
            &meta,
        )
        .await?;
    add_version(state, &meta, environment_id, context).await
}

/// Adds a version built from `context` to an existing curated environment and
/// queues its build. When it is ready, every company pinning the environment is
/// told (`curated_environment_published`).
pub async fn publish_version(
    state: &AppState,
    operator: &str,
    environment_id: Uuid,
    format: ArchiveFormat,
    context: Vec<u8>,
) -> anyhow::Result<Published> {
    let curated: Option<String> = sqlx::query_scalar(
        "SELECT lifecycle FROM environments WHERE id = $1 AND owner_kind = 'system_curated'",
    )
    .bind(environment_id)
    .fetch_optional(&state.pool)
    .await?;
    match curated.as_deref() {
        None => anyhow::bail!("{environment_id} is not a curated environment"),
        Some("archived") => anyhow::bail!("the curated environment {environment_id} is archived"),
        Some(_) => {}
    }
    check_archive(format, &context).await?;
    add_version(state, &operator_metadata(operator), environment_id, context).await
}

/// Refuses an archive the tenants' upload rules would refuse.
async fn check_archive(format: ArchiveFormat, context: &[u8]) -> anyhow::Result<()> {
    let bytes = context.to_vec();
    tokio::task::spawn_blocking(move || {
        archive::scan(
            format,
            std::io::Cursor::new(bytes),
            ArchiveLimits::default(),
            |_, _| Ok(()),
        )
    })
    .await?
    .context("the context archive is refused")?;
    Ok(())
}

/// Stores the context, creates the environment's next version and queues its build.
async fn add_version(
    state: &AppState,
    meta: &EventMetadata,
    environment_id: Uuid,
    context: Vec<u8>,
) -> anyhow::Result<Published> {
    let bus = &state.bus;
    let object_id = Uuid::new_v4();
    let key = format!("context/curated/{object_id}");
    let written = state.objects.put_bytes(&key, Bytes::from(context)).await?;
    let stored = StoredObject {
        object_id,
        company_id: None,
        kind: ObjectKind::Context,
        digest: written.digest.clone(),
        byte_size: written.byte_size,
        key,
    };
    bus.execute::<OwnedObject>(&object_id.to_string(), ObjectCommand::Record(stored), meta)
        .await?;
    let version_id = Uuid::new_v4();
    let allocated = bus
        .execute::<Environment>(
            &environment_id.to_string(),
            EnvironmentCommand::AllocateVersion { version_id },
            meta,
        )
        .await?;
    let version_number =
        allocated_number(&allocated.events).context("no version number was allocated")?;
    let version = VersionCreated {
        version_id,
        environment_id,
        company_id: None,
        version_number,
        owned_object_id: Some(object_id),
        source_digest: Some(written.digest),
        source_ref: None,
        resource_profile: ResourceProfile::Standard,
        runner_release: domain::runner_release::BUILT_IN.into(),
    };
    bus.execute::<EnvironmentVersion>(
        &version_id.to_string(),
        VersionCommand::Create(version),
        meta,
    )
    .await?;
    let attempt_id = Uuid::new_v4();
    let queue = VersionCommand::QueueBuild {
        attempt_id,
        region: catalog::default_build_region(state.deployment.provider).into(),
        profile: BuildProfile::Standard,
        now: chrono::Utc::now(),
    };
    bus.execute::<EnvironmentVersion>(&version_id.to_string(), queue, meta)
        .await?;
    Ok(Published {
        environment_id,
        version_id,
        attempt_id,
    })
}
