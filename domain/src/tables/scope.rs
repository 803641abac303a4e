//! Ownership scopes (spec section 2, "Scopes and mounts") and the rule of which
//! tables a link may target.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The kind of owning scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScopeKind {
    /// A chatroom.
    Chatroom,
    /// A department.
    Department,
    /// The company.
    Company,
}

impl ScopeKind {
    /// The wire name (also the mount's path segment).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Chatroom => "chatroom",
            Self::Department => "department",
            Self::Company => "company",
        }
    }

    /// Parses a wire name.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "chatroom" => Some(Self::Chatroom),
            "department" => Some(Self::Department),
            "company" => Some(Self::Company),
            _ => None,
        }
    }
}

/// The scope that owns a table: its kind and id (the company id for company scope).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ScopeRef {
    /// Kind.
    pub kind: ScopeKind,
    /// Chatroom, department or company id.
    pub id: Uuid,
}

/// Where a table sits: its company, scope, and for a chatroom the room's department.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    /// The company.
    pub company_id: Uuid,
    /// The owning scope.
    pub scope: ScopeRef,
    /// The owning department of a chatroom scope, if any.
    pub room_department: Option<Uuid>,
}

/// Whether a link column of a table placed at `source` may target a table owned by
/// `target` in `target_company`: same company, and the source scope or an ancestor
/// (a chatroom table its own room, its room's department or the company; a
/// department table its own department or the company; a company table only the
/// company). Downward, sibling, unrelated-department and cross-company targets are
/// refused.
pub fn may_link(source: &Placement, target_company: Uuid, target: ScopeRef) -> bool {
    if source.company_id != target_company {
        return false;
    }
    match (source.scope.kind, target.kind) {
        (_, ScopeKind::Company) => target.id == source.company_id,
        (ScopeKind::Chatroom, ScopeKind::Chatroom)
        | (ScopeKind::Department, ScopeKind::Department) => target.id == source.scope.id,
        (ScopeKind::Chatroom, ScopeKind::Department) => source.room_department == Some(target.id),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COMPANY: Uuid = Uuid::from_u128(1);
    const DEPT: Uuid = Uuid::from_u128(2);
    const OTHER_DEPT: Uuid = Uuid::from_u128(3);
    const ROOM: Uuid = Uuid::from_u128(4);
    const SIBLING_ROOM: Uuid = Uuid::from_u128(5);

    fn at(kind: ScopeKind, id: Uuid) -> Placement {
        Placement {
            company_id: COMPANY,
            scope: ScopeRef { kind, id },
            room_department: (kind == ScopeKind::Chatroom).then_some(DEPT),
        }
    }

    fn scope(kind: ScopeKind, id: Uuid) -> ScopeRef {
        ScopeRef { kind, id }
    }

    #[test]
    fn upward_targets_only() {
        use ScopeKind::*;
        let room = at(Chatroom, ROOM);
        let dept = at(Department, DEPT);
        let company = at(Company, COMPANY);
        let rows = [
            (&room, scope(Chatroom, ROOM), true),
            (&room, scope(Department, DEPT), true),
            (&room, scope(Company, COMPANY), true),
            (&room, scope(Chatroom, SIBLING_ROOM), false),
            (&room, scope(Department, OTHER_DEPT), false),
            (&dept, scope(Department, DEPT), true),
            (&dept, scope(Company, COMPANY), true),
            (&dept, scope(Chatroom, ROOM), false),
            (&dept, scope(Department, OTHER_DEPT), false),
            (&company, scope(Company, COMPANY), true),
            (&company, scope(Department, DEPT), false),
            (&company, scope(Chatroom, ROOM), false),
        ];
        for (source, target, expected) in rows {
            assert_eq!(
                may_link(source, COMPANY, target),
                expected,
                "{source:?} -> {target:?}"
            );
        }
    }

    #[test]
    fn cross_company_is_refused() {
        let other = Uuid::from_u128(99);
        assert!(!may_link(
            &at(ScopeKind::Company, COMPANY),
            other,
            scope(ScopeKind::Company, other)
        ));
    }
}
