//! The ReviewGroup aggregate: named company users who decide a template's gate.

use super::{MAX_MEMBERS, ReviewError, check_name};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// A group as created.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReviewGroupTerms {
    /// The group.
    pub group_id: Uuid,
    /// Its company.
    pub company_id: Uuid,
    /// Name.
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// Users of the company (checked by the route), without repeats.
    pub member_ids: Vec<Uuid>,
    /// Who created it.
    pub created_by: String,
}

impl ReviewGroupTerms {
    /// The terms checked: a name, 1..[`MAX_MEMBERS`] members, none twice.
    pub fn check(mut self) -> Result<Self, ReviewError> {
        self.name = check_name("name", &self.name)?;
        if self.member_ids.is_empty() || self.member_ids.len() > MAX_MEMBERS {
            return Err(ReviewError::Invalid(format!(
                "member_ids must name 1..{MAX_MEMBERS} users"
            )));
        }
        let mut seen = self.member_ids.clone();
        seen.sort();
        seen.dedup();
        if seen.len() != self.member_ids.len() {
            return Err(ReviewError::Invalid("member_ids names a user twice".into()));
        }
        Ok(self)
    }
}

super::created_once!(
    /// A review group.
    ReviewGroup, ReviewGroupCommand, ReviewGroupEvent, ReviewGroupCreated, ReviewGroupTerms, "review_group"
);
