//! The ReviewTemplate aggregate: the gates a held write passes before it applies.
//! Each gate is decided by one review group (`mode: any`: one member's approval
//! passes it); `require_signature` makes every approval carry a signature.

use super::{MAX_GATES, ReviewError, check_name};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Who decides a gate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GateCondition {
    /// Always `group`.
    #[serde(rename = "type")]
    pub condition_type: String,
    /// The review group.
    pub group_id: Uuid,
    /// Always `any`: one member's approval passes the gate.
    pub mode: String,
}

/// One gate of a template.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gate {
    /// Name.
    pub name: String,
    /// Who decides it.
    pub condition: GateCondition,
}

/// A template as created.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReviewTemplateTerms {
    /// The template.
    pub template_id: Uuid,
    /// Its company.
    pub company_id: Uuid,
    /// Name.
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// 1..[`MAX_GATES`] gates; all must pass.
    pub gates: Vec<Gate>,
    /// Whether an approval must carry a signature.
    pub require_signature: bool,
    /// Who created it.
    pub created_by: String,
}

impl ReviewTemplateTerms {
    /// The terms checked (the groups' existence is the route's to check).
    pub fn check(mut self) -> Result<Self, ReviewError> {
        self.name = check_name("name", &self.name)?;
        if self.gates.is_empty() || self.gates.len() > MAX_GATES {
            return Err(ReviewError::Invalid(format!(
                "gates must hold 1..{MAX_GATES} gates"
            )));
        }
        for gate in &mut self.gates {
            gate.name = check_name("gate name", &gate.name)?;
            if gate.condition.condition_type != "group" || gate.condition.mode != "any" {
                return Err(ReviewError::Invalid(format!(
                    "gate '{}': condition must be {{type: group, group_id, mode: any}}",
                    gate.name
                )));
            }
        }
        Ok(self)
    }
}

super::created_once!(
    /// A review template.
    ReviewTemplate, ReviewTemplateCommand, ReviewTemplateEvent, ReviewTemplateCreated, ReviewTemplateTerms, "review_template"
);
