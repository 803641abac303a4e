//! The Table aggregate: decides schema changes, applies their events.

use super::commands::TableCommand;
use super::events::{MigrationInfo, TableEvent};
use super::views::ViewDef;
use crate::AggregateExt;
use crate::tables::column::{self, ColumnDef};
use crate::tables::formula;
use crate::tables::grants::{Grant, Subject};
use crate::tables::rule::{self, ApprovalRule};
use crate::tables::scope::{Placement, ScopeRef};
use crate::tables::trigger::{self, Trigger};
use crate::tables::{BACKGROUND_THRESHOLD, TableError};
use cqrs_es::Aggregate;
use cqrs_es::event_sink::EventSink;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// A custom table's schema.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CustomTable {
    /// The table, once created.
    pub table_id: Option<Uuid>,
    /// Its company.
    pub company_id: Uuid,
    /// Its owning scope.
    pub scope: Option<ScopeRef>,
    /// Display name.
    pub name: String,
    /// Free text.
    pub description: Option<String>,
    /// The creator (`user:<id>`).
    pub created_by: String,
    /// Columns in order.
    pub columns: Vec<ColumnDef>,
    /// Stored views.
    pub views: Vec<ViewDef>,
    /// The background migration holding the table.
    pub migration: Option<Uuid>,
    /// Whether the table was deleted.
    pub deleted: bool,
    /// Grants by subject, in the order they were first set.
    pub grants: Vec<(Subject, Grant)>,
    /// Social media clients may not reach the table.
    pub clients_refused: bool,
    /// The Argon2id hash of the passphrase social media clients give first.
    #[serde(default)]
    pub client_passphrase: Option<String>,
    /// The clients that gave the current passphrase.
    #[serde(default)]
    pub unlocked_clients: Vec<Uuid>,
    /// The channel scope column of a department table governed by a channel policy.
    pub channel_scope_column: Option<String>,
    /// Raw agent writes are refused (`settings.agent_writes_via_commands_only`).
    #[serde(default)]
    pub agent_writes_via_commands_only: bool,
    /// Its triggers.
    #[serde(default)]
    pub triggers: Vec<Trigger>,
    /// Its approval rules.
    #[serde(default)]
    pub rules: Vec<ApprovalRule>,
}

fn check_table_name(name: &str) -> Result<(), TableError> {
    if name.trim().is_empty() || name.chars().count() > 200 || name.chars().any(char::is_control) {
        return Err(TableError::TableConfig(
            "name must be 1..200 characters".into(),
        ));
    }
    Ok(())
}

fn check_description(description: &Option<String>) -> Result<(), TableError> {
    if description
        .as_ref()
        .is_some_and(|d| d.chars().count() > 2000)
    {
        return Err(TableError::TableConfig(
            "description must be at most 2000 characters".into(),
        ));
    }
    Ok(())
}

fn migration(migration_id: Uuid, live_records: i64) -> MigrationInfo {
    MigrationInfo {
        migration_id,
        background: live_records > BACKGROUND_THRESHOLD,
        estimated_records: live_records,
    }
}

impl CustomTable {
    /// The column with this internal key.
    pub fn column(&self, key: &str) -> Option<&ColumnDef> {
        self.columns.iter().find(|c| c.key == key)
    }

    fn live(&self) -> Result<Uuid, TableError> {
        match self.table_id {
            Some(id) if !self.deleted => Ok(id),
            _ => Err(TableError::NotFound("table")),
        }
    }

    /// Refuses schema changes while a background migration holds the table.
    fn unlocked(&self) -> Result<Uuid, TableError> {
        let id = self.live()?;
        match self.migration {
            Some(migration) => Err(TableError::MigrationInProgress(migration)),
            None => Ok(id),
        }
    }

    /// Refuses to delete or retype a column that computed columns or triggers read.
    fn refuse_dependents(&self, key: &str) -> Result<(), TableError> {
        let dependents = formula::dependents(&self.columns, key);
        if !dependents.is_empty() {
            return Err(TableError::ColumnInComputed(dependents));
        }
        let triggers: Vec<String> = self
            .triggers
            .iter()
            .filter(|t| t.reads(key))
            .map(|t| t.id.clone())
            .collect();
        if !triggers.is_empty() {
            return Err(TableError::ColumnInTrigger(triggers));
        }
        Ok(())
    }

    fn decide(&self, command: TableCommand) -> Result<Vec<TableEvent>, TableError> {
        use TableEvent as E;
        Ok(match command {
            TableCommand::Create {
                table_id,
                company_id,
                scope,
                name,
                description,
                created_by,
            } => {
                if self.table_id.is_some() {
                    return Ok(vec![]);
                }
                check_table_name(&name)?;
                check_description(&description)?;
                vec![E::TableCreated {
                    table_id,
                    company_id,
                    scope,
                    name,
                    description,
                    created_by,
                }]
            }
            TableCommand::Update {
                name,
                description,
                channel_scope_column,
                agent_writes_via_commands_only,
            } => {
                let table_id = self.live()?;
                let name = name.unwrap_or_else(|| self.name.clone());
                let description = description.unwrap_or_else(|| self.description.clone());
                check_table_name(&name)?;
                check_description(&description)?;
                let scope_column = channel_scope_column
                    .map(|column| self.channel_scope(column))
                    .transpose()?;
                let mut events = Vec::new();
                if name != self.name || description != self.description {
                    events.push(E::TableUpdated {
                        table_id,
                        name,
                        description,
                    });
                }
                if let Some(column) = scope_column.filter(|c| *c != self.channel_scope_column) {
                    events.push(E::ChannelScopeSet { table_id, column });
                }
                if let Some(governed) = agent_writes_via_commands_only
                    .filter(|g| *g != self.agent_writes_via_commands_only)
                {
                    events.push(E::SettingsSet {
                        table_id,
                        agent_writes_via_commands_only: governed,
                    });
                }
                events
            }
            TableCommand::Delete => vec![E::TableDeleted {
                table_id: self.unlocked()?,
            }],
            TableCommand::AddColumn {
                key,
                spec,
                room_department,
                link,
                link_targets,
                others,
                live_records,
                migration_id,
            } => {
                let table_id = self.unlocked()?;
                let placement = Placement {
                    company_id: self.company_id,
                    scope: self.scope.ok_or(TableError::NotFound("table"))?,
                    room_department,
                };
                if self.column(&key).is_some() {
                    return Err(TableError::config("column key collision; retry"));
                }
                let around = column::Surroundings {
                    existing: &self.columns,
                    table_id,
                    placement: &placement,
                    link,
                    link_targets: &link_targets,
                    others: &others,
                };
                let column = column::build_column(key, spec, &around)?;
                let fill = column.default_value.clone().filter(|_| live_records > 0);
                if column.required && fill.is_none() && live_records > 0 {
                    return Err(TableError::DefaultNeeded(live_records));
                }
                let migration = fill.as_ref().map(|_| migration(migration_id, live_records));
                vec![E::ColumnAdded {
                    table_id,
                    column,
                    fill,
                    migration,
                }]
            }
            TableCommand::UpdateColumn {
                key,
                changes,
                live_records,
                option_usage,
                empty_cells,
                migration_id,
            } => {
                let table_id = self.unlocked()?;
                let current = self.column(&key).ok_or(TableError::NotFound("column"))?;
                let updated = column::apply_changes(current, changes, &self.columns)?;
                if updated.column.required && !current.required && empty_cells > 0 {
                    return Err(TableError::RequiredButEmpty(empty_cells));
                }
                if !updated.removed_options.is_empty() && option_usage > 0 {
                    return Err(TableError::OptionInUse {
                        options: updated.removed_options,
                        count: option_usage,
                    });
                }
                let mut events = Vec::new();
                if updated.type_change.is_some() {
                    self.refuse_dependents(&key)?;
                    events.push(E::ColumnTypeChanged {
                        table_id,
                        from: Box::new(current.clone()),
                        column: updated.column,
                        migration: migration(migration_id, live_records),
                    });
                    return Ok(events);
                }
                if !updated.renames.is_empty() {
                    events.push(E::ColumnOptionsRenamed {
                        table_id,
                        key: key.clone(),
                        renames: updated.renames,
                        migration: migration(migration_id, live_records),
                    });
                }
                if updated.column != *current {
                    events.push(E::ColumnUpdated {
                        table_id,
                        column: updated.column,
                    });
                }
                events
            }
            TableCommand::DeleteColumn { key } => {
                let table_id = self.unlocked()?;
                self.column(&key).ok_or(TableError::NotFound("column"))?;
                // A published view must never widen silently: a view that filters,
                // sorts or projects by the column keeps it alive.
                let users: Vec<String> = self
                    .views
                    .iter()
                    .filter(|v| v.uses(&key))
                    .map(|v| v.name.clone())
                    .collect();
                if !users.is_empty() {
                    return Err(TableError::ColumnInView(users));
                }
                if self.channel_scope_column.as_deref() == Some(key.as_str()) {
                    return Err(TableError::ChannelScopeColumn);
                }
                self.refuse_dependents(&key)?;
                vec![E::ColumnDeleted { table_id, key }]
            }
            TableCommand::CompleteMigration { migration_id } => {
                let table_id = self.live()?;
                if self.migration != Some(migration_id) {
                    return Ok(vec![]);
                }
                vec![E::MigrationCompleted {
                    table_id,
                    migration_id,
                }]
            }
            TableCommand::CreateView { view_id, spec } => {
                let table_id = self.live()?;
                let view = spec.resolve(view_id, &self.columns)?;
                vec![E::ViewCreated { table_id, view }]
            }
            TableCommand::UpdateView { view_id, spec } => {
                let table_id = self.live()?;
                if !self.views.iter().any(|v| v.id == view_id) {
                    return Err(TableError::NotFound("view"));
                }
                let view = spec.resolve(view_id, &self.columns)?;
                vec![E::ViewUpdated { table_id, view }]
            }
            TableCommand::DeleteView { view_id } => {
                let table_id = self.live()?;
                if !self.views.iter().any(|v| v.id == view_id) {
                    return Err(TableError::NotFound("view"));
                }
                vec![E::ViewDeleted { table_id, view_id }]
            }
            TableCommand::SetGrant {
                subject,
                grant,
                targets,
            } => {
                let table_id = self.live()?;
                let grant = grant.checked(&subject, &self.columns, &targets)?;
                if self.grant(&subject) == Some(&grant) {
                    return Ok(vec![]);
                }
                vec![E::GrantSet {
                    table_id,
                    subject,
                    grant,
                }]
            }
            TableCommand::RevokeGrant { subject } => {
                let table_id = self.live()?;
                self.grant(&subject).ok_or(TableError::NotFound("grant"))?;
                vec![E::GrantRevoked { table_id, subject }]
            }
            TableCommand::SetClientAccess { enabled } => {
                let table_id = self.live()?;
                if enabled != self.clients_refused {
                    return Ok(vec![]);
                }
                vec![E::ClientAccessSet { table_id, enabled }]
            }
            TableCommand::SetClientPassphrase { passphrase_hash } => {
                let table_id = self.live()?;
                if passphrase_hash == self.client_passphrase {
                    return Ok(vec![]);
                }
                vec![E::ClientPassphraseSet {
                    table_id,
                    passphrase_hash,
                }]
            }
            TableCommand::UnlockClient { client_id } => {
                let table_id = self.live()?;
                if self.client_passphrase.is_none() {
                    return Err(TableError::NotFound("passphrase"));
                }
                if self.unlocked_clients.contains(&client_id) {
                    return Ok(vec![]);
                }
                vec![E::ClientUnlocked {
                    table_id,
                    client_id,
                }]
            }
            TableCommand::SetTriggers { triggers, saved_by } => {
                let table_id = self.live()?;
                let triggers = trigger::check(triggers, &self.columns, &self.triggers)?;
                if triggers == self.triggers {
                    return Ok(vec![]);
                }
                vec![E::TriggersSet {
                    table_id,
                    triggers,
                    saved_by,
                }]
            }
            TableCommand::SetRules { rules } => {
                let table_id = self.live()?;
                let rules = rule::check(rules)?;
                if rules == self.rules {
                    return Ok(vec![]);
                }
                vec![E::RulesSet { table_id, rules }]
            }
        })
    }
}

impl Aggregate for CustomTable {
    const TYPE: &'static str = "custom_table";
    type Command = TableCommand;
    type Event = TableEvent;
    type Error = TableError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _: &(),
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        for event in self.decide(command)? {
            sink.write(event, self).await;
        }
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        self.fold(event);
    }
}

impl AggregateExt for CustomTable {}

mod fold;
mod state;

#[cfg(test)]
mod tests;
