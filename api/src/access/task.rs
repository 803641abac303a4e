//! Tasks and their versions as the caller may see them.
//!
//! Every member of the owning company reads a task and its published versions as
//! a borrower; the owner scope's managers own it (they see drafts and owner-only
//! fields, and change it). Anything else answers the uniform 404.

use super::scope;
use crate::error::{ApiError, ApiResult};
use crate::request::Caller;
use domain::environments::environment::Lifecycle;
use domain::error::Code;
use domain::tasks::contents::VersionContents;
use domain::tasks::version::{ContentState, TaskVersionState};
use projections::read_models::environments::query as environments;
use projections::read_models::switches;
use projections::read_models::tasks::VersionRow;
use projections::read_models::tasks::query::{self, TaskSummary, VersionDetail};
use uuid::Uuid;

/// Who is looking at a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Viewer {
    /// Manages the task's owner scope.
    Owner,
    /// Anyone else allowed to see it.
    Borrower,
}

/// A task of the caller's company, and how the caller sees it.
#[derive(Debug, Clone)]
pub struct Task {
    /// The task with its newest published version.
    pub row: TaskSummary,
    /// Owner or borrower.
    pub viewer: Viewer,
}

impl Task {
    /// A task of the caller's company (hidden Quick Run parents included).
    pub async fn read(caller: &Caller, id: Uuid) -> ApiResult<Self> {
        let row = query::task(caller.pool(), caller.principal.company_id, id)
            .await?
            .ok_or(ApiError::NotFound)?;
        let task = &row.task;
        let owner = scope::manages(caller, task.owner_scope, Some(task.owner_id)).await?;
        let viewer = if owner {
            Viewer::Owner
        } else {
            Viewer::Borrower
        };
        Ok(Self { row, viewer })
    }

    /// A task the caller owns (404 otherwise).
    pub async fn owned(caller: &Caller, id: Uuid) -> ApiResult<Self> {
        let task = Self::read(caller, id).await?;
        if task.owner() {
            Ok(task)
        } else {
            Err(ApiError::NotFound)
        }
    }

    /// A task that can be shared or enabled: 404 when unknown or hidden, 409
    /// `task_archived` when archived.
    pub async fn enableable(caller: &Caller, id: Uuid) -> ApiResult<Self> {
        let task = Self::read(caller, id).await?;
        task.require_enableable()?;
        Ok(task)
    }

    /// Refuses a hidden (404) or archived (409 `task_archived`) task.
    pub fn require_enableable(&self) -> ApiResult<()> {
        if self.row.task.hidden {
            return Err(ApiError::NotFound);
        }
        if self.row.task.lifecycle != Lifecycle::Active {
            return Err(ApiError::code(Code::TaskArchived, "the task is archived"));
        }
        Ok(())
    }

    /// Whether the caller owns the task.
    pub fn owner(&self) -> bool {
        self.viewer == Viewer::Owner
    }

    /// The task's id.
    pub fn id(&self) -> Uuid {
        self.row.task.id
    }

    /// A version of this task the caller may see: owners see every state,
    /// borrowers never see drafts.
    pub async fn version(&self, caller: &Caller, id: Uuid) -> ApiResult<TaskVersion> {
        match query::version(caller.pool(), self.id(), id).await? {
            Some(row) if self.owner() || row.version.state != TaskVersionState::Draft => {
                Ok(TaskVersion {
                    row,
                    viewer: self.viewer,
                })
            }
            _ => Err(ApiError::NotFound),
        }
    }
}

/// A version of a task the caller can see.
#[derive(Debug, Clone)]
pub struct TaskVersion {
    /// The version with its environment and `update_available`.
    pub row: VersionDetail,
    /// Owner or borrower of its task.
    pub viewer: Viewer,
}

impl TaskVersion {
    /// A version of the caller's company that a run may pin: 404 when unknown, of
    /// another company, or a draft the caller may not see (only the task's owners
    /// see drafts); 409 `version_not_runnable` when the caller sees it but it
    /// cannot run (a draft its owner names, an archived version).
    pub async fn runnable(caller: &Caller, id: Uuid) -> ApiResult<VersionRow> {
        let (version, task) =
            query::version_with_task(caller.pool(), caller.principal.company_id, id)
                .await?
                .ok_or(ApiError::NotFound)?;
        if version.state == TaskVersionState::Draft {
            let owner = scope::manages(caller, task.owner_scope, Some(task.owner_id)).await?;
            return Err(if owner {
                not_runnable()
            } else {
                ApiError::NotFound
            });
        }
        require_runnable(&version)?;
        require_bundle_runner(caller.pool(), &version.contents).await?;
        Ok(version)
    }
}

/// Refuses a bundle on an environment version whose runner release is not approved
/// (409 `task_bundle_runner_unsupported`); versions without a bundle always pass.
pub async fn require_bundle_runner(
    pool: &sqlx::PgPool,
    contents: &VersionContents,
) -> ApiResult<()> {
    if contents.bundle.is_none() {
        return Ok(());
    }
    let release = environments::version_with_environment(pool, contents.environment_version_id)
        .await?
        .map(|(version, _)| version.runner_release);
    let approved = match release {
        Some(release) => switches::runner_release_approved(pool, &release).await?,
        None => false,
    };
    if approved {
        Ok(())
    } else {
        Err(ApiError::code(
            Code::TaskBundleRunnerUnsupported,
            "the version has a bundle and its environment version's runner release is not approved; pin a version built on an approved release",
        ))
    }
}

/// Refuses a version that is not published with active contents (spec rule 2).
pub fn require_runnable(version: &VersionRow) -> ApiResult<()> {
    if version.content_state == ContentState::Scrubbed {
        return Err(ApiError::code(
            Code::ContentScrubbedIrreversible,
            "the version's contents were scrubbed; it can never run again",
        ));
    }
    if !version.runnable() {
        return Err(not_runnable());
    }
    Ok(())
}

/// The refusal of a version that is not published and active (or of a task with no
/// such version).
pub fn not_runnable() -> ApiError {
    ApiError::code(
        Code::VersionNotRunnable,
        "the version is not published with active contents",
    )
}
