//! How each event of the Table aggregate changes its state.

use super::CustomTable;
use crate::tables::table::TableEvent;

impl CustomTable {
    /// Applies one event to the state.
    pub(super) fn fold(&mut self, event: TableEvent) {
        use TableEvent as E;
        match event {
            E::TableCreated {
                table_id,
                company_id,
                scope,
                name,
                description,
                created_by,
            } => {
                self.table_id = Some(table_id);
                self.company_id = company_id;
                self.scope = Some(scope);
                self.name = name;
                self.description = description;
                self.created_by = created_by;
            }
            E::TableUpdated {
                name, description, ..
            } => {
                self.name = name;
                self.description = description;
            }
            E::TableDeleted { .. } => self.deleted = true,
            E::ColumnAdded {
                column, migration, ..
            } => {
                self.columns.push(column);
                self.hold(migration.as_ref());
            }
            E::ColumnUpdated { column, .. } => self.replace(column),
            E::ColumnTypeChanged {
                column, migration, ..
            } => {
                self.replace(column);
                self.hold(Some(&migration));
            }
            E::ColumnOptionsRenamed { migration, .. } => self.hold(Some(&migration)),
            E::ColumnDeleted { key, .. } => self.columns.retain(|c| c.key != key),
            E::MigrationCompleted { .. } => self.migration = None,
            E::ViewCreated { view, .. } => self.views.push(view),
            E::ViewUpdated { view, .. } => {
                if let Some(slot) = self.views.iter_mut().find(|v| v.id == view.id) {
                    *slot = view;
                }
            }
            E::ViewDeleted { view_id, .. } => self.views.retain(|v| v.id != view_id),
            E::GrantSet { subject, grant, .. } => {
                match self.grants.iter_mut().find(|(s, _)| *s == subject) {
                    Some(slot) => slot.1 = grant,
                    None => self.grants.push((subject, grant)),
                }
            }
            E::GrantRevoked { subject, .. } => self.grants.retain(|(s, _)| *s != subject),
            E::ClientAccessSet { enabled, .. } => self.clients_refused = !enabled,
            E::ClientPassphraseSet {
                passphrase_hash, ..
            } => {
                self.client_passphrase = passphrase_hash;
                self.unlocked_clients.clear();
            }
            E::ClientUnlocked { client_id, .. } => self.unlocked_clients.push(client_id),
            E::ChannelScopeSet { column, .. } => self.channel_scope_column = column,
            E::SettingsSet {
                agent_writes_via_commands_only,
                ..
            } => self.agent_writes_via_commands_only = agent_writes_via_commands_only,
            E::TriggersSet { triggers, .. } => self.triggers = triggers,
            E::RulesSet { rules, .. } => self.rules = rules,
        }
    }
}
