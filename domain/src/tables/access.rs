//! The permission ladder (spec section 2, "Effective permissions").
//!
//! Sources are tried in order — table manager, user, department, chatroom, default
//! grant — and the first that matches decides alone: it is not a union. Only the
//! chatroom step folds several grants (one per live room of the caller holding a
//! grant): it reads the union of their rows, inserts if any may, edits the union of
//! their editable rows and hides only the columns every one of them hides.

use super::grants::{EditMode, Grant, ReadMode};
use super::query::{Condition, Field, Op};
use serde::Serialize;
use serde_json::Value;
use uuid::Uuid;

/// The step of the ladder that decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// A table manager: everything, no filter, nothing hidden, no channel floor.
    TableManager,
    /// A grant for this user (or social media client).
    User,
    /// A grant for one of the caller's departments.
    Department,
    /// The grants of the caller's rooms, folded.
    Chatroom,
    /// The table's default grant.
    Default,
}

/// The grants that could apply to a caller, per step.
#[derive(Debug, Default)]
pub struct Candidates<'a> {
    /// The caller manages the table.
    pub manager: bool,
    /// The caller's own grant (user or social media client).
    pub user: Option<&'a Grant>,
    /// Grants of the caller's departments, oldest first (the oldest decides).
    pub departments: Vec<&'a Grant>,
    /// Grants of the caller's live rooms.
    pub chatrooms: Vec<(Uuid, &'a Grant)>,
    /// The default grant, present only for callers who enter the owning scope.
    pub default: Option<&'a Grant>,
}

/// What the ladder decided.
#[derive(Debug, Clone)]
pub struct Resolved<'a> {
    /// The deciding step.
    pub source: Source,
    /// Its grants (none for a table manager, several for folded rooms).
    pub grants: Vec<&'a Grant>,
    /// The rooms whose grants were folded.
    pub rooms: Vec<Uuid>,
}

/// Runs the ladder; `None` when no step matches (the table is not visible).
pub fn resolve<'a>(c: Candidates<'a>) -> Option<Resolved<'a>> {
    let single = |source, grant| Resolved {
        source,
        grants: vec![grant],
        rooms: Vec::new(),
    };
    if c.manager {
        return Some(Resolved {
            source: Source::TableManager,
            grants: Vec::new(),
            rooms: Vec::new(),
        });
    }
    if let Some(grant) = c.user {
        return Some(single(Source::User, grant));
    }
    if let Some(grant) = c.departments.first() {
        return Some(single(Source::Department, grant));
    }
    if !c.chatrooms.is_empty() {
        return Some(Resolved {
            source: Source::Chatroom,
            rooms: c.chatrooms.iter().map(|(room, _)| *room).collect(),
            grants: c.chatrooms.into_iter().map(|(_, grant)| grant).collect(),
        });
    }
    c.default.map(|grant| single(Source::Default, grant))
}

/// Rows created by the caller (`created_by` equals its reference).
pub fn own_rows(reference: &str) -> Condition {
    Condition::Test {
        field: Field::CreatedBy,
        op: Op::Eq,
        operands: vec![Value::String(reference.to_string())],
    }
}

/// `Or` without constants where they decide.
fn any_of(items: Vec<Condition>) -> Condition {
    if items.contains(&Condition::Const(Some(true))) {
        return Condition::Const(Some(true));
    }
    let mut rest: Vec<Condition> = items
        .into_iter()
        .filter(|c| *c != Condition::Const(Some(false)))
        .collect();
    match rest.len() {
        0 => Condition::Const(Some(false)),
        1 => rest.pop().unwrap_or(Condition::Const(Some(false))),
        _ => Condition::Or(rest),
    }
}

/// `And` of two conditions without constants where they decide.
pub fn both(a: Condition, b: Condition) -> Condition {
    match (a, b) {
        (Condition::Const(Some(true)), x) | (x, Condition::Const(Some(true))) => x,
        (Condition::Const(Some(false)), _) | (_, Condition::Const(Some(false))) => {
            Condition::Const(Some(false))
        }
        (a, b) => Condition::And(vec![a, b]),
    }
}

impl Resolved<'_> {
    /// The rows read: `own` is the caller's own-row test, `filter` compiles a grant's
    /// row policy for this read.
    pub fn read(&self, own: &Condition, filter: impl Fn(&Value) -> Condition) -> Condition {
        if self.source == Source::TableManager {
            return Condition::Const(Some(true));
        }
        any_of(
            self.grants
                .iter()
                .map(|g| grant_read(g, own, &filter))
                .collect(),
        )
    }

    /// The rows edited (and deleted): per grant its editable share of its read rows.
    pub fn edit(&self, own: &Condition, filter: impl Fn(&Value) -> Condition) -> Condition {
        if self.source == Source::TableManager {
            return Condition::Const(Some(true));
        }
        any_of(
            self.grants
                .iter()
                .map(|g| {
                    let edit = match g.can_edit {
                        EditMode::None => Condition::Const(Some(false)),
                        EditMode::All => Condition::Const(Some(true)),
                        EditMode::Own => own.clone(),
                    };
                    both(grant_read(g, own, &filter), edit)
                })
                .collect(),
        )
    }

    /// Whether records may be created.
    pub fn can_insert(&self) -> bool {
        self.source == Source::TableManager || self.grants.iter().any(|g| g.can_insert)
    }

    /// The read mode summarised over the folded grants.
    pub fn read_mode(&self) -> ReadMode {
        let modes: Vec<ReadMode> = self.grants.iter().map(|g| g.can_read).collect();
        if self.source == Source::TableManager || modes.contains(&ReadMode::All) {
            ReadMode::All
        } else if modes.iter().all(|m| *m == ReadMode::None) {
            ReadMode::None
        } else if modes
            .iter()
            .all(|m| matches!(m, ReadMode::Own | ReadMode::None))
        {
            ReadMode::Own
        } else {
            ReadMode::Filtered
        }
    }

    /// The edit mode summarised over the folded grants.
    pub fn edit_mode(&self) -> EditMode {
        let modes: Vec<EditMode> = self
            .grants
            .iter()
            .filter(|g| g.can_read != ReadMode::None)
            .map(|g| g.can_edit)
            .collect();
        if self.source == Source::TableManager || modes.contains(&EditMode::All) {
            EditMode::All
        } else if modes.contains(&EditMode::Own) {
            EditMode::Own
        } else {
            EditMode::None
        }
    }

    /// The row policy to report: the one filter, or `{or: [...]}` of several.
    pub fn row_filter(&self) -> Option<Value> {
        let filters: Vec<Value> = self
            .grants
            .iter()
            .filter_map(|g| g.row_filter.clone())
            .collect();
        match filters.len() {
            0 => None,
            1 => filters.into_iter().next(),
            _ => Some(serde_json::json!({ "or": filters })),
        }
    }

    /// Internal keys of the hidden columns: those every deciding grant that reads
    /// rows hides (a folded grant that reads nothing shows no column).
    pub fn hidden(&self) -> Vec<String> {
        let readers: Vec<&Grant> = self
            .grants
            .iter()
            .copied()
            .filter(|g| g.can_read != ReadMode::None)
            .collect();
        let deciding = if readers.is_empty() {
            self.grants.clone()
        } else {
            readers
        };
        let Some((first, rest)) = deciding.split_first() else {
            return Vec::new();
        };
        first
            .hidden_columns
            .iter()
            .filter(|key| rest.iter().all(|g| g.hidden_columns.contains(key)))
            .cloned()
            .collect()
    }
}

fn grant_read(g: &Grant, own: &Condition, filter: &impl Fn(&Value) -> Condition) -> Condition {
    match (g.can_read, &g.row_filter) {
        (ReadMode::All, _) => Condition::Const(Some(true)),
        (ReadMode::Own, _) => own.clone(),
        (ReadMode::Filtered, Some(policy)) => filter(policy),
        (ReadMode::Filtered, None) | (ReadMode::None, _) => Condition::Const(Some(false)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(read: ReadMode, edit: EditMode, hidden: &[&str]) -> Grant {
        Grant {
            can_read: read,
            can_insert: false,
            can_edit: edit,
            row_filter: None,
            hidden_columns: hidden.iter().map(|s| s.to_string()).collect(),
            scope_values: Vec::new(),
        }
    }

    #[test]
    fn the_first_matching_step_decides_alone() {
        let user = grant(ReadMode::Own, EditMode::None, &[]);
        let dept = grant(ReadMode::All, EditMode::All, &[]);
        let resolved = resolve(Candidates {
            user: Some(&user),
            departments: vec![&dept],
            ..Default::default()
        })
        .unwrap();
        assert_eq!(resolved.source, Source::User);
        assert_eq!(
            resolved.read_mode(),
            ReadMode::Own,
            "not a union with the department"
        );
        let manager = resolve(Candidates {
            manager: true,
            user: Some(&user),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(manager.source, Source::TableManager);
        assert!(resolve(Candidates::default()).is_none());
    }

    #[test]
    fn only_the_chatroom_step_folds() {
        let a = grant(ReadMode::Own, EditMode::Own, &["col_x", "col_y"]);
        let b = grant(ReadMode::Own, EditMode::None, &["col_y"]);
        let insert_only = grant(ReadMode::None, EditMode::None, &[]);
        let resolved = resolve(Candidates {
            chatrooms: vec![
                (Uuid::from_u128(1), &a),
                (Uuid::from_u128(2), &b),
                (Uuid::from_u128(3), &insert_only),
            ],
            ..Default::default()
        })
        .unwrap();
        assert_eq!(resolved.source, Source::Chatroom);
        assert_eq!(
            resolved.hidden(),
            vec!["col_y".to_string()],
            "a grant that reads nothing reveals no column"
        );
        let own = own_rows("user:x");
        assert_eq!(
            resolved.read(&own, |_| Condition::Const(None)),
            Condition::Or(vec![own.clone(), own])
        );
        assert_eq!(resolved.edit_mode(), EditMode::Own);
    }

    #[test]
    fn edit_stays_within_read() {
        let g = grant(ReadMode::Own, EditMode::All, &[]);
        let resolved = resolve(Candidates {
            default: Some(&g),
            ..Default::default()
        })
        .unwrap();
        let own = own_rows("user:x");
        assert_eq!(resolved.edit(&own, |_| Condition::Const(None)), own);
    }
}
