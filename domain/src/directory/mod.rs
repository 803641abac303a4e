//! The tenant directory: companies, departments, chatrooms, users, API keys and
//! social media clients.
//!
//! The directory is kept as events like everything else so that auditors can see who
//! was granted what and when. Commands are declarative ("define this entry as...")
//! and emit only the differences, so re-applying the same directory file changes
//! nothing.

pub mod api_key;
pub mod chatroom;
pub mod company;
pub mod department;
pub mod social_client;
pub mod user;

use crate::error::{Code, SpecError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use uuid::Uuid;

/// Refusals of directory commands. These come from operator tooling, never from a
/// tenant request, so they are plain conflicts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DirectoryError {
    /// The entry must be defined before it can be changed.
    #[error("{0} is not registered")]
    NotRegistered(&'static str),
    /// The id already belongs to an entry of another company.
    #[error("{0} belongs to another company")]
    CompanyMismatch(&'static str),
    /// A revoked API key cannot be changed or re-issued.
    #[error("the API key was revoked")]
    KeyRevoked,
}

impl SpecError for DirectoryError {
    fn code(&self) -> Code {
        match self {
            Self::NotRegistered(_) => Code::DirectoryEntryNotRegistered,
            Self::CompanyMismatch(_) => Code::DirectoryCompanyMismatch,
            Self::KeyRevoked => Code::ApiKeyRevoked,
        }
    }
}

/// A user or a social media client: a chatroom member or an API key's owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PrincipalRef {
    /// User or social media client.
    pub kind: crate::principal::PrincipalType,
    /// Its id.
    pub id: Uuid,
}

/// The differences between a current and a desired set, as (added, removed).
pub(crate) fn set_diff<T: Ord + Copy>(
    current: &BTreeSet<T>,
    desired: &BTreeSet<T>,
) -> (Vec<T>, Vec<T>) {
    let added = desired.difference(current).copied().collect();
    let removed = current.difference(desired).copied().collect();
    (added, removed)
}

/// Checks that a define command targets an entry of the same company.
pub(crate) fn same_company(
    existing: Option<Uuid>,
    requested: Uuid,
    what: &'static str,
) -> Result<(), DirectoryError> {
    match existing {
        Some(company) if company != requested => Err(DirectoryError::CompanyMismatch(what)),
        _ => Ok(()),
    }
}
