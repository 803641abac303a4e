//! The access gates of spec section 5, as data plus one function.
//!
//! Facts about the caller and the owning scope ([`Standing`]) come from the
//! directory read models and, for the table-level gates (`TableRead`,
//! `TableInsert`, `TableEdit`), from the caller's effective permission (the ladder
//! of [`super::access`]); [`GATES`] says which gate each operation needs in each
//! scope; [`allows`] decides.

use domain::tables::scope::ScopeKind;

/// What the caller is in the owning scope and the table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Standing {
    /// The caller is a user (not a social media client).
    pub user: bool,
    /// A user with role 3 or higher.
    pub company_manager: bool,
    /// Member of the live room, or of the department.
    pub member: bool,
    /// Manager of the room, or of the department.
    pub manager: bool,
    /// Manager of the room's department (chatroom scope).
    pub room_department_manager: bool,
    /// Created the table.
    pub table_creator: bool,
    /// Its effective permission reads rows.
    pub read: bool,
    /// Its effective permission inserts rows.
    pub insert: bool,
    /// Its effective permission edits rows.
    pub edit: bool,
}

/// A gate of spec section 5.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// ChatRoomJoinedRequired: member of the live room.
    ChatRoomJoined,
    /// ChatRoomAccessRequired: room manager, its department's manager or a company
    /// manager.
    ChatRoomAccess,
    /// DepartmentAccessRequired: member or manager of the department, or a company
    /// manager.
    DepartmentAccess,
    /// CompanyAccessRequired: any user of the company.
    CompanyAccess,
    /// CustomTableAccessRequired: entry to the table's owning scope.
    TableAccess,
    /// CustomTableReadRequired.
    TableRead,
    /// CustomTableInsertRequired.
    TableInsert,
    /// CustomTableEditRequired (the row-level `can_edit` is decided per record).
    TableEdit,
    /// CustomTableWriteRequired: inserts or edits rows (the attachment router).
    TableWrite,
    /// CustomTableModeratorRequired: the table's creator, a company manager or the
    /// owning scope's manager.
    TableModerator,
    /// A company manager or the owning scope's manager: a moderator of every table
    /// of the scope.
    ScopeManager,
}

/// An operation of spec section 5.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// List or create tables.
    ListOrCreateTables,
    /// Read rows (and views).
    ReadRows,
    /// Read a table's details (entry to its owning scope, or a grant that reads).
    ReadTable,
    /// Insert rows.
    InsertRows,
    /// Edit or delete rows.
    EditRows,
    /// List columns.
    ListColumns,
    /// Create a column.
    CreateColumn,
    /// Preview, update, delete or PUT a column.
    ManageColumns,
    /// Rename or delete the table, manage its views (a moderator decision of this
    /// service; the spec does not list them).
    ManageTable,
    /// Mint, list and revoke public read tokens.
    PublishTokens,
    /// Upload attachment files (the shared attachment router's writes).
    WriteBlobs,
    /// Deploy the scope's tables declaratively (export, plan, apply, state) and
    /// create its table tags (a decision of this service: the scope's managers, who
    /// moderate every table of the scope).
    ManageScope,
}

/// Gates per operation, for (chatroom, department, company); any one of a cell's
/// gates suffices.
pub const GATES: &[(Operation, [&[Gate]; 3])] = {
    use Gate::*;
    use Operation::*;
    &[
        (
            ListOrCreateTables,
            [
                &[ChatRoomJoined, ChatRoomAccess],
                &[DepartmentAccess],
                &[CompanyAccess],
            ],
        ),
        (ReadRows, [&[TableRead], &[TableRead], &[TableRead]]),
        (
            ReadTable,
            [
                &[TableAccess, TableRead],
                &[TableAccess, TableRead],
                &[TableAccess, TableRead],
            ],
        ),
        (InsertRows, [&[TableInsert], &[TableInsert], &[TableInsert]]),
        (EditRows, [&[TableEdit], &[TableEdit], &[TableEdit]]),
        (
            ListColumns,
            [&[ChatRoomJoined], &[TableAccess], &[TableAccess]],
        ),
        (
            CreateColumn,
            [&[TableModerator], &[TableAccess], &[TableModerator]],
        ),
        (
            ManageColumns,
            [&[TableModerator], &[TableModerator], &[TableModerator]],
        ),
        (
            ManageTable,
            [&[TableModerator], &[TableModerator], &[TableModerator]],
        ),
        (
            PublishTokens,
            [&[TableModerator], &[TableModerator], &[TableModerator]],
        ),
        (WriteBlobs, [&[TableWrite], &[TableWrite], &[TableWrite]]),
        (
            ManageScope,
            [&[ScopeManager], &[ScopeManager], &[ScopeManager]],
        ),
    ]
};

fn index(kind: ScopeKind) -> usize {
    match kind {
        ScopeKind::Chatroom => 0,
        ScopeKind::Department => 1,
        ScopeKind::Company => 2,
    }
}

/// Entry to the owning scope: what a caller must hold to see anything in it.
pub fn entry(kind: ScopeKind, s: &Standing) -> bool {
    GATES[0].1[index(kind)].iter().any(|g| gate(*g, kind, s))
}

/// Whether the caller is a table manager (moderator).
pub fn moderator(kind: ScopeKind, s: &Standing) -> bool {
    gate(Gate::TableModerator, kind, s)
}

fn gate(g: Gate, kind: ScopeKind, s: &Standing) -> bool {
    match g {
        Gate::ChatRoomJoined => s.member,
        Gate::ChatRoomAccess => s.manager || s.room_department_manager || s.company_manager,
        Gate::DepartmentAccess => s.member || s.manager || s.company_manager,
        Gate::CompanyAccess => s.user,
        Gate::TableAccess => entry(kind, s),
        Gate::TableRead => s.read,
        Gate::TableInsert => s.insert,
        Gate::TableEdit => s.edit,
        Gate::TableWrite => s.insert || s.edit,
        Gate::ScopeManager => {
            entry(kind, s) && (s.company_manager || (kind != ScopeKind::Company && s.manager))
        }
        Gate::TableModerator => {
            entry(kind, s)
                && (s.table_creator
                    || s.company_manager
                    || (kind != ScopeKind::Company && s.manager))
        }
    }
}

/// Whether the caller may perform the operation in a scope of this kind.
pub fn allows(operation: Operation, kind: ScopeKind, s: &Standing) -> bool {
    GATES
        .iter()
        .find(|(op, _)| *op == operation)
        .is_some_and(|(_, cells)| cells[index(kind)].iter().any(|g| gate(*g, kind, s)))
}

#[cfg(test)]
mod tests;
