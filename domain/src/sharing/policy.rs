//! Secret slot policies of a share grant: who fills each slot of the shared task.

use crate::tasks::contents::valid_name;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// Most entries a grant's policy map may hold.
pub const MAX_POLICIES: usize = 100;

/// Who fills a secret slot (spec `secret_slot_policies` values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SlotPolicy {
    /// The borrowing scope fills it (the default for a slot absent from the map).
    Borrower,
    /// The task's owner fills it.
    Owner,
    /// The owner fills it unless the borrower sets its own value.
    OwnerOverridable,
}

impl SlotPolicy {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Borrower => "borrower",
            Self::Owner => "owner",
            Self::OwnerOverridable => "owner_overridable",
        }
    }
}

/// A grant's map of slot name to policy.
pub type SlotPolicies = BTreeMap<String, SlotPolicy>;

/// The policy a grant gives a slot: its entry, or `borrower` when absent.
pub fn policy_of(policies: &SlotPolicies, slot: &str) -> SlotPolicy {
    policies.get(slot).copied().unwrap_or(SlotPolicy::Borrower)
}

/// Parses a request's `secret_slot_policies` (absent or `null` is an empty map),
/// listing every problem: not an object, more than [`MAX_POLICIES`] entries, an
/// invalid slot name, an unknown policy.
pub fn parse_policies(value: Option<&Value>) -> Result<SlotPolicies, Vec<String>> {
    let object = match value {
        None | Some(Value::Null) => return Ok(SlotPolicies::new()),
        Some(Value::Object(object)) => object,
        Some(_) => return Err(vec!["secret_slot_policies must be an object".into()]),
    };
    let mut problems = Vec::new();
    if object.len() > MAX_POLICIES {
        problems.push(format!(
            "at most {MAX_POLICIES} entries, got {}",
            object.len()
        ));
    }
    let mut policies = SlotPolicies::new();
    for (slot, policy) in object {
        if !valid_name(slot) {
            problems.push(format!("invalid slot name {slot:?}"));
        }
        match serde_json::from_value::<SlotPolicy>(policy.clone()) {
            Ok(policy) => {
                policies.insert(slot.clone(), policy);
            }
            Err(_) => problems.push(format!(
                "slot {slot:?}: policy must be borrower, owner or owner_overridable"
            )),
        }
    }
    if problems.is_empty() {
        Ok(policies)
    } else {
        Err(problems)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn absent_maps_are_empty_and_absent_slots_are_borrower() {
        assert_eq!(parse_policies(None), Ok(SlotPolicies::new()));
        assert_eq!(parse_policies(Some(&Value::Null)), Ok(SlotPolicies::new()));
        let policies = parse_policies(Some(&json!({"API": "owner"}))).unwrap();
        assert_eq!(policy_of(&policies, "API"), SlotPolicy::Owner);
        assert_eq!(policy_of(&policies, "OTHER"), SlotPolicy::Borrower);
    }

    #[test]
    fn every_problem_is_listed() {
        let problems = parse_policies(Some(&json!({"1bad": "owner", "ok": "nobody"}))).unwrap_err();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(parse_policies(Some(&json!(["owner"]))).is_err());
        let many: serde_json::Map<String, Value> = (0..=MAX_POLICIES)
            .map(|i| (format!("S{i}"), json!("borrower")))
            .collect();
        assert!(parse_policies(Some(&Value::Object(many))).is_err());
    }
}
