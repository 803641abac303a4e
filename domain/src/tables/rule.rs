//! Approval rules of a custom table (spec `custom-tables.md` sections 3, 5 and 6):
//! a `require_approval` rule lists the write `events` it holds (`created`,
//! `updated`) and the review template that decides them. A callback write a rule
//! holds answers `held_for_approval` and applies only once approved
//! ([`super::staged_change`]).

use super::TableError;
use super::trigger::is_trigger_id;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Most rules of a table.
pub const MAX_RULES: usize = 20;

/// A write event a rule holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleEvent {
    /// Record creations.
    Created,
    /// Record updates.
    Updated,
}

/// An approval rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalRule {
    /// Chosen by the client, `^[a-z0-9][a-z0-9_-]{0,63}$`, unique in the table.
    pub id: String,
    /// Shown to writers as `rule_label`.
    pub label: String,
    /// Always `require_approval`.
    #[serde(rename = "type")]
    pub rule_type: String,
    /// The events it holds (one or both, once each).
    pub events: Vec<RuleEvent>,
    /// The review template that decides held writes (checked by the route).
    pub template_id: Uuid,
}

fn invalid(message: String) -> TableError {
    TableError::RuleConfig(message)
}

/// Checks a table's whole rule set.
pub fn check(rules: Vec<ApprovalRule>) -> Result<Vec<ApprovalRule>, TableError> {
    if rules.len() > MAX_RULES {
        return Err(invalid(format!("a table holds at most {MAX_RULES} rules")));
    }
    let mut checked: Vec<ApprovalRule> = Vec::with_capacity(rules.len());
    for mut rule in rules {
        if !is_trigger_id(&rule.id) {
            return Err(invalid(format!(
                "rule id '{}' must match ^[a-z0-9][a-z0-9_-]{{0,63}}$",
                rule.id
            )));
        }
        if checked.iter().any(|r| r.id == rule.id) {
            return Err(invalid(format!("rule '{}' is named twice", rule.id)));
        }
        rule.label = rule.label.trim().to_string();
        if rule.label.is_empty() || rule.label.chars().count() > 200 {
            return Err(invalid(format!(
                "rule '{}': label must be 1..200 characters",
                rule.id
            )));
        }
        if rule.rule_type != "require_approval" {
            return Err(invalid(format!(
                "rule '{}': type must be require_approval",
                rule.id
            )));
        }
        rule.events.sort();
        rule.events.dedup();
        if rule.events.is_empty() {
            return Err(invalid(format!(
                "rule '{}': events must name created or updated",
                rule.id
            )));
        }
        checked.push(rule);
    }
    Ok(checked)
}

/// The first rule that holds writes of `event`.
pub fn holding(rules: &[ApprovalRule], event: RuleEvent) -> Option<&ApprovalRule> {
    rules.iter().find(|r| r.events.contains(&event))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(value: serde_json::Value) -> ApprovalRule {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn rules_are_checked_and_events_kept_once() {
        let template = Uuid::from_u128(7);
        let checked = check(vec![rule(
            json!({"id": "big", "label": " Big ", "type": "require_approval",
            "events": ["updated", "created", "updated"], "template_id": template}),
        )])
        .unwrap();
        assert_eq!(checked[0].label, "Big");
        assert_eq!(
            checked[0].events,
            vec![RuleEvent::Created, RuleEvent::Updated]
        );
        assert_eq!(holding(&checked, RuleEvent::Updated).unwrap().id, "big");
        for bad in [
            json!({"id": "Bad", "label": "x", "type": "require_approval", "events": ["created"], "template_id": template}),
            json!({"id": "a", "label": "", "type": "require_approval", "events": ["created"], "template_id": template}),
            json!({"id": "a", "label": "x", "type": "notify", "events": ["created"], "template_id": template}),
            json!({"id": "a", "label": "x", "type": "require_approval", "events": [], "template_id": template}),
        ] {
            assert!(check(vec![rule(bad.clone())]).is_err(), "{bad}");
        }
        let twice = rule(
            json!({"id": "a", "label": "x", "type": "require_approval", "events": ["created"], "template_id": template}),
        );
        assert!(check(vec![twice.clone(), twice]).is_err());
    }
}
