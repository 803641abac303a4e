//! A share grant of a task the caller owns.

use super::Task;
use crate::error::{ApiError, ApiResult};
use crate::request::Caller;
use projections::read_models::sharing::query::{self, GrantRow};
use uuid::Uuid;

/// A grant of a task the caller owns (404 otherwise).
#[derive(Debug, Clone)]
pub struct ShareGrant {
    /// The task.
    pub task: Task,
    /// The grant.
    pub row: GrantRow,
}

impl ShareGrant {
    /// The grant of a task the caller owns.
    pub async fn owned(caller: &Caller, task: Uuid, grant: Uuid) -> ApiResult<Self> {
        let task = Task::owned(caller, task).await?;
        let row = query::grant(caller.pool(), task.id(), grant)
            .await?
            .ok_or(ApiError::NotFound)?;
        Ok(Self { task, row })
    }
}
