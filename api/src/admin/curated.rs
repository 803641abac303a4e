//! Curated environments: operator-owned, readable by every company, built from a
//! context archive the operator provides (`sandboxctl environments publish-curated`).

use super::operator_metadata;
use crate::state::AppState;
use anyhow::Context;
use bytes::Bytes;
use domain::catalog::{self, ResourceProfile};
use domain::environments::archive::{self, ArchiveFormat, ArchiveLimits};
use domain::environments::environment::{
    Environment, EnvironmentCommand, EnvironmentCreated, EnvironmentEvent, OwnerKind, OwnerScope,
};
use domain::environments::version::{
    BuildProfile, EnvironmentVersion, VersionCommand, VersionCreated,
};
use domain::objects::{ObjectCommand, ObjectKind, OwnedObject, StoredObject};
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
    let bytes = context.clone();
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
    let meta = operator_metadata(operator);
    let bus = &state.bus;
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
    bus.execute::<Environment>(
        &environment_id.to_string(),
        EnvironmentCommand::Create(created),
        &meta,
    )
    .await?;
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
    bus.execute::<OwnedObject>(&object_id.to_string(), ObjectCommand::Record(stored), &meta)
        .await?;
    let version_id = Uuid::new_v4();
    let allocated = bus
        .execute::<Environment>(
            &environment_id.to_string(),
            EnvironmentCommand::AllocateVersion { version_id },
            &meta,
        )
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
        .context("no version number was allocated")?;
    let version = VersionCreated {
        version_id,
        environment_id,
        company_id: None,
        version_number,
        owned_object_id: Some(object_id),
        source_digest: Some(written.digest),
        source_ref: None,
        resource_profile: ResourceProfile::Standard,
        runner_release: crate::routes::sandbox::environments::RUNNER_RELEASE.into(),
    };
    bus.execute::<EnvironmentVersion>(
        &version_id.to_string(),
        VersionCommand::Create(version),
        &meta,
    )
    .await?;
    let attempt_id = Uuid::new_v4();
    let queue = VersionCommand::QueueBuild {
        attempt_id,
        region: catalog::default_build_region(state.deployment.provider).into(),
        profile: BuildProfile::Standard,
        now: chrono::Utc::now(),
    };
    bus.execute::<EnvironmentVersion>(&version_id.to_string(), queue, &meta)
        .await?;
    Ok(Published {
        environment_id,
        version_id,
        attempt_id,
    })
}
