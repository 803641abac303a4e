//! Commands of the Table aggregate. Facts from outside (record counts, option usage,
//! the link target's placement) are looked up by the caller and passed in.

use super::views::ViewSpec;
use crate::tables::column::{ColumnChanges, ColumnDef, ColumnSpec, LinkFacts, OtherTable};
use crate::tables::grants::{Grant, Subject};
use crate::tables::policy::Targets;
use crate::tables::rule::ApprovalRule;
use crate::tables::scope::ScopeRef;
use crate::tables::trigger::Trigger;
use uuid::Uuid;

/// Commands of [`super::CustomTable`].
#[derive(Debug, Clone, PartialEq)]
pub enum TableCommand {
    /// Creates the table in its owning scope.
    Create {
        /// The new table's id.
        table_id: Uuid,
        /// Its company.
        company_id: Uuid,
        /// Its owning scope.
        scope: ScopeRef,
        /// Display name.
        name: String,
        /// Free text.
        description: Option<String>,
        /// The creator (`user:<id>`).
        created_by: String,
    },
    /// Renames the table, changes its description or its channel scope column.
    Update {
        /// New name.
        name: Option<String>,
        /// New description (`Some(None)` clears it).
        description: Option<Option<String>>,
        /// Department tables: the new channel scope column (internal key or display
        /// name; `Some(None)` clears it).
        channel_scope_column: Option<Option<String>>,
        /// New `settings.agent_writes_via_commands_only`.
        agent_writes_via_commands_only: Option<bool>,
    },
    /// Deletes the table and its records.
    Delete,
    /// Adds a column.
    AddColumn {
        /// The new column's internal key.
        key: String,
        /// The ColumnCreate.
        spec: ColumnSpec,
        /// The owning department of the table's chatroom (chatroom tables only).
        room_department: Option<Uuid>,
        /// The link target's placement, when it exists in the caller's company.
        link: Option<LinkFacts>,
        /// The columns of the table a rollup's or lookup's link column targets.
        link_targets: Vec<ColumnDef>,
        /// Other tables the column may read (the targets of the table's links, a
        /// lookup's fallback table).
        others: Vec<OtherTable>,
        /// Live records of the table now.
        live_records: i64,
        /// Id of the data migration, if one is needed.
        migration_id: Uuid,
    },
    /// Changes a column.
    UpdateColumn {
        /// The column.
        key: String,
        /// The ColumnUpdate.
        changes: ColumnChanges,
        /// Live records of the table now.
        live_records: i64,
        /// Live records using the options the change removes.
        option_usage: i64,
        /// Live records without a value in the column (checked when it becomes
        /// required).
        empty_cells: i64,
        /// Id of the data migration, if one is needed.
        migration_id: Uuid,
    },
    /// Deletes a column and its values.
    DeleteColumn {
        /// The column.
        key: String,
    },
    /// Runs a planned background migration and frees the table.
    CompleteMigration {
        /// The migration.
        migration_id: Uuid,
    },
    /// Saves a view.
    CreateView {
        /// The new view's id.
        view_id: Uuid,
        /// Its definition.
        spec: ViewSpec,
    },
    /// Replaces a view's definition.
    UpdateView {
        /// The view.
        view_id: Uuid,
        /// Its new definition.
        spec: ViewSpec,
    },
    /// Deletes a view.
    DeleteView {
        /// The view.
        view_id: Uuid,
    },
    /// Sets the grant of a subject (replacing its previous one).
    SetGrant {
        /// Who it is for.
        subject: Subject,
        /// What it gives.
        grant: Grant,
        /// Columns of the tables the table's link columns target (for link leaves
        /// of the row policy).
        targets: Targets,
    },
    /// Removes the grant of a subject.
    RevokeGrant {
        /// Who it was for.
        subject: Subject,
    },
    /// Lets social media clients reach the table through their grants, or not.
    SetClientAccess {
        /// Whether they may.
        enabled: bool,
    },
    /// Sets or clears the passphrase social media clients give (hashed by the
    /// caller); nothing happens when the hash is the one stored.
    SetClientPassphrase {
        /// The Argon2id hash (PHC string), or `None`.
        passphrase_hash: Option<String>,
    },
    /// Records that a social media client gave the passphrase (checked by the
    /// caller against the stored hash).
    UnlockClient {
        /// The client.
        client_id: Uuid,
    },
    /// Replaces the table's trigger set.
    SetTriggers {
        /// The whole set, as sent.
        triggers: Vec<Trigger>,
        /// Who saves it (`user:<id>`).
        saved_by: String,
    },
    /// Replaces the table's approval rules (their templates checked by the route).
    SetRules {
        /// The whole set, as sent.
        rules: Vec<ApprovalRule>,
    },
}
