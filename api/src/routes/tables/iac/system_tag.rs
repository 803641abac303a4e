//! The system tag step: the scope's tag of the deployed system (a tag whose
//! `system` is it) is created or changed as the document's `system_tag` row says,
//! and carried by exactly the document's tables. Without the row, a managed system
//! tag is taken off every table.

use super::document::{Row, SystemTagDoc};
use super::engine::{Action, Change, Engine};
use crate::error::{ApiError, ApiResult};
use crate::request::Caller;
use domain::tables::scope::ScopeRef;
use domain::tables::tag::{TableTag, TagCommand, TagTerms};
use projections::read_models::table_tags::query as tags;
use projections::store::Working;
use uuid::Uuid;

/// The system's tag in the scope, loaded for a batch.
pub async fn load(
    caller: &Caller,
    scope: ScopeRef,
    system: &str,
) -> ApiResult<Option<Working<TableTag>>> {
    let company = caller.principal.company_id;
    let found = tags::scope_tags(caller.pool(), company, scope)
        .await?
        .into_iter()
        .find(|t| t.system.as_deref() == Some(system));
    match found {
        Some(tag) => Ok(Some(
            caller
                .state
                .bus
                .open::<TableTag>(&tag.id.to_string())
                .await
                .map_err(|e| ApiError::internal(anyhow::anyhow!(e.to_string())))?,
        )),
        None => Ok(None),
    }
}

/// The system tag as a document row (export).
pub fn row(tag: &TableTag, reference: String) -> Option<Row> {
    let terms = tag.terms.as_ref()?;
    Some(Row::SystemTag(SystemTagDoc {
        reference,
        system: terms.system.clone().unwrap_or_default(),
        name: terms.name.clone(),
        description: terms.description.clone(),
        color: terms.color.clone(),
    }))
}

/// Decides the system tag's changes; `tables` are the document's tables.
pub async fn decide(engine: &mut Engine<'_>, tables: &[Uuid]) -> ApiResult<()> {
    let doc = engine.document.rows.iter().find_map(|(l, r)| match r {
        Row::SystemTag(t) => Some((*l, t.clone())),
        _ => None,
    });
    let wanted: Vec<Uuid> = match &doc {
        Some(_) => tables.to_vec(),
        None if engine
            .deployment
            .state()
            .resources
            .iter()
            .any(|r| r.resource_type == "system_tag") =>
        {
            Vec::new()
        }
        None => return Ok(()),
    };
    if let Some((line, doc)) = &doc
        && !define(engine, *line, doc).await?
    {
        return Ok(());
    }
    let Some(tag) = engine.tag.as_mut() else {
        return Ok(());
    };
    let carried = tag.state().tables.clone();
    let mut moved = Vec::new();
    for table in &wanted {
        if !carried.contains(table) {
            moved.push(TagCommand::Attach { table_id: *table });
        }
    }
    for table in &carried {
        if !wanted.contains(table) && engine.slots.iter().any(|s| s.id == *table) {
            moved.push(TagCommand::Detach { table_id: *table });
        }
    }
    if moved.is_empty() {
        return Ok(());
    }
    for command in moved {
        tag.handle(command).await.map_err(ApiError::from)?;
    }
    let id = tag.id().to_string();
    let reference = doc.map(|(_, d)| d.reference).unwrap_or_default();
    engine.change(Change {
        action: Action::Update,
        kind: "system_tag",
        reference,
        table: String::new(),
        resource_id: Some(id),
        fields: vec!["tables".into()],
        loses: None,
    });
    Ok(())
}

/// Creates the tag or changes its name, description and colour; false when the
/// document's tag is refused (an error is noted).
async fn define(engine: &mut Engine<'_>, line: usize, doc: &SystemTagDoc) -> ApiResult<bool> {
    let company = engine.caller.principal.company_id;
    let taken = tags::named(engine.caller.pool(), company, engine.scope, &doc.name).await?;
    let own = engine.tag.as_ref().map(|t| t.id().to_string());
    if taken.is_some_and(|id| Some(id.to_string()) != own) {
        engine.error(
            Some(line),
            &doc.reference,
            format!("the scope has another tag named '{}'", doc.name),
        );
        return Ok(false);
    }
    let (command, action) = match &engine.tag {
        Some(_) => (
            TagCommand::Update {
                name: doc.name.clone(),
                description: doc.description.clone(),
                color: doc.color.clone(),
            },
            Action::Update,
        ),
        None => {
            let tag_id = Uuid::new_v4();
            engine.tag = Some(Working::fresh(tag_id));
            let terms = TagTerms {
                tag_id,
                company_id: company,
                scope: engine.scope,
                name: doc.name.clone(),
                description: doc.description.clone(),
                color: doc.color.clone(),
                system: Some(engine.system.clone()),
                created_by: engine.caller.principal.reference(),
            };
            (TagCommand::Create(Box::new(terms)), Action::Create)
        }
    };
    let Some(tag) = engine.tag.as_mut() else {
        return Ok(false);
    };
    match tag.handle(command).await {
        Ok(events) => {
            let id = tag.id().to_string();
            engine.manage(&Row::SystemTag(doc.clone()), id.clone(), Uuid::nil());
            if !events.is_empty() {
                engine.change(Change {
                    action,
                    kind: "system_tag",
                    reference: doc.reference.clone(),
                    table: String::new(),
                    resource_id: Some(id),
                    fields: Vec::new(),
                    loses: None,
                });
            }
            Ok(true)
        }
        Err(e) => {
            if action == Action::Create {
                engine.tag = None;
            }
            engine.error(Some(line), &doc.reference, e.to_string());
            Ok(false)
        }
    }
}
