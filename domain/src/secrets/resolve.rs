//! Slot resolution: who fills each secret slot of a pinned version in a room, from
//! the grant's slot policy and the values bound for the borrowing scopes and the
//! task's owner scope. The menu shows it (`secret_slots[]`), a run pins it at
//! submission (`slot_sources`, shown masked as `secret_slot_provenance`).

use super::ConsumerScope;
use crate::sharing::policy::SlotPolicy;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use uuid::Uuid;

/// Which side's value a slot uses (spec `resolved_via`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResolvedVia {
    /// The borrowing scope's value.
    Borrower,
    /// The task owner's value.
    Owner,
}

impl ResolvedVia {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Borrower => "borrower",
            Self::Owner => "owner",
        }
    }
}

/// A value bound for one consumer scope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BoundValue {
    /// The scope that bound it.
    pub consumer_scope: ConsumerScope,
    /// Its room, department or company id.
    pub consumer_id: Uuid,
    /// The value version a run would use.
    pub value_version_id: Uuid,
    /// Its length in bytes.
    pub byte_size: i64,
}

/// One slot of a pinned version, resolved for one room.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotResolution {
    /// The slot.
    pub name: String,
    /// The grant's policy for it.
    pub policy: SlotPolicy,
    /// The nearest borrowing scope's value (room, then department, then company).
    pub borrower: Option<BoundValue>,
    /// The owner scope's value.
    pub owner: Option<BoundValue>,
}

impl SlotResolution {
    /// Whose value applies: `borrower` fills only from the borrower, `owner` only
    /// from the owner, `owner_overridable` from the borrower when it bound one and
    /// the owner otherwise; `None` is `missing`.
    pub fn source(&self) -> Option<ResolvedVia> {
        match self.policy {
            SlotPolicy::Borrower => self.borrower.as_ref().map(|_| ResolvedVia::Borrower),
            SlotPolicy::Owner => self.owner.as_ref().map(|_| ResolvedVia::Owner),
            SlotPolicy::OwnerOverridable => match (&self.borrower, &self.owner) {
                (Some(_), _) => Some(ResolvedVia::Borrower),
                (None, Some(_)) => Some(ResolvedVia::Owner),
                (None, None) => None,
            },
        }
    }

    /// The value that applies.
    pub fn used(&self) -> Option<(ResolvedVia, &BoundValue)> {
        match self.source()? {
            ResolvedVia::Borrower => self.borrower.as_ref().map(|b| (ResolvedVia::Borrower, b)),
            ResolvedVia::Owner => self.owner.as_ref().map(|b| (ResolvedVia::Owner, b)),
        }
    }
}

/// What a run pinned for one slot at submission (never the value).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlotSource {
    /// Whose value.
    pub resolved_via: ResolvedVia,
    /// The scope that bound it.
    pub consumer_scope: ConsumerScope,
    /// Its room, department or company id.
    pub consumer_id: Uuid,
    /// The value version the run receives.
    pub value_version_id: Uuid,
}

/// A run's pins, by slot.
pub type SlotSources = BTreeMap<String, SlotSource>;

/// The pins of every resolved slot (missing slots are absent).
pub fn snapshot(slots: &[SlotResolution]) -> SlotSources {
    slots
        .iter()
        .filter_map(|slot| {
            let (resolved_via, value) = slot.used()?;
            Some((
                slot.name.clone(),
                SlotSource {
                    resolved_via,
                    consumer_scope: value.consumer_scope,
                    consumer_id: value.consumer_id,
                    value_version_id: value.value_version_id,
                },
            ))
        })
        .collect()
}

/// The slots one borrowing scope fills with its own values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BorrowedSlots {
    /// The borrowing scope.
    pub consumer_scope: ConsumerScope,
    /// Its room, department or company id.
    pub consumer_id: Uuid,
    /// The slots, sorted: what the scope's exact-version approval must name.
    pub slot_names: Vec<String>,
}

/// The slots each borrowing scope fills with its own values for a task owned by
/// `owner` (spec: "at claim time they must equal the borrower's resolved slot
/// subset"). The owner's own values, whichever side resolved them, need no
/// approval: the owner scope's managers are the task's authors.
pub fn borrowed_slots(sources: &SlotSources, owner: (ConsumerScope, Uuid)) -> Vec<BorrowedSlots> {
    let mut borrowed: Vec<BorrowedSlots> = Vec::new();
    for (slot, source) in sources {
        let consumer = (source.consumer_scope, source.consumer_id);
        if source.resolved_via != ResolvedVia::Borrower || consumer == owner {
            continue;
        }
        match borrowed
            .iter_mut()
            .find(|b| (b.consumer_scope, b.consumer_id) == consumer)
        {
            Some(entry) => entry.slot_names.push(slot.clone()),
            None => borrowed.push(BorrowedSlots {
                consumer_scope: source.consumer_scope,
                consumer_id: source.consumer_id,
                slot_names: vec![slot.clone()],
            }),
        }
    }
    borrowed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(n: u128) -> Option<BoundValue> {
        Some(BoundValue {
            consumer_scope: ConsumerScope::Company,
            consumer_id: Uuid::from_u128(n),
            value_version_id: Uuid::from_u128(n),
            byte_size: 4,
        })
    }

    fn slot(policy: SlotPolicy, borrower: bool, owner: bool) -> SlotResolution {
        SlotResolution {
            name: "S".into(),
            policy,
            borrower: if borrower { value(1) } else { None },
            owner: if owner { value(2) } else { None },
        }
    }

    #[test]
    fn each_policy_picks_its_side() {
        use ResolvedVia::*;
        use SlotPolicy as P;
        let cases = [
            (P::Borrower, true, true, Some(Borrower)),
            (P::Borrower, false, true, None),
            (P::Owner, true, true, Some(Owner)),
            (P::Owner, true, false, None),
            (P::OwnerOverridable, true, true, Some(Borrower)),
            (P::OwnerOverridable, false, true, Some(Owner)),
            (P::OwnerOverridable, false, false, None),
        ];
        for (policy, borrower, owner, expected) in cases {
            let slot = slot(policy, borrower, owner);
            assert_eq!(slot.source(), expected, "{policy:?} {borrower} {owner}");
            let pinned = snapshot(std::slice::from_ref(&slot));
            assert_eq!(pinned.get("S").map(|s| s.resolved_via), expected);
        }
    }

    #[test]
    fn borrowed_slots_group_by_scope_and_skip_the_owner() {
        let source = |via, scope, id: u128| SlotSource {
            resolved_via: via,
            consumer_scope: scope,
            consumer_id: Uuid::from_u128(id),
            value_version_id: Uuid::from_u128(99),
        };
        let sources: SlotSources = [
            (
                "A",
                source(ResolvedVia::Borrower, ConsumerScope::Chatroom, 7),
            ),
            (
                "B",
                source(ResolvedVia::Owner, ConsumerScope::Department, 5),
            ),
            (
                "C",
                source(ResolvedVia::Borrower, ConsumerScope::Chatroom, 7),
            ),
            (
                "D",
                source(ResolvedVia::Borrower, ConsumerScope::Company, 1),
            ),
            (
                "E",
                source(ResolvedVia::Borrower, ConsumerScope::Department, 5),
            ),
        ]
        .into_iter()
        .map(|(name, s)| (name.to_string(), s))
        .collect();
        let owner = (ConsumerScope::Department, Uuid::from_u128(5));
        let borrowed = borrowed_slots(&sources, owner);
        assert_eq!(
            borrowed,
            vec![
                BorrowedSlots {
                    consumer_scope: ConsumerScope::Chatroom,
                    consumer_id: Uuid::from_u128(7),
                    slot_names: vec!["A".into(), "C".into()],
                },
                BorrowedSlots {
                    consumer_scope: ConsumerScope::Company,
                    consumer_id: Uuid::from_u128(1),
                    slot_names: vec!["D".into()],
                },
            ]
        );
    }
}
