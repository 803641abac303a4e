//! The policy values a company writes and the operator-set limits it reads.

use crate::validation::{ViolationKind, Violations};
use serde::{Deserialize, Serialize};

/// The tenant-writable part of the company policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyValues {
    /// Days run content (input, output, log, artifacts) is kept, 1..365.
    pub run_content_retention_days: i32,
    /// Days an image no version references is kept, 1..90.
    pub unreferenced_image_retention_days: i32,
    /// Regions runtime jobs may be placed in; at least one.
    pub allowed_regions: Vec<String>,
}

impl PolicyValues {
    /// Bounds of `run_content_retention_days`.
    pub const RUN_RETENTION: (i64, i64) = (1, 365);
    /// Bounds of `unreferenced_image_retention_days`.
    pub const IMAGE_RETENTION: (i64, i64) = (1, 90);
    /// Default of both retention fields.
    pub const DEFAULT_RETENTION_DAYS: i32 = 30;

    /// The default policy of a company: 30 days each, every selectable region.
    pub fn defaults(selectable_regions: &[String]) -> Self {
        Self {
            run_content_retention_days: Self::DEFAULT_RETENTION_DAYS,
            unreferenced_image_retention_days: Self::DEFAULT_RETENTION_DAYS,
            allowed_regions: selectable_regions.to_vec(),
        }
    }

    /// Checks the bounds of spec section 2.
    pub fn validate(&self) -> Result<(), Violations> {
        let mut v = Violations::new();
        let (lo, hi) = Self::RUN_RETENTION;
        v.range(
            "run_content_retention_days",
            self.run_content_retention_days.into(),
            lo,
            hi,
        );
        let (lo, hi) = Self::IMAGE_RETENTION;
        v.range(
            "unreferenced_image_retention_days",
            self.unreferenced_image_retention_days.into(),
            lo,
            hi,
        );
        if self.allowed_regions.is_empty() {
            v.push(
                "allowed_regions",
                ViolationKind::TooShort(1),
                Some(serde_json::json!([])),
            );
        }
        v.into_result()
    }
}

/// A partial change of the policy: absent fields keep their value.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyChanges {
    /// New run content retention.
    pub run_content_retention_days: Option<i32>,
    /// New image retention.
    pub unreferenced_image_retention_days: Option<i32>,
    /// New allowed regions.
    pub allowed_regions: Option<Vec<String>>,
}

impl PolicyChanges {
    /// The values after the change.
    pub fn apply_to(self, current: PolicyValues) -> PolicyValues {
        PolicyValues {
            run_content_retention_days: self
                .run_content_retention_days
                .unwrap_or(current.run_content_retention_days),
            unreferenced_image_retention_days: self
                .unreferenced_image_retention_days
                .unwrap_or(current.unreferenced_image_retention_days),
            allowed_regions: self.allowed_regions.unwrap_or(current.allowed_regions),
        }
    }
}

/// Limits the operator sets for every company (read-only to tenants).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperatorLimits {
    /// Highest `timeout_seconds` a version may publish with.
    pub timeout_ceiling_seconds: i64,
    /// Active environments per company.
    pub active_environment_limit: i64,
    /// Configured capacity-retained version limit.
    pub capacity_retained_version_limit: i64,
    /// Runs executing at once per company.
    pub run_concurrency_limit: i64,
    /// Queued runs per company.
    pub queued_run_limit: i64,
    /// Builds running at once per company.
    pub active_build_limit: i64,
    /// Builds queued per company.
    pub queued_build_limit: i64,
}

impl Default for OperatorLimits {
    fn default() -> Self {
        Self {
            timeout_ceiling_seconds: 86_400,
            active_environment_limit: 30,
            capacity_retained_version_limit: 100,
            run_concurrency_limit: 50,
            queued_run_limit: 100,
            active_build_limit: 2,
            queued_build_limit: 20,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_inclusive() {
        let mut p = PolicyValues::defaults(&["onprem".into()]);
        assert!(p.validate().is_ok());
        p.run_content_retention_days = 365;
        p.unreferenced_image_retention_days = 90;
        assert!(p.validate().is_ok());
        p.run_content_retention_days = 366;
        p.unreferenced_image_retention_days = 0;
        p.allowed_regions.clear();
        assert_eq!(p.validate().unwrap_err().0.len(), 3);
    }
}
