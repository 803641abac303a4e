//! The Command step: each `command` row defines a Command on its table or, when
//! its definition differs from the current version, redefines it (the next
//! version). A Command is the managed one of its ref, else the table's Command
//! with its name. A `tag_id` must name a tag of the scope (a tag of another scope
//! is a plan error). Commands cannot be deleted: one the document no longer holds
//! stays as it is.

use super::attached::change;
use super::document::{CommandDoc, Row};
use super::engine::{Action, Engine};
use crate::error::{ApiError, ApiResult};
use domain::tables::command::{CommandCommand, CommandDefinition, TableOperation, WriteEffect};
use projections::read_models::table_tags::query as tags;
use projections::store::Working;
use uuid::Uuid;

/// Defines or redefines the document's Commands of a table.
pub async fn decide(engine: &mut Engine<'_>, table: Uuid, table_ref: &str) -> ApiResult<()> {
    let rows: Vec<(usize, CommandDoc)> = engine
        .document
        .rows
        .iter()
        .filter_map(|(l, r)| match r {
            Row::Command(c) if c.table == table_ref => Some((*l, (**c).clone())),
            _ => None,
        })
        .collect();
    for (line, doc) in rows {
        let definition = match definition(engine, &doc).await? {
            Ok(definition) => definition,
            Err(message) => {
                engine.error(Some(line), &doc.reference, message);
                continue;
            }
        };
        let managed = engine
            .managed("command", &doc.reference)
            .filter(|r| r.table_id == table)
            .and_then(|r| r.resource_id.parse::<Uuid>().ok());
        let current = engine
            .commands
            .iter()
            .filter(|c| c.table_id == table)
            .find(|c| Some(c.id) == managed)
            .or_else(|| {
                engine
                    .commands
                    .iter()
                    .filter(|c| c.table_id == table)
                    .find(|c| c.definition.name == doc.name)
            })
            .map(|c| (c.id, c.definition.0.clone()));
        let defined_by = engine.caller.principal.reference();
        let (id, action, mut working, command) = match current {
            Some((id, now)) if now == definition => {
                engine.manage(&Row::Command(Box::new(doc.clone())), id.to_string(), table);
                continue;
            }
            Some((id, _)) => {
                let working = engine
                    .caller
                    .state
                    .bus
                    .open::<TableOperation>(&id.to_string())
                    .await
                    .map_err(|e| ApiError::internal(anyhow::anyhow!(e.to_string())))?;
                let command = CommandCommand::Redefine {
                    table_id: table,
                    definition: Box::new(definition),
                    defined_by,
                };
                (id, Action::Update, working, command)
            }
            None => {
                let id = Uuid::new_v4();
                let command = CommandCommand::Define {
                    command_id: id,
                    company_id: engine.caller.principal.company_id,
                    table_id: table,
                    scope: engine.scope,
                    definition: Box::new(definition),
                    defined_by,
                };
                (id, Action::Create, Working::fresh(id), command)
            }
        };
        match working.handle(command).await {
            Ok(_) => {
                engine.manage(&Row::Command(Box::new(doc.clone())), id.to_string(), table);
                engine.operations.push(working);
                engine.change(change(
                    "command",
                    action,
                    &doc.reference,
                    table_ref,
                    id.to_string(),
                ));
            }
            Err(e) => engine.error(Some(line), &doc.reference, e.to_string()),
        }
    }
    Ok(())
}

/// The definition a row describes; the message says why it is refused.
async fn definition(
    engine: &Engine<'_>,
    doc: &CommandDoc,
) -> ApiResult<Result<CommandDefinition, String>> {
    if let Some(tag_id) = doc.tag_id {
        let company = engine.caller.principal.company_id;
        if tags::tag(engine.caller.pool(), company, engine.scope, tag_id)
            .await?
            .is_none()
        {
            return Ok(Err(format!(
                "tag_id {tag_id} is not a table tag of this scope (create it with POST {{scope_mount}}/table-tags)"
            )));
        }
    }
    let write = match doc
        .write
        .clone()
        .map(serde_json::from_value::<WriteEffect>)
        .transpose()
    {
        Ok(write) => write,
        Err(e) => return Ok(Err(format!("write: {e}"))),
    };
    Ok(Ok(CommandDefinition {
        name: doc.name.clone(),
        description: doc.description.clone(),
        kind: doc.command_kind,
        inputs: doc.inputs.clone(),
        authority: doc.authority,
        tag_id: doc.tag_id,
        delivery_reconciliation_ttl_seconds: doc.delivery_reconciliation_ttl_seconds,
        write,
        query: doc.query.clone(),
    }))
}
