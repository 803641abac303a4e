//! The review module (spec `custom-tables.md` section 5, "REST-only steps"): review
//! groups of company users, and review templates whose gates name the groups that
//! decide. An approval rule of a custom table names a template; a write the rule
//! holds is decided by the template's groups ([`crate::tables::staged_change`]).

pub mod group;
pub mod template;

pub use group::{ReviewGroup, ReviewGroupCommand, ReviewGroupEvent, ReviewGroupTerms};
pub use template::{
    Gate, GateCondition, ReviewTemplate, ReviewTemplateCommand, ReviewTemplateEvent,
    ReviewTemplateTerms,
};

use crate::error::{Code, SpecError};

/// Longest name of a group, a template or a gate.
pub const MAX_NAME: usize = 200;
/// Most members of a group.
pub const MAX_MEMBERS: usize = 100;
/// Most gates of a template.
pub const MAX_GATES: usize = 10;

/// Refusals of review commands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReviewError {
    /// The definition breaks a rule (400 `review_config_invalid`).
    #[error("{0}")]
    Invalid(String),
}

impl SpecError for ReviewError {
    fn code(&self) -> Code {
        Code::ReviewConfigInvalid
    }
}

/// A name of 1..[`MAX_NAME`] characters, trimmed.
pub(crate) fn check_name(what: &str, name: &str) -> Result<String, ReviewError> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > MAX_NAME {
        return Err(ReviewError::Invalid(format!(
            "{what} must be 1..{MAX_NAME} characters"
        )));
    }
    Ok(name.to_string())
}
