//! The department import (spec `custom-tables.md` section 4 and the 5.10.0 row):
//! `POST /private/module/custom_tables/department/{department_id}/import/extract`
//! uploads a CSV or XLSX file (any user of the department's company) and answers
//! its columns with the types their values suggest and the first rows;
//! `GET .../import/{sid}` shows the session to its uploader; `POST
//! .../import/{sid}/map` puts the rows into a table of the department: an existing
//! one (insert ACL on it) or a new one (department managers). Every row is checked
//! first; the records, a new table with its columns and the session's completion
//! are appended in one statement, or nothing is.

mod map;
pub mod parse;

use super::scope::{Mount, scope_facts};
use crate::error::{ApiError, ApiResult};
use crate::extract::with_file_part;
use crate::request::Caller;
use crate::state::AppState;
use axum::Json;
use axum::extract::{FromRequest, Multipart, Request};
use axum::http::StatusCode;
use domain::error::Code;
use domain::principal::PrincipalType;
use domain::tables::column::ColumnType;
use domain::tables::import::{Completed, Extracted, ImportColumn, ImportCommand, ImportSession};
use domain::tables::scope::{ScopeKind, ScopeRef};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// Rows of the preview.
const PREVIEW_ROWS: usize = 20;

/// The import routes (department mount only).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(extract))
        .routes(routes!(session))
        .routes(routes!(map::map))
}

/// A column of the uploaded file.
#[derive(Debug, Serialize, ToSchema)]
pub struct ImportColumnResponse {
    /// Position in the file (0-based): a mapping's `source`.
    pub index: usize,
    /// Its header.
    pub header: String,
    /// The type every non-empty value fits (string, text, integer, float, boolean,
    /// date or datetime).
    pub inferred_type: String,
}

/// An import session.
#[derive(Debug, Serialize, ToSchema)]
pub struct ImportSessionResponse {
    /// The session: `.../import/{sid}`.
    pub sid: Uuid,
    /// The department.
    pub department_id: Uuid,
    /// The file's name.
    pub file_name: String,
    /// `csv` or `xlsx`.
    pub format: String,
    /// The worksheet read (XLSX: the first).
    pub sheet: Option<String>,
    /// The file's columns.
    pub columns: Vec<ImportColumnResponse>,
    /// The first 20 rows (cells as JSON values, null when empty).
    #[schema(value_type = Vec<Vec<Object>>)]
    pub preview: Vec<Vec<Value>>,
    /// Data rows in the file.
    pub total_rows: usize,
    /// `extracted`, or `imported` once mapped.
    pub state: String,
    /// The table the rows went into (once imported).
    pub table_id: Option<Uuid>,
    /// Records created (once imported).
    pub imported: Option<usize>,
    /// Whether the import created the table.
    pub created_table: Option<bool>,
}

impl ImportSessionResponse {
    fn of(extracted: &Extracted, completed: Option<&Completed>) -> Self {
        Self {
            sid: extracted.sid,
            department_id: extracted.department_id,
            file_name: extracted.file_name.clone(),
            format: extracted.format.clone(),
            sheet: extracted.sheet.clone(),
            columns: extracted
                .columns
                .iter()
                .map(|c| ImportColumnResponse {
                    index: c.index,
                    header: c.header.clone(),
                    inferred_type: c.inferred_type.as_str().into(),
                })
                .collect(),
            preview: extracted.preview.clone(),
            total_rows: extracted.total_rows,
            state: if completed.is_some() {
                "imported"
            } else {
                "extracted"
            }
            .into(),
            table_id: completed.map(|c| c.table_id),
            imported: completed.map(|c| c.imported),
            created_table: completed.map(|c| c.created_table),
        }
    }
}

fn file_error(message: impl Into<String>) -> ApiError {
    ApiError::code(Code::ImportFileInvalid, message)
}

/// The department of the mount, entered by a user of its company (404 for another
/// company's or an unknown department, 403 for a social media client).
async fn department(caller: &Caller, mount: &Mount) -> ApiResult<(ScopeRef, bool)> {
    let scope = mount
        .scope(caller.principal.company_id)
        .filter(|s| s.kind == ScopeKind::Department)
        .ok_or(ApiError::NotFound)?;
    let facts = scope_facts(caller, scope)
        .await?
        .ok_or(ApiError::NotFound)?;
    if caller.principal.principal_type != PrincipalType::User {
        return Err(ApiError::Forbidden(
            "Insufficient permissions. (imports are made by users)",
        ));
    }
    let manages = facts.standing.manager || facts.standing.company_manager;
    Ok((scope, manages))
}

/// Uploads a CSV or XLSX file (multipart `file`, up to 1 MiB, 10,000 rows, 100
/// columns) and answers its columns, their inferred types and the first rows.
#[utoipa::path(post, path = "/import/extract", tag = "custom_tables",
    request_body(content_type = "multipart/form-data", description = "`file`: a CSV (UTF-8, first row the header) or XLSX file (its first worksheet)"),
    responses((status = 201, body = ImportSessionResponse)))]
async fn extract(
    caller: Caller,
    mount: Mount,
    request: Request,
) -> ApiResult<(StatusCode, Json<ImportSessionResponse>)> {
    let (scope, _) = department(&caller, &mount).await?;
    let multipart = Multipart::from_request(request, &())
        .await
        .map_err(|e| file_error(e.body_text()))?;
    let (file_name, bytes) = with_file_part(multipart, file_error, async |field| {
        let file_name = field.file_name().unwrap_or("upload.csv").to_string();
        let bytes = field.bytes().await.map_err(|e| file_error(e.body_text()))?;
        Ok((file_name, bytes))
    })
    .await?;
    // Reading a file is CPU work (an XLSX file is a ZIP of XML): off the runtime.
    let named = file_name.clone();
    let sheet = tokio::task::spawn_blocking(move || parse::parse(&named, &bytes))
        .await
        .map_err(ApiError::internal)?
        .map_err(file_error)?;
    let sid = Uuid::new_v4();
    let company = caller.principal.company_id;
    let rows_key = format!("imports/{company}/{sid}.json");
    let rows = serde_json::to_vec(&sheet.rows).map_err(ApiError::internal)?;
    caller
        .state
        .objects
        .put_bytes(&rows_key, rows.into())
        .await
        .map_err(ApiError::Internal)?;
    let columns = sheet
        .headers
        .iter()
        .enumerate()
        .map(|(index, header)| ImportColumn {
            index,
            header: header.clone(),
            inferred_type: parse::infer(sheet.rows.iter().map(|r| r[index].clone())),
        })
        .collect();
    let extracted = Extracted {
        sid,
        company_id: company,
        department_id: scope.id,
        uploaded_by: caller.principal.reference(),
        file_name,
        format: sheet.format.into(),
        sheet: sheet.sheet,
        columns,
        preview: sheet.rows.iter().take(PREVIEW_ROWS).cloned().collect(),
        total_rows: sheet.rows.len(),
        rows_key,
    };
    let committed = caller
        .command::<ImportSession>(sid, ImportCommand::Extract(Box::new(extracted)))
        .await?;
    let extracted = committed.state.extracted.ok_or(ApiError::NotFound)?;
    Ok((
        StatusCode::CREATED,
        Json(ImportSessionResponse::of(&extracted, None)),
    ))
}

/// The uploader's import session of this department.
async fn open_session(
    caller: &Caller,
    mount: &Mount,
) -> ApiResult<(ScopeRef, bool, ImportSession)> {
    let (scope, manages) = department(caller, mount).await?;
    let sid = mount.uuid("sid")?;
    let session = caller
        .state
        .bus
        .load::<ImportSession>(&sid.to_string())
        .await?;
    let mine = session.extracted.as_ref().is_some_and(|e| {
        e.department_id == scope.id
            && e.company_id == caller.principal.company_id
            && e.uploaded_by == caller.principal.reference()
    });
    if !mine {
        return Err(ApiError::NotFound);
    }
    Ok((scope, manages, session))
}

/// An import session: the file's columns, preview and, once mapped, where its rows
/// went (its uploader only; 404 for anyone else).
#[utoipa::path(get, path = "/import/{sid}", tag = "custom_tables",
    params(("sid" = Uuid, Path, description = "The session")),
    responses((status = 200, body = ImportSessionResponse)))]
async fn session(caller: Caller, mount: Mount) -> ApiResult<Json<ImportSessionResponse>> {
    let (_, _, session) = open_session(&caller, &mount).await?;
    let extracted = session.extracted.as_ref().ok_or(ApiError::NotFound)?;
    Ok(Json(ImportSessionResponse::of(
        extracted,
        session.completed.as_ref(),
    )))
}

/// Column types a new table of an import may take: values of these are checked
/// without the database.
pub const NEW_TABLE_TYPES: [ColumnType; 8] = [
    ColumnType::String,
    ColumnType::Text,
    ColumnType::Integer,
    ColumnType::Float,
    ColumnType::Boolean,
    ColumnType::Date,
    ColumnType::Datetime,
    ColumnType::Json,
];
