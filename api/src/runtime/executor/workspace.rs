//! A run's workspace on this machine: the task's bundle, scripts, driver and
//! inputs, prepared before the work starts (for a local run and for a run in the
//! cluster alike).

use crate::runtime::Runtime;
use crate::runtime::unpack;
use anyhow::Context;
use domain::environments::archive;
use domain::objects::DeletionState;
use domain::tasks::bundle;
use domain::tasks::contents::VersionContents;
use projections::read_models::owned_objects::query as objects;
use std::path::Path;
use uuid::Uuid;

/// Unpacks the bundle (if any), writes the scripts, the driver and the inputs
/// file, and makes the artifacts directory. The bundle's rules reserve every name
/// written after it.
pub(super) async fn prepare(
    state: &Runtime,
    workspace: &Path,
    contents: &VersionContents,
    input_key: &str,
) -> anyhow::Result<()> {
    tokio::fs::create_dir_all(workspace).await?;
    if let Some(bundle) = &contents.bundle {
        unpack_bundle(state, workspace, bundle.object_id).await?;
    }
    tokio::fs::create_dir_all(workspace.join("artifacts")).await?;
    tokio::fs::write(workspace.join("startup.sh"), &contents.startup_script).await?;
    tokio::fs::write(workspace.join("work.sh"), &contents.work_script).await?;
    tokio::fs::write(
        workspace.join("driver.sh"),
        contents.effective_work_command(),
    )
    .await?;
    let input = state.objects.get_bytes(input_key).await?;
    tokio::fs::write(workspace.join("inputs.json"), input).await?;
    Ok(())
}

/// Unpacks a stored task bundle into the workspace under the bundle rules.
async fn unpack_bundle(state: &Runtime, workspace: &Path, object_id: Uuid) -> anyhow::Result<()> {
    let object = objects::object(&state.pool, object_id)
        .await?
        .filter(|o| o.deletion_state == DeletionState::Active)
        .context("the task bundle is no longer stored")?;
    let spooled = state.objects.spool(&object.key).await?;
    let target = workspace.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let mut file = std::fs::File::open(spooled.path())?;
        let format = archive::sniff(&mut file)?;
        archive::scan(
            format,
            std::io::BufReader::new(file),
            bundle::limits(),
            |entry, reader| unpack::extract(&target, entry, reader),
        )
        .map_err(|rejection| anyhow::anyhow!("the task bundle is refused: {rejection}"))
    })
    .await??;
    Ok(())
}
