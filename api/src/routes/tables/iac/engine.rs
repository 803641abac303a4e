//! The engine behind plan and apply: a scope's tables loaded from the log, a
//! document's changes decided on copies in memory by the Table aggregate itself
//! (the checks of every REST route), and, for apply, every event of every table
//! appended in one statement with the deployment's own.
//!
//! Plan and apply run the same steps (`steps.rs`), so a plan without errors is
//! exactly what the apply writes.

use super::document::{Document, PlanError, Row};
use super::identity::Identities;
use crate::error::{ApiError, ApiResult};
use crate::request::Caller;
use crate::routes::tables::column_sources::{Stored, Tables};
use domain::error::Code;
use domain::tables::column::{ColumnDef, LinkFacts};
use domain::tables::command::TableOperation;
use domain::tables::deployment::{DeployedResource, Deployment, DeploymentCommand, deployment_id};
use domain::tables::policy::Targets;
use domain::tables::public_token::PublicReadToken;
use domain::tables::scope::ScopeRef;
use domain::tables::table::{CustomTable, TableCommand, TableEvent};
use domain::tables::tag::TableTag;
use projections::read_models::public_tokens::query::{self as public_tokens, PublicTokenRow};
use projections::read_models::table_commands::query::{CommandRow, table_commands};
use projections::read_models::tables::query as tables;
use projections::store::{Batch, CommandError, Working};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

/// What a change does to a resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = DeploymentAction)]
pub enum Action {
    /// It does not exist yet.
    Create,
    /// It changes in place.
    Update,
    /// It is deleted and created again (its data goes).
    Replace,
    /// It goes.
    Delete,
}

/// Data a change would drop.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(as = DeploymentLoss)]
pub struct Loss {
    /// Records affected (an upper bound where `what` says so).
    pub records: i64,
    /// What they lose.
    pub what: String,
}

/// One change of a plan.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(as = DeploymentChange)]
pub struct Change {
    /// What happens.
    pub action: Action,
    /// The row kind.
    pub kind: &'static str,
    /// The row's ref.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The ref of its table.
    pub table: String,
    /// The resource's id, when it exists.
    pub resource_id: Option<String>,
    /// The fields that change (updates and replaces).
    pub fields: Vec<String>,
    /// The data it drops.
    pub loses: Option<Loss>,
}

/// A table being deployed.
pub struct Slot {
    /// The table's id.
    pub id: Uuid,
    /// Its copy with the changes decided so far.
    pub working: Working<CustomTable>,
    /// Live records now (0 for a new table).
    pub records: i64,
    /// Its ref in the document (none for an unmanaged table it does not name).
    pub reference: Option<String>,
}

/// The state of one plan or apply.
pub struct Engine<'a> {
    /// Who deploys.
    pub caller: &'a Caller,
    /// The scope.
    pub scope: ScopeRef,
    /// The room's department (chatroom scope).
    pub room_department: Option<Uuid>,
    /// The system.
    pub system: String,
    /// Principals by name.
    pub ids: Identities,
    /// The scope's tables, existing first.
    pub slots: Vec<Slot>,
    /// What the system managed before.
    pub deployment: Working<Deployment>,
    /// The system's tag in the scope, when it has one (or the document makes one).
    pub tag: Option<Working<TableTag>>,
    /// The Commands of the scope's tables as they stand.
    pub commands: Vec<CommandRow>,
    /// The Commands the document defines or changes.
    pub operations: Vec<Working<TableOperation>>,
    /// The public read tokens of the scope's tables as they stand.
    pub tokens: Vec<PublicTokenRow>,
    /// The tokens the document mints or revokes.
    pub token_ops: Vec<Working<PublicReadToken>>,
    /// The document.
    pub document: Document,
    /// The changes decided, in order.
    pub changes: Vec<Change>,
    /// Everything that stops the apply.
    pub errors: Vec<PlanError>,
    /// What the system manages after.
    pub resources: Vec<DeployedResource>,
}

fn store_error<E: std::error::Error>(e: CommandError<E>) -> ApiError {
    ApiError::internal(anyhow::anyhow!(e.to_string()))
}

impl<'a> Engine<'a> {
    /// Loads the scope's tables and the system's deployment.
    pub async fn load(
        caller: &'a Caller,
        scope: ScopeRef,
        room_department: Option<Uuid>,
        system: &str,
        document: Document,
        errors: Vec<PlanError>,
        tag: Option<Working<TableTag>>,
    ) -> ApiResult<Self> {
        let state = &caller.state;
        let company = caller.principal.company_id;
        let rows = tables::scope_tables(&state.pool, company, scope, false, 0, i64::MAX).await?;
        let mut slots = Vec::with_capacity(rows.len());
        for row in rows {
            let working = state
                .bus
                .open::<CustomTable>(&row.id.to_string())
                .await
                .map_err(store_error)?;
            slots.push(Slot {
                id: row.id,
                working,
                records: row.record_count,
                reference: None,
            });
        }
        let deployment = state
            .bus
            .open::<Deployment>(&deployment_id(scope, system))
            .await
            .map_err(store_error)?;
        let ids: Vec<Uuid> = slots.iter().map(|s| s.id).collect();
        let commands = table_commands(&state.pool, &ids).await?;
        let tokens = public_tokens::of_tables(&state.pool, &ids).await?;
        Ok(Self {
            tag,
            commands,
            operations: Vec::new(),
            tokens,
            token_ops: Vec::new(),
            caller,
            scope,
            room_department,
            system: system.to_string(),
            ids: Identities::load(&state.pool, company).await?,
            slots,
            deployment,
            document,
            changes: Vec::new(),
            errors,
            resources: Vec::new(),
        })
    }

    /// The slot of a table.
    pub fn slot(&self, id: Uuid) -> Option<&Slot> {
        self.slots.iter().find(|s| s.id == id)
    }

    /// The table id of a document table ref.
    pub fn table_id(&self, reference: &str) -> Option<Uuid> {
        self.slots
            .iter()
            .find(|s| s.reference.as_deref() == Some(reference))
            .map(|s| s.id)
    }

    /// The managed resource of a kind with a ref (before this apply).
    pub fn managed(&self, kind: &str, reference: &str) -> Option<&DeployedResource> {
        self.deployment.state().find(kind, reference)
    }

    /// Whether a resource of a table was managed (under any ref).
    pub fn is_managed(&self, kind: &str, table: Uuid, resource_id: &str) -> bool {
        self.deployment
            .state()
            .reference_of(kind, table, resource_id)
            .is_some()
    }

    /// Records an error of a row.
    pub fn error(&mut self, line: Option<usize>, reference: &str, message: impl Into<String>) {
        self.errors.push(PlanError {
            line,
            reference: Some(reference.to_string()),
            message: message.into(),
        });
    }

    /// A filter of the document with the tokens among its principal operands
    /// resolved against the table's columns: `None` when one does not resolve (an
    /// error of the row, noted when `report`).
    pub fn filter(
        &mut self,
        table: Uuid,
        node: Option<&serde_json::Value>,
        line: Option<usize>,
        reference: &str,
        report: bool,
    ) -> Option<Option<serde_json::Value>> {
        let Some(node) = node else {
            return Some(None);
        };
        let columns = self
            .slot(table)
            .map(|s| s.working.state().columns.clone())
            .unwrap_or_default();
        match self.ids.filter_cells(node, &columns) {
            Ok(resolved) => Some(Some(resolved)),
            Err(message) => {
                if report {
                    self.error(line, reference, message);
                }
                None
            }
        }
    }

    /// Decides a command on a table's copy; a refusal is an error of the row.
    pub async fn run(
        &mut self,
        table: Uuid,
        command: TableCommand,
        line: Option<usize>,
        reference: &str,
    ) -> bool {
        match self.try_run(table, command).await {
            Ok(()) => true,
            Err(message) => {
                self.error(line, reference, message);
                false
            }
        }
    }

    /// Like [`Self::run`], but a refusal is only recorded when `report` (a first
    /// attempt that may succeed later is silent).
    pub async fn attempt(
        &mut self,
        table: Uuid,
        command: TableCommand,
        line: Option<usize>,
        reference: &str,
        report: bool,
    ) -> bool {
        if report {
            return self.run(table, command, line, reference).await;
        }
        self.try_run(table, command).await.is_ok()
    }

    /// Decides a command on a table's copy, answering the refusal.
    pub async fn try_run(&mut self, table: Uuid, command: TableCommand) -> Result<(), String> {
        let Some(slot) = self.slots.iter_mut().find(|s| s.id == table) else {
            return Err(format!("table {table} is not in this scope"));
        };
        slot.working
            .handle(command)
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// Notes a change.
    pub fn change(&mut self, change: Change) {
        self.changes.push(change);
    }

    /// Notes what the system manages after the apply.
    pub fn manage(&mut self, row: &Row, resource_id: String, table_id: Uuid) {
        self.resources.push(DeployedResource {
            resource_type: row.kind().to_string(),
            reference: row.reference().to_string(),
            resource_id,
            table_id,
        });
    }

    /// The columns of the link targets of `columns` (for row-policy link leaves).
    pub async fn targets(&self, columns: &[ColumnDef]) -> ApiResult<Targets> {
        let mut targets = Targets::new();
        for id in columns.iter().filter_map(|c| c.target_table_id) {
            if let Some((_, cols)) = self.find(id).await? {
                targets.insert(id, cols);
            }
        }
        Ok(targets)
    }

    /// Live records of a table whose cell in `column` holds a value.
    pub async fn filled(&self, table: Uuid, column: &ColumnDef) -> ApiResult<i64> {
        let Some(slot) = self.slot(table) else {
            return Ok(0);
        };
        if slot.records == 0 || !column.column_type.is_stored() {
            return Ok(0);
        }
        let empty = self
            .handle(table)
            .empty_count(&self.caller.state.pool, column)
            .await
            .map_err(ApiError::Internal)?;
        Ok(slot.records - empty)
    }

    /// A read handle on an existing table's records.
    pub fn handle(&self, table: Uuid) -> projections::read_models::tables::read::TableHandle {
        projections::read_models::tables::read::TableHandle {
            company_id: self.caller.principal.company_id,
            table_id: table,
            columns: Vec::new(),
            gates: Vec::new(),
        }
    }

    /// Appends every decided event with the deployment's, in one statement.
    pub async fn commit(mut self) -> ApiResult<()> {
        let state = &self.caller.state;
        self.deployment
            .handle(DeploymentCommand::Record {
                company_id: self.caller.principal.company_id,
                scope: self.scope,
                system: self.system.clone(),
                resources: std::mem::take(&mut self.resources),
            })
            .await
            .map_err(ApiError::from)?;
        let mut batch = Batch::new(&self.caller.metadata());
        for slot in &self.slots {
            slot.working.stage(&mut batch).map_err(ApiError::internal)?;
        }
        self.deployment
            .stage(&mut batch)
            .map_err(ApiError::internal)?;
        if let Some(tag) = &self.tag {
            tag.stage(&mut batch).map_err(ApiError::internal)?;
        }
        for operation in &self.operations {
            operation.stage(&mut batch).map_err(ApiError::internal)?;
        }
        for token in &self.token_ops {
            token.stage(&mut batch).map_err(ApiError::internal)?;
        }
        match state.bus.commit(batch).await {
            Ok(()) => {}
            Err(CommandError::Conflict) => {
                return Err(ApiError::code(
                    Code::ConcurrentModification,
                    "another write changed a table of the scope during the apply; nothing was applied, retry",
                ));
            }
            Err(CommandError::NotYetVisible(n)) => return Err(ApiError::NotYetVisible(n)),
            Err(e) => return Err(store_error(e)),
        }
        for slot in &self.slots {
            for event in slot.working.events() {
                let migration = match event {
                    TableEvent::ColumnAdded { migration, .. } => migration.as_ref(),
                    TableEvent::ColumnTypeChanged { migration, .. }
                    | TableEvent::ColumnOptionsRenamed { migration, .. } => Some(migration),
                    _ => None,
                };
                if let Some(m) = migration.filter(|m| m.background) {
                    state.runtime.spawn(crate::runtime::migrations::complete(
                        state.runtime.clone(),
                        crate::runtime::migrations::Migration {
                            company_id: self.caller.principal.company_id,
                            table_id: slot.id,
                            migration_id: m.migration_id,
                            request_id: self.caller.ctx.request_id.clone(),
                        },
                    ));
                }
            }
        }
        Ok(())
    }
}

impl Tables for Engine<'_> {
    async fn find(&self, id: Uuid) -> ApiResult<Option<(LinkFacts, Vec<ColumnDef>)>> {
        if let Some(slot) = self.slot(id) {
            let table = slot.working.state();
            if table.deleted || table.table_id.is_none() {
                return Ok(None);
            }
            let facts = LinkFacts {
                company_id: self.caller.principal.company_id,
                scope: self.scope,
            };
            return Ok(Some((facts, table.columns.clone())));
        }
        Stored {
            state: &self.caller.state,
            company_id: self.caller.principal.company_id,
        }
        .find(id)
        .await
    }
}

/// The live records of a table the plan deletes, as its loss.
pub fn records_lost(records: i64, what: &str) -> Option<Loss> {
    (records > 0).then(|| Loss {
        records,
        what: what.to_string(),
    })
}
