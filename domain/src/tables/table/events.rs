//! Events of the Table aggregate. Each carries the table id and everything the
//! records read model needs, including the conversion a migration applies, so a
//! replay of the log reproduces the migrated data exactly.

use super::views::ViewDef;
use crate::tables::column::ColumnDef;
use crate::tables::grants::{Grant, Subject};
use crate::tables::rule::ApprovalRule;
use crate::tables::scope::ScopeRef;
use crate::tables::trigger::Trigger;
use cqrs_es::DomainEvent;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use uuid::Uuid;

/// A data migration of a column. A background one only plans the data change; the
/// rows are rewritten when its `MigrationCompleted` is applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MigrationInfo {
    /// Globally unique id.
    pub migration_id: Uuid,
    /// Whether it holds the table until a `MigrationCompleted`.
    pub background: bool,
    /// Live records when it started.
    pub estimated_records: i64,
}

/// Events of [`super::CustomTable`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum TableEvent {
    /// A table exists.
    TableCreated {
        /// The table.
        table_id: Uuid,
        /// Its company.
        company_id: Uuid,
        /// Its owning scope.
        scope: ScopeRef,
        /// Display name.
        name: String,
        /// Free text.
        description: Option<String>,
        /// The creator.
        created_by: String,
    },
    /// Name or description changed.
    TableUpdated {
        /// The table.
        table_id: Uuid,
        /// Display name.
        name: String,
        /// Free text.
        description: Option<String>,
    },
    /// The table and its records are gone.
    TableDeleted {
        /// The table.
        table_id: Uuid,
    },
    /// A column was added; `fill` is written into every existing row.
    ColumnAdded {
        /// The table.
        table_id: Uuid,
        /// The column.
        column: ColumnDef,
        /// The default applied to existing rows.
        fill: Option<Value>,
        /// The data migration writing `fill`.
        migration: Option<MigrationInfo>,
    },
    /// Settings of a column changed (name, description, required, default,
    /// max_length, options); no data moves.
    ColumnUpdated {
        /// The table.
        table_id: Uuid,
        /// The new definition.
        column: ColumnDef,
    },
    /// A column changed type: every row's value is converted by the rule of
    /// (`from.column_type`, `column.column_type`); values that do not convert become
    /// empty.
    ColumnTypeChanged {
        /// The table.
        table_id: Uuid,
        /// The definition before.
        from: Box<ColumnDef>,
        /// The definition after.
        column: ColumnDef,
        /// The data migration.
        migration: MigrationInfo,
    },
    /// Select options were renamed: every live cell is rewritten.
    ColumnOptionsRenamed {
        /// The table.
        table_id: Uuid,
        /// The column.
        key: String,
        /// Old to new.
        renames: BTreeMap<String, String>,
        /// The data migration.
        migration: MigrationInfo,
    },
    /// A column and its values are gone.
    ColumnDeleted {
        /// The table.
        table_id: Uuid,
        /// The column.
        key: String,
    },
    /// A background migration runs now: the read model applies the data change
    /// its starting event planned (at this position in the log), and the table is
    /// free again.
    MigrationCompleted {
        /// The table.
        table_id: Uuid,
        /// The migration.
        migration_id: Uuid,
    },
    /// A view was saved.
    ViewCreated {
        /// The table.
        table_id: Uuid,
        /// The view.
        view: ViewDef,
    },
    /// A view was changed.
    ViewUpdated {
        /// The table.
        table_id: Uuid,
        /// The view.
        view: ViewDef,
    },
    /// A view was deleted.
    ViewDeleted {
        /// The table.
        table_id: Uuid,
        /// The view.
        view_id: Uuid,
    },
    /// A subject's grant was set (replacing its previous one).
    GrantSet {
        /// The table.
        table_id: Uuid,
        /// Who it is for.
        subject: Subject,
        /// What it gives.
        grant: Grant,
    },
    /// A subject's grant was removed.
    GrantRevoked {
        /// The table.
        table_id: Uuid,
        /// Who it was for.
        subject: Subject,
    },
    /// Social media clients may (or may no longer) reach the table.
    ClientAccessSet {
        /// The table.
        table_id: Uuid,
        /// Whether they may.
        enabled: bool,
    },
    /// Social media clients must (or no longer must) give a passphrase before they
    /// reach the table; a new passphrase locks every client out again.
    ClientPassphraseSet {
        /// The table.
        table_id: Uuid,
        /// The passphrase's Argon2id hash (PHC string), or `None`: no passphrase.
        passphrase_hash: Option<String>,
    },
    /// A social media client gave the table's passphrase.
    ClientUnlocked {
        /// The table.
        table_id: Uuid,
        /// The client.
        client_id: Uuid,
    },
    /// The channel scope column of a department table changed.
    ChannelScopeSet {
        /// The table.
        table_id: Uuid,
        /// Internal key of the column, or `None`: the table is no longer governed.
        column: Option<String>,
    },
    /// The table's settings changed (spec `custom-tables.md` 5.8.4:
    /// `settings.agent_writes_via_commands_only`).
    SettingsSet {
        /// The table.
        table_id: Uuid,
        /// Raw agent writes are refused (`table_governed_by_commands`); agents and
        /// runs write through Commands only.
        agent_writes_via_commands_only: bool,
    },
    /// The table's trigger set was replaced (a trigger missing from it is deleted).
    TriggersSet {
        /// The table.
        table_id: Uuid,
        /// The whole set, checked, columns by internal key.
        triggers: Vec<Trigger>,
        /// Who saved it (`user:<id>`): the author of the triggers it adds or
        /// changes, whose actions act as them; a trigger it leaves as it was keeps
        /// its author.
        #[serde(default)]
        saved_by: String,
    },
    /// The table's approval rules were replaced.
    RulesSet {
        /// The table.
        table_id: Uuid,
        /// The whole set, checked.
        rules: Vec<ApprovalRule>,
    },
}

impl DomainEvent for TableEvent {
    fn event_type(&self) -> String {
        match self {
            Self::TableCreated { .. } => "TableCreated",
            Self::TableUpdated { .. } => "TableUpdated",
            Self::TableDeleted { .. } => "TableDeleted",
            Self::ColumnAdded { .. } => "ColumnAdded",
            Self::ColumnUpdated { .. } => "ColumnUpdated",
            Self::ColumnTypeChanged { .. } => "ColumnTypeChanged",
            Self::ColumnOptionsRenamed { .. } => "ColumnOptionsRenamed",
            Self::ColumnDeleted { .. } => "ColumnDeleted",
            Self::MigrationCompleted { .. } => "MigrationCompleted",
            Self::ViewCreated { .. } => "ViewCreated",
            Self::ViewUpdated { .. } => "ViewUpdated",
            Self::ViewDeleted { .. } => "ViewDeleted",
            Self::GrantSet { .. } => "GrantSet",
            Self::GrantRevoked { .. } => "GrantRevoked",
            Self::ClientAccessSet { .. } => "ClientAccessSet",
            Self::ClientPassphraseSet { .. } => "ClientPassphraseSet",
            Self::ClientUnlocked { .. } => "ClientUnlocked",
            Self::ChannelScopeSet { .. } => "ChannelScopeSet",
            Self::SettingsSet { .. } => "SettingsSet",
            Self::TriggersSet { .. } => "TriggersSet",
            Self::RulesSet { .. } => "RulesSet",
        }
        .into()
    }
    fn event_version(&self) -> String {
        "1".into()
    }
}

impl TableEvent {
    /// The table the event belongs to.
    pub fn table_id(&self) -> Uuid {
        match self {
            Self::TableCreated { table_id, .. }
            | Self::TableUpdated { table_id, .. }
            | Self::TableDeleted { table_id }
            | Self::ColumnAdded { table_id, .. }
            | Self::ColumnUpdated { table_id, .. }
            | Self::ColumnTypeChanged { table_id, .. }
            | Self::ColumnOptionsRenamed { table_id, .. }
            | Self::ColumnDeleted { table_id, .. }
            | Self::MigrationCompleted { table_id, .. }
            | Self::ViewCreated { table_id, .. }
            | Self::ViewUpdated { table_id, .. }
            | Self::ViewDeleted { table_id, .. }
            | Self::GrantSet { table_id, .. }
            | Self::GrantRevoked { table_id, .. }
            | Self::ClientAccessSet { table_id, .. }
            | Self::ClientPassphraseSet { table_id, .. }
            | Self::ClientUnlocked { table_id, .. }
            | Self::ChannelScopeSet { table_id, .. }
            | Self::SettingsSet { table_id, .. }
            | Self::TriggersSet { table_id, .. }
            | Self::RulesSet { table_id, .. } => *table_id,
        }
    }
}
