//! The steps of what hangs on a table's columns: views, grants, triggers, approval
//! rules, client access and the table's settings. Views and triggers run twice:
//! before the column deletions (so a view stops using a column that goes) and after
//! the additions (so a view can use a new one); a refusal on the first pass is
//! retried on the second, where it counts.

use super::document::Row;
use super::engine::{Action, Change, Engine, Loss};
use super::rows::subject_key;
use crate::error::ApiResult;
use domain::tables::grants::{Grant, ReadMode};
use domain::tables::rule::ApprovalRule;
use domain::tables::table::{TableCommand, ViewSpec};
use domain::tables::trigger::Trigger;
use projections::read_models::review::query as review;
use uuid::Uuid;

pub fn change(
    kind: &'static str,
    action: Action,
    reference: &str,
    table: &str,
    id: String,
) -> Change {
    Change {
        action,
        kind,
        reference: reference.to_string(),
        table: table.to_string(),
        resource_id: Some(id),
        fields: Vec::new(),
        loses: None,
    }
}

/// The managed resource refs of a kind on a table, with their resource ids.
pub fn managed(engine: &Engine<'_>, kind: &str, table: Uuid) -> Vec<(String, String)> {
    engine
        .deployment
        .state()
        .resources
        .iter()
        .filter(|r| r.resource_type == kind && r.table_id == table)
        .map(|r| (r.reference.clone(), r.resource_id.clone()))
        .collect()
}

/// Creates or changes the document's views of a table; `last` reports refusals.
pub async fn views(engine: &mut Engine<'_>, table: Uuid, table_ref: &str, last: bool) {
    let rows: Vec<(usize, Row)> = rows(engine, table_ref, "view");
    for (line, row) in rows {
        let Row::View(doc) = &row else { continue };
        let Some(slot) = engine.slot(table) else {
            return;
        };
        let current = slot.working.state().views.clone();
        let by_ref = engine
            .managed("view", &doc.reference)
            .filter(|r| r.table_id == table)
            .and_then(|r| r.resource_id.parse::<Uuid>().ok())
            .and_then(|id| current.iter().find(|v| v.id == id));
        let found = by_ref
            .or_else(|| current.iter().find(|v| v.name == doc.name))
            .cloned();
        let Some(filter) =
            engine.filter(table, doc.filter.as_ref(), Some(line), &doc.reference, last)
        else {
            continue;
        };
        let spec = ViewSpec {
            name: doc.name.clone(),
            filter: filter.clone(),
            sort: doc.sort.clone(),
            columns: doc.columns.clone(),
        };
        let (command, action, id) = match &found {
            Some(v)
                if v.name == doc.name
                    && v.filter == filter
                    && v.sort == doc.sort
                    && v.columns == doc.columns =>
            {
                if last {
                    engine.manage(&row, v.id.to_string(), table);
                }
                continue;
            }
            Some(v) => (
                TableCommand::UpdateView {
                    view_id: v.id,
                    spec,
                },
                Action::Update,
                v.id,
            ),
            None => {
                let id = Uuid::new_v4();
                (
                    TableCommand::CreateView { view_id: id, spec },
                    Action::Create,
                    id,
                )
            }
        };
        match engine.try_run(table, command).await {
            Ok(()) => {
                engine.change(change(
                    "view",
                    action,
                    &doc.reference,
                    table_ref,
                    id.to_string(),
                ));
                if last {
                    engine.manage(&row, id.to_string(), table);
                }
            }
            Err(message) if last => engine.error(Some(line), &doc.reference, message),
            Err(_) => {}
        }
    }
}

/// Deletes the managed views and grants of a table the document no longer holds.
pub async fn delete_missing(
    engine: &mut Engine<'_>,
    table: Uuid,
    table_ref: &str,
) -> ApiResult<()> {
    let wanted: Vec<String> = engine
        .document
        .rows
        .iter()
        .map(|(_, r)| r.reference().to_string())
        .collect();
    for (reference, id) in managed(engine, "view", table) {
        let Ok(view_id) = id.parse::<Uuid>() else {
            continue;
        };
        let exists = engine
            .slot(table)
            .is_some_and(|s| s.working.state().views.iter().any(|v| v.id == view_id));
        if wanted.contains(&reference) || !exists {
            continue;
        }
        if engine
            .run(
                table,
                TableCommand::DeleteView { view_id },
                None,
                &reference,
            )
            .await
        {
            engine.change(change("view", Action::Delete, &reference, table_ref, id));
        }
    }
    let records = engine.slot(table).map_or(0, |s| s.records);
    for (reference, id) in managed(engine, "grant", table) {
        if wanted.contains(&reference) {
            continue;
        }
        let Some(subject) = engine.slot(table).and_then(|s| {
            s.working
                .state()
                .grants
                .iter()
                .map(|(s, _)| *s)
                .find(|s| subject_key(*s) == id)
        }) else {
            continue;
        };
        if engine
            .run(
                table,
                TableCommand::RevokeGrant { subject },
                None,
                &reference,
            )
            .await
        {
            let mut c = change("grant", Action::Delete, &reference, table_ref, id);
            c.loses = hidden(records, &subject_key(subject));
            engine.change(c);
        }
    }
    Ok(())
}

fn hidden(records: i64, subject: &str) -> Option<Loss> {
    (records > 0).then(|| Loss {
        records,
        what: format!("records {subject} may no longer read (an upper bound: every live record)"),
    })
}

/// Sets the document's grants of a table.
pub async fn grants(engine: &mut Engine<'_>, table: Uuid, table_ref: &str) -> ApiResult<()> {
    for (line, row) in rows(engine, table_ref, "grant") {
        let Row::Grant(doc) = &row else { continue };
        let subject = match engine.ids.subject(&doc.subject) {
            Ok(subject) => subject,
            Err(message) => {
                engine.error(Some(line), &doc.reference, message);
                continue;
            }
        };
        engine.manage(&row, subject_key(subject), table);
        let Some(row_filter) = engine.filter(
            table,
            doc.row_filter.as_ref(),
            Some(line),
            &doc.reference,
            true,
        ) else {
            continue;
        };
        let grant = Grant {
            can_read: doc.can_read,
            can_insert: doc.can_insert,
            can_edit: doc.can_edit,
            row_filter,
            hidden_columns: doc.hidden_columns.clone(),
            scope_values: doc.scope_values.clone(),
        };
        let Some(slot) = engine.slot(table) else {
            return Ok(());
        };
        let current = slot.working.state().grant(&subject).cloned();
        if current.as_ref() == Some(&grant) {
            continue;
        }
        let columns = slot.working.state().columns.clone();
        let records = slot.records;
        let targets = engine.targets(&columns).await?;
        let narrows = current.as_ref().is_some_and(|c| narrower(c, &grant));
        let command = TableCommand::SetGrant {
            subject,
            grant,
            targets,
        };
        if engine.run(table, command, Some(line), &doc.reference).await {
            let action = if current.is_some() {
                Action::Update
            } else {
                Action::Create
            };
            let mut c = change(
                "grant",
                action,
                &doc.reference,
                table_ref,
                subject_key(subject),
            );
            if narrows {
                c.loses = hidden(records, &doc.subject);
            }
            engine.change(c);
        }
    }
    Ok(())
}

/// Whether a grant change may hide rows or columns the subject reads now.
fn narrower(old: &Grant, new: &Grant) -> bool {
    let rank = |m: ReadMode| match m {
        ReadMode::All => 2,
        ReadMode::Own | ReadMode::Filtered => 1,
        ReadMode::None => 0,
    };
    rank(new.can_read) < rank(old.can_read)
        || (new.can_read != ReadMode::All && new.row_filter != old.row_filter)
        || new.can_read != old.can_read && rank(new.can_read) == rank(old.can_read)
        || new
            .hidden_columns
            .iter()
            .any(|c| !old.hidden_columns.contains(c))
}

/// Replaces a table's trigger set with the document's triggers (and the unmanaged
/// ones it does not name); `last` reports refusals.
pub async fn triggers(engine: &mut Engine<'_>, table: Uuid, table_ref: &str, last: bool) {
    let mut wanted: Vec<Trigger> = Vec::new();
    let rows = rows(engine, table_ref, "trigger");
    for (line, row) in &rows {
        let Row::Trigger(doc) = row else { continue };
        if last {
            engine.manage(row, doc.id.clone(), table);
        }
        let Some(when) = engine.filter(table, doc.when.as_ref(), Some(*line), &doc.reference, last)
        else {
            return;
        };
        wanted.push(Trigger {
            id: doc.id.clone(),
            name: doc.name.clone(),
            enabled: doc.enabled,
            on: doc.on,
            schedule: doc.schedule.clone(),
            when,
            actions: doc.actions.clone(),
        });
    }
    let Some(slot) = engine.slot(table) else {
        return;
    };
    let current = slot.working.state().triggers.clone();
    for t in &current {
        if !wanted.iter().any(|w| w.id == t.id) && !engine.is_managed("trigger", table, &t.id) {
            wanted.push(t.clone());
        }
    }
    let (diff, same) = set_changes(
        "trigger",
        table_ref,
        &current,
        &wanted,
        |t| &t.id,
        engine,
        table,
    );
    if same {
        return;
    }
    let command = TableCommand::SetTriggers {
        triggers: wanted,
        saved_by: engine.caller.principal.reference(),
    };
    match engine.try_run(table, command).await {
        Ok(()) => engine.changes.extend(diff),
        Err(message) if last => engine.error(None, table_ref, message),
        Err(_) => {}
    }
}

/// Replaces a table's approval rules with the document's (and the unmanaged ones
/// it does not name); each names a review template of the company.
pub async fn rules(engine: &mut Engine<'_>, table: Uuid, table_ref: &str) -> ApiResult<()> {
    let mut wanted: Vec<ApprovalRule> = Vec::new();
    let pool = engine.caller.state.pool.clone();
    let company = engine.caller.principal.company_id;
    for (line, row) in rows(engine, table_ref, "approval_rule") {
        let Row::ApprovalRule(doc) = &row else {
            continue;
        };
        if review::template(&pool, company, doc.template_id)
            .await?
            .is_none()
        {
            engine.error(Some(line), &doc.reference, format!("review template {} does not exist; create it with POST /private/module/review/templates first", doc.template_id));
            continue;
        }
        engine.manage(&row, doc.id.clone(), table);
        wanted.push(ApprovalRule {
            id: doc.id.clone(),
            label: doc.label.clone(),
            rule_type: doc.rule_type.clone(),
            events: doc.events.clone(),
            template_id: doc.template_id,
        });
    }
    let Some(slot) = engine.slot(table) else {
        return Ok(());
    };
    let current = slot.working.state().rules.clone();
    for r in &current {
        if !wanted.iter().any(|w| w.id == r.id) && !engine.is_managed("approval_rule", table, &r.id)
        {
            wanted.push(r.clone());
        }
    }
    let (diff, same) = set_changes(
        "approval_rule",
        table_ref,
        &current,
        &wanted,
        |r| &r.id,
        engine,
        table,
    );
    if !same
        && engine
            .run(
                table,
                TableCommand::SetRules { rules: wanted },
                None,
                table_ref,
            )
            .await
    {
        engine.changes.extend(diff);
    }
    Ok(())
}

/// The per-item changes between two id-keyed sets, and whether they are equal.
fn set_changes<T: PartialEq>(
    kind: &'static str,
    table_ref: &str,
    current: &[T],
    wanted: &[T],
    id: impl Fn(&T) -> &String,
    engine: &Engine<'_>,
    table: Uuid,
) -> (Vec<Change>, bool) {
    let reference = |item_id: &str| {
        engine
            .document
            .rows
            .iter()
            .find(|(_, r)| r.kind() == kind && r.table() == table_ref && row_id(r) == Some(item_id))
            .map(|(_, r)| r.reference().to_string())
            .or_else(|| {
                engine
                    .deployment
                    .state()
                    .reference_of(kind, table, item_id)
                    .map(str::to_string)
            })
            .unwrap_or_else(|| item_id.to_string())
    };
    let mut out = Vec::new();
    for w in wanted {
        match current.iter().find(|c| id(c) == id(w)) {
            None => out.push(change(
                kind,
                Action::Create,
                &reference(id(w)),
                table_ref,
                id(w).clone(),
            )),
            Some(c) if c != w => out.push(change(
                kind,
                Action::Update,
                &reference(id(w)),
                table_ref,
                id(w).clone(),
            )),
            Some(_) => {}
        }
    }
    for c in current {
        if !wanted.iter().any(|w| id(w) == id(c)) {
            out.push(change(
                kind,
                Action::Delete,
                &reference(id(c)),
                table_ref,
                id(c).clone(),
            ));
        }
    }
    let same = out.is_empty()
        && current.len() == wanted.len()
        && current.iter().zip(wanted).all(|(a, b)| a == b);
    (out, same)
}

fn row_id(row: &Row) -> Option<&str> {
    match row {
        Row::Trigger(t) => Some(&t.id),
        Row::ApprovalRule(r) => Some(&r.id),
        _ => None,
    }
}

/// The document's rows of one kind on a table.
pub fn rows(engine: &Engine<'_>, table_ref: &str, kind: &str) -> Vec<(usize, Row)> {
    engine
        .document
        .rows
        .iter()
        .filter(|(_, r)| r.kind() == kind && r.table() == table_ref)
        .map(|(l, r)| (*l, r.clone()))
        .collect()
}
