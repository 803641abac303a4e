//! Environments and their versions as the caller may see and change them.
//!
//! Metadata is readable by every member of the owning company, and curated
//! environments by every company. Changes, upload sessions, versions and builds need
//! the owner scope's management; curated environments have no tenant write path.
//! Anything the caller may not see or change answers the uniform 404.

use super::scope;
use crate::error::{ApiError, ApiResult};
use crate::request::Caller;
use projections::read_models::environments::EnvironmentRow;
use projections::read_models::environments::query::{self, NamedVersion};
use uuid::Uuid;

/// An environment the caller can see, and whether it manages it.
#[derive(Debug, Clone)]
pub struct Environment {
    /// The environment.
    pub row: EnvironmentRow,
    /// Whether the caller manages its owner scope (never for curated ones).
    pub manager: bool,
}

impl Environment {
    /// An environment of the caller's company, or a curated one.
    pub async fn read(caller: &Caller, id: Uuid) -> ApiResult<Self> {
        let row = query::environment(caller.pool(), id)
            .await?
            .filter(|row| row.curated() || row.company_id == Some(caller.principal.company_id))
            .ok_or(ApiError::NotFound)?;
        let manager =
            !row.curated() && scope::manages(caller, row.owner_scope, row.owner_id).await?;
        Ok(Self { row, manager })
    }

    /// An environment the caller manages (404 otherwise, curated included).
    pub async fn managed(caller: &Caller, id: Uuid) -> ApiResult<Self> {
        let environment = Self::read(caller, id).await?;
        if environment.manager {
            Ok(environment)
        } else {
            Err(ApiError::NotFound)
        }
    }

    /// A version of this environment (404 when it belongs to another).
    pub async fn version(&self, caller: &Caller, id: Uuid) -> ApiResult<EnvironmentVersion> {
        let row = query::version(caller.pool(), self.row.id, id)
            .await?
            .ok_or(ApiError::NotFound)?;
        Ok(EnvironmentVersion {
            row,
            manager: self.manager,
        })
    }
}

/// A version of an environment the caller can see.
#[derive(Debug, Clone)]
pub struct EnvironmentVersion {
    /// The version with its environment's name.
    pub row: NamedVersion,
    /// Whether the caller manages the environment (it sees owner-only fields).
    pub manager: bool,
}
