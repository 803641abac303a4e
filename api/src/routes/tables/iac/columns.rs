//! The column step of a deployment: the managed columns a document no longer holds
//! are deleted (computed ones first), then stored columns and computed columns are
//! added, changed in place (`PATCH` semantics, a type change migrating the data) or
//! replaced (deleted and added again) when what they are changes.

use super::document::{ColumnDoc, Row, TABLE_REF};
use super::engine::{Action, Change, Engine, Loss};
use super::rows::{Naming, column_doc, subject_key};
use crate::error::{ApiError, ApiResult};
use crate::routes::tables::column_schema::ColumnCreate;
use crate::routes::tables::column_sources::gather;
use domain::tables::column::{
    Cardinality, ColumnChanges, ColumnDef, ColumnType, apply_changes, is_column_key,
};
use domain::tables::table::TableCommand;
use serde_json::Value;
use uuid::Uuid;

/// Fields a `PATCH` of a column changes in place.
const IN_PLACE: [&str; 7] = [
    "name",
    "description",
    "required",
    "default_value",
    "max_length",
    "options",
    "type",
];

/// Deletes the managed columns of a table the document no longer holds.
pub async fn delete_missing(
    engine: &mut Engine<'_>,
    table: Uuid,
    table_ref: &str,
) -> ApiResult<()> {
    let wanted: Vec<String> = engine
        .document
        .rows
        .iter()
        .filter_map(|(_, r)| match r {
            Row::Column(c) if c.table == table_ref => Some(c.key.clone()),
            _ => None,
        })
        .collect();
    let Some(slot) = engine.slot(table) else {
        return Ok(());
    };
    let mut gone: Vec<ColumnDef> = slot
        .working
        .state()
        .columns
        .iter()
        .filter(|c| !wanted.contains(&c.key) && engine.is_managed("column", table, &c.key))
        .cloned()
        .collect();
    gone.sort_by_key(|c| c.column_type.is_stored());
    for column in gone {
        let reference = engine
            .deployment
            .state()
            .reference_of("column", table, &column.key)
            .unwrap_or_default()
            .to_string();
        let filled = engine.filled(table, &column).await?;
        if engine
            .run(
                table,
                TableCommand::DeleteColumn {
                    key: column.key.clone(),
                },
                None,
                &reference,
            )
            .await
        {
            engine.change(Change {
                action: Action::Delete,
                kind: "column",
                reference,
                table: table_ref.to_string(),
                resource_id: Some(column.key.clone()),
                fields: Vec::new(),
                loses: cells_lost(filled, "their value in the column"),
            });
        }
    }
    Ok(())
}

/// Adds, changes or replaces the document's columns of a table in document order.
/// On the first pass (`retry` false) a computed column the table refuses is left
/// for the retry, which runs after every table's first pass (it may read a column
/// of a table further down the document) and reports what is still refused.
pub async fn apply(
    engine: &mut Engine<'_>,
    table: Uuid,
    table_ref: &str,
    retry: bool,
) -> ApiResult<()> {
    let rows: Vec<(usize, ColumnDoc)> = engine
        .document
        .rows
        .iter()
        .filter_map(|(l, r)| match r {
            Row::Column(c) if c.table == table_ref && !(retry && c.column_type.is_stored()) => {
                Some((*l, (**c).clone()))
            }
            _ => None,
        })
        .collect();
    for (line, doc) in rows {
        let report = retry || doc.column_type.is_stored();
        let row = Row::Column(Box::new(doc.clone()));
        if !is_column_key(&doc.key) {
            if report {
                engine.error(
                    Some(line),
                    &doc.reference,
                    "key must be col_ and 1..32 lowercase hex digits",
                );
            }
            continue;
        }
        let wanted = match resolve(engine, &doc) {
            Ok(wanted) => wanted,
            Err(message) => {
                if report {
                    engine.error(Some(line), &doc.reference, message);
                }
                continue;
            }
        };
        if report {
            engine.manage(&row, doc.key.clone(), table);
        }
        one(engine, table, line, wanted, report).await?;
    }
    Ok(())
}

/// Decides one column.
async fn one(
    engine: &mut Engine<'_>,
    table: Uuid,
    line: usize,
    wanted: ColumnDoc,
    report: bool,
) -> ApiResult<()> {
    let Some(slot) = engine.slot(table) else {
        return Ok(());
    };
    let columns = slot.working.state().columns.clone();
    let Some(current) = columns.iter().find(|c| c.key == wanted.key).cloned() else {
        let change = Change {
            action: Action::Create,
            kind: "column",
            reference: wanted.reference.clone(),
            table: wanted.table.clone(),
            resource_id: Some(wanted.key.clone()),
            fields: Vec::new(),
            loses: None,
        };
        add(engine, table, line, &wanted, &columns, change, report).await?;
        return Ok(());
    };
    let now = raw(&current, &columns, &wanted);
    let fields = differences(&now, &wanted);
    if fields.is_empty() {
        return Ok(());
    }
    if fields.iter().all(|f| IN_PLACE.contains(&f.as_str())) {
        return update(engine, table, line, &current, &wanted, fields, report).await;
    }
    let filled = engine.filled(table, &current).await?;
    // The replacement is decided on a copy first: a refused one leaves the column.
    let before = engine.slot(table).map(|s| s.working.mark());
    let delete = TableCommand::DeleteColumn {
        key: current.key.clone(),
    };
    if !engine
        .attempt(table, delete, Some(line), &wanted.reference, report)
        .await
    {
        return Ok(());
    }
    let columns = engine
        .slot(table)
        .map(|s| s.working.state().columns.clone())
        .unwrap_or_default();
    let change = Change {
        action: Action::Replace,
        kind: "column",
        reference: wanted.reference.clone(),
        table: wanted.table.clone(),
        resource_id: Some(wanted.key.clone()),
        fields,
        loses: cells_lost(filled, "their value in the column (replaced)"),
    };
    if !add(engine, table, line, &wanted, &columns, change, report).await?
        && let (Some(before), Some(slot)) =
            (before, engine.slots.iter_mut().find(|s| s.id == table))
    {
        slot.working.rewind(before);
    }
    Ok(())
}

/// Adds a column, noting `change` when the table accepts it.
async fn add(
    engine: &mut Engine<'_>,
    table: Uuid,
    line: usize,
    wanted: &ColumnDoc,
    columns: &[ColumnDef],
    change: Change,
    report: bool,
) -> ApiResult<bool> {
    let body = create_body(wanted);
    let sources = gather(engine, columns, &body).await?;
    let records = engine.slot(table).map_or(0, |s| s.records);
    let command = TableCommand::AddColumn {
        key: wanted.key.clone(),
        spec: body.spec(),
        room_department: engine.room_department,
        link: sources.link,
        link_targets: sources.link_targets,
        others: sources.others,
        live_records: records,
        migration_id: Uuid::new_v4(),
    };
    let added = engine
        .attempt(table, command, Some(line), &wanted.reference, report)
        .await;
    if added {
        engine.change(change);
    }
    Ok(added)
}

/// Changes a column in place.
async fn update(
    engine: &mut Engine<'_>,
    table: Uuid,
    line: usize,
    current: &ColumnDef,
    wanted: &ColumnDoc,
    fields: Vec<String>,
    report: bool,
) -> ApiResult<()> {
    let has = |f: &str| fields.iter().any(|x| x == f);
    let changes = ColumnChanges {
        name: has("name").then(|| wanted.name.clone()),
        description: has("description").then(|| wanted.description.clone()),
        required: has("required").then_some(wanted.required),
        default_value: has("default_value").then(|| wanted.default_value.clone()),
        max_length: has("max_length").then_some(wanted.max_length),
        column_type: has("type").then_some(wanted.column_type),
        options: if has("options") {
            wanted.options.clone()
        } else {
            None
        },
        option_renames: None,
    };
    let columns = engine
        .slot(table)
        .map(|s| s.working.state().columns.clone())
        .unwrap_or_default();
    let pool = &engine.caller.state.pool;
    let option_usage = match apply_changes(current, changes.clone(), &columns) {
        Ok(updated)
            if !updated.removed_options.is_empty()
                && engine.slot(table).is_some_and(|s| s.records > 0) =>
        {
            engine
                .handle(table)
                .option_usage(pool, current, &updated.removed_options)
                .await
                .map_err(ApiError::Internal)?
        }
        _ => 0,
    };
    let empty_cells = if wanted.required
        && !current.required
        && current.column_type.is_stored()
        && engine.slot(table).is_some_and(|s| s.records > 0)
    {
        engine
            .handle(table)
            .empty_count(pool, current)
            .await
            .map_err(ApiError::Internal)?
    } else {
        0
    };
    let loses = if has("type") {
        cells_lost(
            engine.filled(table, current).await?,
            "values that do not convert to the new type become empty",
        )
    } else {
        None
    };
    let records = engine.slot(table).map_or(0, |s| s.records);
    let command = TableCommand::UpdateColumn {
        key: current.key.clone(),
        changes,
        live_records: records,
        option_usage,
        empty_cells,
        migration_id: Uuid::new_v4(),
    };
    if engine
        .attempt(table, command, Some(line), &wanted.reference, report)
        .await
    {
        engine.change(Change {
            action: Action::Update,
            kind: "column",
            reference: wanted.reference.clone(),
            table: wanted.table.clone(),
            resource_id: Some(current.key.clone()),
            fields,
            loses,
        });
    }
    Ok(())
}

fn cells_lost(records: i64, what: &str) -> Option<Loss> {
    (records > 0).then(|| Loss {
        records,
        what: format!("records lose {what}"),
    })
}

/// The document's column with table references as ids and principal tokens as
/// tagged cells: what it is compared and created as.
fn resolve(engine: &Engine<'_>, doc: &ColumnDoc) -> Result<ColumnDoc, String> {
    let table = |reference: &str| -> Result<String, String> {
        match reference.strip_prefix(TABLE_REF) {
            Some(r) => engine
                .table_id(r)
                .map(|id| id.to_string())
                .ok_or_else(|| format!("'{reference}' names no table of this document")),
            None => reference
                .parse::<Uuid>()
                .map(|id| id.to_string())
                .map_err(|_| format!("'{reference}' is neither $table:<ref> nor a table id")),
        }
    };
    let mut out = doc.clone();
    out.target_table = doc.target_table.as_deref().map(table).transpose()?;
    out.source_table = doc.source_table.as_deref().map(table).transpose()?;
    if let Some(Value::String(id)) = doc.fallback.as_ref().and_then(|f| f.get("table_id")) {
        let id = table(id)?;
        if let Some(f) = out.fallback.as_mut() {
            f["table_id"] = Value::String(id);
        }
    }
    if doc.column_type == ColumnType::Principal
        && let Some(Value::String(cell)) = &doc.default_value
    {
        out.default_value = Some(Value::String(engine.ids.cell(cell)?));
    }
    Ok(normalized(out))
}

/// The current column in the resolved form of [`resolve`].
fn raw(current: &ColumnDef, columns: &[ColumnDef], like: &ColumnDoc) -> ColumnDoc {
    let table = |id: Uuid| id.to_string();
    let cell = |c: &str| c.to_string();
    let reference = |_: &str, _: Uuid, _: &str, _: String| like.reference.clone();
    let naming = Naming {
        system: &like.system,
        table: &table,
        cell: &cell,
        subject: &subject_key,
        reference: &reference,
        filter: &|f, _| f.clone(),
    };
    normalized(column_doc(
        current,
        columns,
        &like.table,
        like.reference.clone(),
        &naming,
    ))
}

/// A column row with the defaults the service stores written out.
fn normalized(mut doc: ColumnDoc) -> ColumnDoc {
    if doc.column_type == ColumnType::Link {
        doc.cardinality = Some(doc.cardinality.unwrap_or(Cardinality::Many));
    }
    doc
}

/// The fields two rows of one column differ in.
fn differences(now: &ColumnDoc, wanted: &ColumnDoc) -> Vec<String> {
    let (Ok(Value::Object(a)), Ok(Value::Object(b))) =
        (serde_json::to_value(now), serde_json::to_value(wanted))
    else {
        return vec!["type".into()];
    };
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| a.get(*k).unwrap_or(&Value::Null) != b.get(*k).unwrap_or(&Value::Null))
        .cloned()
        .collect()
}

/// The ColumnCreate of a resolved column row.
fn create_body(doc: &ColumnDoc) -> ColumnCreate {
    ColumnCreate {
        name: doc.name.clone(),
        column_type: doc.column_type,
        required: doc.required.then_some(true),
        default_value: doc.default_value.clone(),
        description: doc.description.clone(),
        max_length: doc.max_length,
        options: doc.options.clone(),
        allowed_mime_types: doc.allowed_mime_types.clone(),
        max_count: doc.max_count,
        max_file_bytes: doc.max_file_bytes,
        target_table_id: doc.target_table.as_deref().and_then(|t| t.parse().ok()),
        cardinality: doc.cardinality,
        link_field: doc.link_field.clone(),
        aggregation: doc.aggregation.clone(),
        target_column: doc.target_column.clone(),
        direction: doc.direction.clone(),
        source_table_id: doc.source_table.clone(),
        match_pairs: doc.match_pairs.clone(),
        filter: doc.filter.clone(),
        expression: doc.expression.clone(),
        pick: doc.pick.clone(),
        fallback: doc.fallback.clone(),
    }
}
