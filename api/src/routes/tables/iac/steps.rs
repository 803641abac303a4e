//! The order of a deployment's steps. Tables are matched and created first; what
//! hangs on columns changes before the column deletions and again after the
//! additions; columns follow the document's order, a computed one the table
//! refuses at first being retried after every table's columns; managed
//! tables the document no longer holds are deleted last.

use super::attached;
use super::columns;
use super::document::{Row, TableDoc};
use super::engine::{Action, Change, Engine, Slot, records_lost};
use crate::error::ApiResult;
use domain::tables::table::TableCommand;
use projections::store::Working;
use uuid::Uuid;

/// Decides every change of the document.
pub async fn decide(engine: &mut Engine<'_>) -> ApiResult<()> {
    let tables: Vec<(usize, TableDoc)> = engine
        .document
        .rows
        .iter()
        .filter_map(|(l, r)| match r {
            Row::Table(t) => Some((*l, t.clone())),
            _ => None,
        })
        .collect();
    let mut placed: Vec<(Uuid, String)> = Vec::new();
    for (line, doc) in &tables {
        if let Some(id) = table(engine, *line, doc).await {
            placed.push((id, doc.reference.clone()));
        }
    }
    for (id, reference) in &placed {
        attached::views(engine, *id, reference, false).await;
        attached::triggers(engine, *id, reference, false).await;
        clear_channel_scope(engine, *id, &tables, reference).await;
        attached::delete_missing(engine, *id, reference).await?;
        columns::delete_missing(engine, *id, reference).await?;
    }
    for retry in [false, true] {
        for (id, reference) in &placed {
            columns::apply(engine, *id, reference, retry).await?;
        }
    }
    for (id, reference) in &placed {
        attached::views(engine, *id, reference, true).await;
        attached::grants(engine, *id, reference).await?;
        attached::triggers(engine, *id, reference, true).await;
        attached::rules(engine, *id, reference).await?;
        super::commands::decide(engine, *id, reference).await?;
        super::tokens::decide(engine, *id, reference).await?;
        super::client_access::decide(engine, *id, reference).await?;
        if let Some((line, doc)) = tables.iter().find(|(_, t)| &t.reference == reference) {
            settings(engine, *id, *line, doc).await;
        }
    }
    delete_tables(engine, &tables).await;
    let ids: Vec<Uuid> = placed.iter().map(|(id, _)| *id).collect();
    super::system_tag::decide(engine, &ids).await
}

/// Finds or creates the document's table: the managed one of its ref, else an
/// unmanaged table of the scope with its name (adopted), else a new one.
async fn table(engine: &mut Engine<'_>, line: usize, doc: &TableDoc) -> Option<Uuid> {
    let row = Row::Table(doc.clone());
    let managed = engine
        .managed("table", &doc.reference)
        .map(|r| r.table_id)
        .filter(|id| engine.slot(*id).is_some_and(|s| s.reference.is_none()));
    let adopted = || {
        engine
            .slots
            .iter()
            .find(|s| {
                s.reference.is_none()
                    && s.working.state().name == doc.name
                    && !engine.is_managed("table", s.id, &s.id.to_string())
            })
            .map(|s| s.id)
    };
    let existing = managed.or_else(adopted);
    let id = match existing {
        Some(id) => id,
        None => return create(engine, line, doc).await,
    };
    if let Some(slot) = engine.slots.iter_mut().find(|s| s.id == id) {
        slot.reference = Some(doc.reference.clone());
    }
    engine.manage(&row, id.to_string(), id);
    let state = engine.slot(id)?.working.state().clone();
    let mut fields = Vec::new();
    if state.name != doc.name {
        fields.push("name".to_string());
    }
    if state.description != doc.description {
        fields.push("description".to_string());
    }
    if !fields.is_empty() {
        let command = TableCommand::Update {
            name: Some(doc.name.clone()),
            description: Some(doc.description.clone()),
            channel_scope_column: None,
            agent_writes_via_commands_only: None,
        };
        update(engine, id, line, &doc.reference, command, fields).await;
    }
    Some(id)
}

/// Runs an update of table `id` and, when the table takes it, lists it as an
/// `update` of the document's table row naming the `fields` it changes: the one
/// way both the adopted table's name and description ([`table`]) and its
/// settings ([`settings`]) are changed.
async fn update(
    engine: &mut Engine<'_>,
    id: Uuid,
    line: usize,
    reference: &str,
    command: TableCommand,
    fields: Vec<String>,
) {
    if engine.run(id, command, Some(line), reference).await {
        engine.change(Change {
            action: Action::Update,
            kind: "table",
            reference: reference.to_string(),
            table: reference.to_string(),
            resource_id: Some(id.to_string()),
            fields,
            loses: None,
        });
    }
}

/// Creates a table of the document.
async fn create(engine: &mut Engine<'_>, line: usize, doc: &TableDoc) -> Option<Uuid> {
    let id = Uuid::new_v4();
    let mut working: Working<domain::tables::table::CustomTable> = Working::fresh(id);
    let command = TableCommand::Create {
        table_id: id,
        company_id: engine.caller.principal.company_id,
        scope: engine.scope,
        name: doc.name.clone(),
        description: doc.description.clone(),
        created_by: engine.caller.principal.reference(),
    };
    if let Err(e) = working.handle(command).await {
        engine.error(Some(line), &doc.reference, e.to_string());
        return None;
    }
    engine.slots.push(Slot {
        id,
        working,
        records: 0,
        reference: Some(doc.reference.clone()),
    });
    engine.manage(&Row::Table(doc.clone()), id.to_string(), id);
    engine.change(Change {
        action: Action::Create,
        kind: "table",
        reference: doc.reference.clone(),
        table: doc.reference.clone(),
        resource_id: Some(id.to_string()),
        fields: Vec::new(),
        loses: None,
    });
    Some(id)
}

/// Clears a channel scope column the document changes (set again by
/// [`settings`]), so the column can go.
async fn clear_channel_scope(
    engine: &mut Engine<'_>,
    id: Uuid,
    tables: &[(usize, TableDoc)],
    reference: &str,
) {
    let Some((line, doc)) = tables.iter().find(|(_, t)| t.reference == reference) else {
        return;
    };
    let current = engine
        .slot(id)
        .and_then(|s| s.working.state().channel_scope_column.clone());
    if current.is_some() && current != doc.channel_scope_column {
        let command = TableCommand::Update {
            name: None,
            description: None,
            channel_scope_column: Some(None),
            agent_writes_via_commands_only: None,
        };
        engine.run(id, command, Some(*line), reference).await;
    }
}

/// Sets the table's settings: the channel scope column and
/// `agent_writes_via_commands_only`.
async fn settings(engine: &mut Engine<'_>, id: Uuid, line: usize, doc: &TableDoc) {
    let Some(state) = engine.slot(id).map(|s| s.working.state().clone()) else {
        return;
    };
    let mut fields = Vec::new();
    if state.channel_scope_column != doc.channel_scope_column {
        fields.push("channel_scope_column".to_string());
    }
    if state.agent_writes_via_commands_only != doc.agent_writes_via_commands_only {
        fields.push("agent_writes_via_commands_only".to_string());
    }
    if fields.is_empty() {
        return;
    }
    let command = TableCommand::Update {
        name: None,
        description: None,
        channel_scope_column: (state.channel_scope_column != doc.channel_scope_column)
            .then(|| doc.channel_scope_column.clone()),
        agent_writes_via_commands_only: Some(doc.agent_writes_via_commands_only),
    };
    update(engine, id, line, &doc.reference, command, fields).await;
}

/// Deletes the managed tables the document no longer holds.
async fn delete_tables(engine: &mut Engine<'_>, tables: &[(usize, TableDoc)]) {
    let gone: Vec<(String, Uuid)> = engine
        .deployment
        .state()
        .resources
        .iter()
        .filter(|r| r.resource_type == "table")
        .filter(|r| !tables.iter().any(|(_, t)| t.reference == r.reference))
        .map(|r| (r.reference.clone(), r.table_id))
        .collect();
    for (reference, id) in gone {
        let Some(slot) = engine.slot(id) else {
            continue;
        };
        if slot.reference.is_some() || slot.working.state().deleted {
            continue;
        }
        let records = slot.records;
        if engine.run(id, TableCommand::Delete, None, &reference).await {
            engine.change(Change {
                action: Action::Delete,
                kind: "table",
                reference: reference.clone(),
                table: reference,
                resource_id: Some(id.to_string()),
                fields: Vec::new(),
                loses: records_lost(records, "every record of the table"),
            });
        }
    }
}
