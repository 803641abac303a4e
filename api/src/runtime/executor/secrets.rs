//! The secrets a claimed run receives: the values its submission pinned, once each
//! borrowing scope's exact-version approval is checked, written to a file the
//! invocation reads and deletes before any script of the task starts.

use crate::runtime::Runtime;
use domain::secrets::ConsumerScope;
use domain::secrets::binding::secret_binding_aggregate_id;
use domain::secrets::resolve::{BorrowedSlots, SlotSources, borrowed_slots};
use projections::read_models::secrets::query as secrets;
use std::path::Path;
use uuid::Uuid;
use zeroize::Zeroizing;

/// Why a run cannot receive its secrets; the run ends `customer_failed`.
#[derive(Debug, thiserror::Error)]
pub(super) enum Refusal {
    /// A borrowing scope's live approval of the version does not name exactly the
    /// slots it fills (spec: at claim time they must equal the borrower's resolved
    /// slot subset).
    #[error(
        "the {} {} has not approved this exact task version to read its values for {:?}; \
         a manager of that scope approves it (POST /secret-approvals)\n",
        .0.consumer_scope.as_str(), .0.consumer_id, .0.slot_names
    )]
    Unapproved(BorrowedSlots),
    /// A pinned value was revoked (and shredded) after submission, or is not its
    /// binding's.
    #[error("the secret of slot {0} was revoked after the run was submitted\n")]
    Shredded(String),
}

impl Refusal {
    /// The run's `error_code`.
    pub(super) fn code(&self) -> &'static str {
        match self {
            Self::Unapproved(_) => "secret_approval_required",
            Self::Shredded(_) => "secret_unavailable",
        }
    }
}

/// A slot's name and its opened value.
pub(super) type Opened = Vec<(String, Zeroizing<Vec<u8>>)>;

/// Checks the approvals of the borrowed slots, then opens every pinned value.
pub(super) async fn open(
    state: &Runtime,
    (task_id, task_version_id): (Uuid, Uuid),
    owner: (ConsumerScope, Uuid),
    sources: &SlotSources,
) -> anyhow::Result<Result<Opened, Refusal>> {
    for borrowed in borrowed_slots(sources, owner) {
        let approved = secrets::approved_slots(
            &state.pool,
            borrowed.consumer_scope,
            borrowed.consumer_id,
            task_version_id,
        )
        .await?;
        if approved.as_ref() != Some(&borrowed.slot_names) {
            return Ok(Err(Refusal::Unapproved(borrowed)));
        }
    }
    let mut opened = Vec::with_capacity(sources.len());
    for (slot, source) in sources {
        // The pin's value must be its own binding's: that of its consumer, for
        // this task's slot.
        let binding =
            secret_binding_aggregate_id(source.consumer_scope, source.consumer_id, task_id, slot);
        match state
            .secrets
            .open(&state.pool, binding, source.value_version_id)
            .await?
        {
            Some(value) => opened.push((slot.clone(), value)),
            None => return Ok(Err(Refusal::Shredded(slot.clone()))),
        }
    }
    Ok(Ok(opened))
}

/// The secrets file's text: one `NAME='value'` line per slot, single-quoted for
/// the shell (the Kubernetes executor puts it in the run's Secret).
pub(super) fn env_file(secrets: &Opened) -> Zeroizing<Vec<u8>> {
    use std::io::Write;
    let mut text = Zeroizing::new(Vec::new());
    for (name, value) in secrets {
        let value = String::from_utf8_lossy(value);
        writeln!(text, "{name}='{}'", value.replace('\'', "'\\''")).expect("writing to memory");
    }
    text
}

/// Writes `/workspace/.secrets.env` (mode 0600): one `NAME='value'` line per slot,
/// single-quoted for the shell. The invocation exports and deletes it before the
/// task's scripts start, so values travel neither on a command line (visible to
/// every host user) nor in a file the work leaves behind.
pub(super) async fn write(workspace: &Path, secrets: &Opened) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let text = env_file(secrets);
    let path = workspace.join(".secrets.env");
    tokio::task::spawn_blocking(move || {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)?;
        file.write_all(&text)
    })
    .await??;
    Ok(())
}
