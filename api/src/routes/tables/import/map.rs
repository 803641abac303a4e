//! `POST .../department/{department_id}/import/{sid}/map`: the rows of an uploaded
//! file into a table of the department. Every row is checked before anything is
//! written; then the records (with a new table and its columns) and the session's
//! completion are appended in one statement.

use super::parse::coerce;
use super::{ImportSessionResponse, NEW_TABLE_TYPES, open_session};
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;
use crate::request::Caller;
use crate::routes::tables::column_schema::ColumnCreate;
use crate::routes::tables::gates::Operation;
use crate::routes::tables::records::creation;
use crate::routes::tables::scope::{Mount, open_table_id};
use axum::Json;
use domain::error::Code;
use domain::tables::column::ColumnType;
use domain::tables::import::{Extracted, ImportCommand, ImportSession};
use domain::tables::record::{Cells, Record, RecordCommand};
use domain::tables::scope::ScopeRef;
use domain::tables::table::{CustomTable, TableCommand};
use domain::tables::values;
use domain::validation::ViolationKind;
use projections::store::{Batch, CommandError, Working};
use serde::Deserialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;
use uuid::Uuid;

/// Rows whose problems an answer lists at most.
const MAX_ROW_ERRORS: usize = 20;

/// Where the rows go.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ImportMap {
    /// An existing table of the department (the caller needs insert access), or
    pub table_id: Option<Uuid>,
    /// a new table of the department (department managers).
    pub new_table: Option<NewTable>,
    /// File columns to table columns. Absent: into an existing table, every file
    /// column whose header is a column's display name; into a new table, every
    /// file column, named by its header, of its inferred type.
    pub columns: Option<Vec<ColumnMap>>,
}

/// A new table.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewTable {
    /// Display name.
    pub name: String,
    /// Free text.
    pub description: Option<String>,
}

/// One file column's destination.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ColumnMap {
    /// The file column (`index` of the session's columns).
    pub source: usize,
    /// Existing table: the column (internal key or display name).
    pub target: Option<String>,
    /// New table: the column's name (default: the header).
    pub name: Option<String>,
    /// New table: its type (default: the inferred one); string, text, integer,
    /// float, boolean, date, datetime or json.
    #[serde(rename = "type")]
    #[schema(value_type = Option<String>)]
    pub column_type: Option<ColumnType>,
}

fn invalid_map(message: impl Into<String>) -> ApiError {
    ApiError::invalid(
        &["body", "columns"],
        ViolationKind::Rule {
            kind: "value_error",
            message: message.into(),
        },
        None,
    )
}

/// Maps an uploaded file's rows into a table of the department and imports them:
/// all rows or none (422 `import_rows_invalid` lists the first 20 rows refused).
#[utoipa::path(post, path = "/import/{sid}/map", tag = "custom_tables", request_body = ImportMap,
    params(("sid" = Uuid, Path, description = "The session")),
    responses((status = 200, body = ImportSessionResponse)))]
pub async fn map(
    caller: Caller,
    mount: Mount,
    ApiJson(body): ApiJson<ImportMap>,
) -> ApiResult<Json<ImportSessionResponse>> {
    let (scope, manages, session) = open_session(&caller, &mount).await?;
    let extracted = session.extracted.clone().ok_or(ApiError::NotFound)?;
    if session.completed.is_some() {
        return Err(ApiError::code(
            Code::AlreadyExists,
            "this file was imported already; upload it again to import it again",
        ));
    }
    let bytes = caller
        .state
        .objects
        .get_bytes(&extracted.rows_key)
        .await
        .map_err(ApiError::Internal)?;
    let rows: Vec<Vec<Value>> = serde_json::from_slice(&bytes).map_err(ApiError::internal)?;
    let mut batch = Batch::new(&caller.metadata());
    let (table_id, created) = match (body.table_id, body.new_table) {
        (Some(table_id), None) => {
            into_existing(
                &caller,
                &mount,
                table_id,
                &extracted,
                body.columns,
                &rows,
                &mut batch,
            )
            .await?;
            (table_id, false)
        }
        (None, Some(new)) => {
            if !manages {
                return Err(ApiError::Forbidden(
                    "Insufficient permissions. (creating a table needs department management)",
                ));
            }
            let id = into_new(
                &caller,
                scope,
                new,
                &extracted,
                body.columns,
                &rows,
                &mut batch,
            )
            .await?;
            (id, true)
        }
        _ => {
            return Err(ApiError::invalid(
                &["body", "table_id"],
                ViolationKind::Rule {
                    kind: "value_error",
                    message: "give exactly one of table_id and new_table".into(),
                },
                None,
            ));
        }
    };
    let mut working = caller
        .state
        .bus
        .open::<ImportSession>(&extracted.sid.to_string())
        .await
        .map_err(|e| ApiError::internal(anyhow::anyhow!(e.to_string())))?;
    working
        .handle(ImportCommand::Complete {
            table_id,
            imported: rows.len(),
            created_table: created,
        })
        .await
        .map_err(ApiError::from)?;
    working.stage(&mut batch).map_err(ApiError::internal)?;
    commit(&caller, batch).await?;
    let session = caller
        .state
        .bus
        .load::<ImportSession>(&extracted.sid.to_string())
        .await?;
    Ok(Json(ImportSessionResponse::of(
        &extracted,
        session.completed.as_ref(),
    )))
}

async fn commit(caller: &Caller, batch: Batch) -> ApiResult<()> {
    match caller.state.bus.commit(batch).await {
        Ok(()) => Ok(()),
        Err(CommandError::Conflict) => Err(ApiError::code(
            Code::ConcurrentModification,
            "the session or the table changed during the import; nothing was imported, retry",
        )),
        Err(CommandError::NotYetVisible(n)) => Err(ApiError::NotYetVisible(n)),
        Err(e) => Err(ApiError::internal(anyhow::anyhow!(e.to_string()))),
    }
}

/// The refusals of rows, as the answer lists them.
fn rows_refused(errors: Vec<Value>) -> ApiError {
    ApiError::code(
        Code::ImportRowsInvalid,
        format!("{} row(s) were refused; nothing was imported", errors.len()),
    )
    .with("errors", Value::Array(errors))
}

fn row_error(index: usize, message: String) -> Value {
    // Line 1 of the file is its header.
    serde_json::json!({"row": index + 2, "message": message})
}

/// Stages one record per row of an existing table, each checked as a REST insert.
async fn into_existing(
    caller: &Caller,
    mount: &Mount,
    table_id: Uuid,
    extracted: &Extracted,
    columns: Option<Vec<ColumnMap>>,
    rows: &[Vec<Value>],
    batch: &mut Batch,
) -> ApiResult<()> {
    let table = open_table_id(caller, mount, table_id, Operation::InsertRows).await?;
    let pairs: Vec<(usize, String)> = match columns {
        Some(maps) => maps
            .into_iter()
            .map(|m| {
                let target = m.target.ok_or_else(|| {
                    invalid_map("into an existing table each column names its target")
                })?;
                if m.source >= extracted.columns.len() {
                    return Err(invalid_map(format!(
                        "source {} is not a column of the file",
                        m.source
                    )));
                }
                if !table.columns.iter().any(|c| c.is_named(&target)) {
                    return Err(invalid_map(format!(
                        "'{target}' is not a column of the table"
                    )));
                }
                Ok((m.source, target))
            })
            .collect::<ApiResult<_>>()?,
        None => extracted
            .columns
            .iter()
            .filter(|c| table.columns.iter().any(|t| t.name == c.header))
            .map(|c| (c.index, c.header.clone()))
            .collect(),
    };
    if pairs.is_empty() {
        return Err(invalid_map("no file column maps to a column of the table"));
    }
    let mut errors = Vec::new();
    for (index, row) in rows.iter().enumerate() {
        let data: Map<String, Value> = pairs
            .iter()
            .filter(|(source, _)| !row[*source].is_null())
            .map(|(source, target)| {
                let t = table
                    .columns
                    .iter()
                    .find(|c| c.is_named(target))
                    .map_or(ColumnType::String, |c| c.column_type);
                (target.clone(), coerce(t, row[*source].clone()))
            })
            .collect();
        let record_id = Uuid::new_v4();
        match creation(&table, record_id, &data).await {
            Ok(command) => stage_record(record_id, command, batch).await?,
            Err(e) => errors.push(row_error(index, e.describe())),
        }
        if errors.len() >= MAX_ROW_ERRORS {
            break;
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(rows_refused(errors))
    }
}

async fn stage_record(record_id: Uuid, command: RecordCommand, batch: &mut Batch) -> ApiResult<()> {
    let mut record: Working<Record> = Working::fresh(record_id);
    record.handle(command).await.map_err(ApiError::from)?;
    record.stage(batch).map_err(ApiError::internal)
}

/// Stages a new table of the department, its columns and one record per row, the
/// values checked against the new columns (scalar types only, so no row needs the
/// database).
async fn into_new(
    caller: &Caller,
    scope: ScopeRef,
    new: NewTable,
    extracted: &Extracted,
    columns: Option<Vec<ColumnMap>>,
    rows: &[Vec<Value>],
    batch: &mut Batch,
) -> ApiResult<Uuid> {
    let maps: Vec<(usize, String, ColumnType)> = match columns {
        Some(maps) => maps
            .into_iter()
            .map(|m| {
                let source = extracted.columns.get(m.source).ok_or_else(|| {
                    invalid_map(format!("source {} is not a column of the file", m.source))
                })?;
                Ok((
                    m.source,
                    m.name.unwrap_or_else(|| source.header.clone()),
                    m.column_type.unwrap_or(source.inferred_type),
                ))
            })
            .collect::<ApiResult<_>>()?,
        None => extracted
            .columns
            .iter()
            .map(|c| (c.index, c.header.clone(), c.inferred_type))
            .collect(),
    };
    if let Some((_, name, t)) = maps.iter().find(|(_, _, t)| !NEW_TABLE_TYPES.contains(t)) {
        return Err(invalid_map(format!(
            "column '{name}': a new table takes string, text, integer, float, boolean, date, datetime or json columns, not {}",
            t.as_str()
        )));
    }
    let table_id = Uuid::new_v4();
    let mut table: Working<CustomTable> = Working::fresh(table_id);
    let create = TableCommand::Create {
        table_id,
        company_id: caller.principal.company_id,
        scope,
        name: new.name,
        description: new.description,
        created_by: caller.principal.reference(),
    };
    table.handle(create).await.map_err(ApiError::from)?;
    let mut keys = Vec::with_capacity(maps.len());
    for (source, name, column_type) in &maps {
        let key = format!("col_{:016x}", rand::random::<u64>());
        let spec = ColumnCreate::typed(name.clone(), *column_type).spec();
        let add = TableCommand::AddColumn {
            key: key.clone(),
            spec,
            room_department: None,
            link: None,
            link_targets: Vec::new(),
            others: Vec::new(),
            live_records: 0,
            migration_id: Uuid::new_v4(),
        };
        table
            .handle(add)
            .await
            .map_err(|e| invalid_map(format!("column '{name}': {e}")))?;
        keys.push((*source, key));
    }
    let defs = table.state().columns.clone();
    let mut records = Vec::with_capacity(rows.len());
    let mut errors = Vec::new();
    for (index, row) in rows.iter().enumerate() {
        let mut data = Cells::new();
        let mut problem = None;
        for (source, key) in &keys {
            let Some(def) = defs.iter().find(|d| d.key == *key) else {
                continue;
            };
            let value = coerce(def.column_type, row[*source].clone());
            match values::normalize(def, &value, &mut Vec::new()) {
                Ok(Value::Null) => {}
                Ok(value) => {
                    data.insert(key.clone(), value);
                }
                Err(message) => {
                    problem = Some(format!("column '{}': {message}", def.name));
                    break;
                }
            }
        }
        if let Some(message) = problem {
            errors.push(row_error(index, message));
            if errors.len() >= MAX_ROW_ERRORS {
                break;
            }
            continue;
        }
        let record_id = Uuid::new_v4();
        records.push((
            record_id,
            RecordCommand::Create {
                record_id,
                table_id,
                company_id: caller.principal.company_id,
                created_by: caller.principal.reference(),
                data,
            },
        ));
    }
    if !errors.is_empty() {
        return Err(rows_refused(errors));
    }
    // The table's events come first: its records are projected into it.
    table.stage(batch).map_err(ApiError::internal)?;
    for (record_id, command) in records {
        stage_record(record_id, command, batch).await?;
    }
    Ok(table_id)
}
