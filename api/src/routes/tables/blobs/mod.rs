//! Attachment files: the scope-id-free router `/{scopeName}/tables/{table_id}/blobs`
//! (spec section 1; gate CustomTableWriteRequired for uploads, read rows for
//! downloads).
//!
//! A file is streamed into the object store while its SHA-256 is computed, then
//! kept under a key of its table and digest (`attachments/<company>/<table>/<hex>`),
//! so the same bytes uploaded twice are stored once; each upload is an
//! [`OwnedObject`] of kind `attachment`. The blob id is the digest
//! (`sha256:<hex>`); attachment cells name it (see [`attach`]). A download is
//! served only through a record the caller reads that holds the file, and is
//! checked against the digest while it streams. The janitor removes files no
//! record holds once their last upload is `UNHELD_FILE_KEPT` old.

pub mod attach;

use super::gates::Operation;
use super::scope::{Mount, OpenTable, open_table};
use crate::admission;
use crate::download::{attachment, attachment_response};
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiQuery, invalid_file, with_file_part};
use crate::middleware::body_limit;
use crate::objects::PutError;
use crate::request::Caller;
use crate::state::AppState;
use axum::Json;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, FromRequest, Multipart, Request};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::from_fn_with_state;
use axum::response::Response;
use domain::error::Code;
use domain::objects::{ObjectCommand, ObjectKind, OwnedObject, StoredObject};
use domain::tables::TableError;
use domain::tables::column::{ColumnDef, ColumnType, MAX_FILE_BYTES};
use domain::tables::values::{is_blob_id, mime_allowed};
use projections::read_models::owned_objects::query as objects;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// Multipart framing allowed on top of the largest file.
const FRAMING_BYTES: usize = 64 << 10;

/// The attachment routes, with their own body guard (5 GiB of file).
pub fn router() -> OpenApiRouter<AppState> {
    let limit = MAX_FILE_BYTES as usize + FRAMING_BYTES;
    OpenApiRouter::new()
        .routes(routes!(upload_blob))
        .routes(routes!(download_blob))
        .layer(from_fn_with_state(limit, body_limit::guard))
        .layer(DefaultBodyLimit::max(limit))
}

/// Where the bytes of a table's file live.
pub fn key(company_id: Uuid, table_id: Uuid, blob_id: &str) -> String {
    let hex = blob_id.strip_prefix("sha256:").unwrap_or(blob_id);
    format!("attachments/{company_id}/{table_id}/{hex}")
}

/// Which column a file is for.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct BlobTarget {
    /// An attachment column (display name or internal key): the file is checked
    /// against its MIME types and per-file size before it is kept.
    pub column: Option<String>,
}

/// A stored file, ready to be put into an attachment cell as it is.
#[derive(Debug, Serialize, ToSchema)]
pub struct TableBlobResponse {
    /// `sha256:<hex>` of the bytes: what cells name as `blob_id`.
    pub blob_id: String,
    /// The part's file name.
    pub name: String,
    /// The part's content type (`application/octet-stream` when it had none).
    pub mime_type: String,
    /// Bytes.
    pub size: i64,
}

/// The attachment column the query names, among the columns the caller sees.
fn target_column<'a>(table: &'a OpenTable, reference: &str) -> ApiResult<&'a ColumnDef> {
    table
        .columns
        .iter()
        .find(|c| c.key == reference)
        .or_else(|| table.columns.iter().find(|c| c.name == reference))
        .filter(|c| c.column_type == ColumnType::Attachment)
        .ok_or_else(|| {
            ApiError::from(TableError::InvalidQuery(format!(
                "Column '{reference}' is not an attachment column of this table"
            )))
        })
}

/// Stores the multipart `file` of the table's attachments; the answer is the cell
/// item that names it.
#[utoipa::path(post, path = "/tables/{table_id}/blobs", tag = "custom_tables",
    params(("table_id" = Uuid, Path, description = "The table"), BlobTarget),
    request_body(content_type = "multipart/form-data", description = "`file`: the bytes (up to 5 GiB, or the column's `max_file_bytes`), with its file name and content type"),
    responses((status = 201, body = TableBlobResponse)))]
async fn upload_blob(
    caller: Caller,
    mount: Mount,
    ApiQuery(target): ApiQuery<BlobTarget>,
    request: Request,
) -> ApiResult<(StatusCode, Json<TableBlobResponse>)> {
    let table = open_table(&caller, &mount, Operation::WriteBlobs).await?;
    // The body is looked at only once the caller may write here.
    let multipart = Multipart::from_request(request, &())
        .await
        .map_err(|e| invalid_file(e.body_text()))?;
    let column = target
        .column
        .as_deref()
        .map(|c| target_column(&table, c))
        .transpose()?;
    let limit = column
        .and_then(|c| c.max_file_bytes)
        .map_or(MAX_FILE_BYTES, |max| max.min(MAX_FILE_BYTES)) as u64;
    let company_id = table.row.company_id;
    let incoming = format!(
        "attachments/{company_id}/{}/incoming/{}",
        table.row.id,
        Uuid::new_v4()
    );
    let objects_store = &caller.state.objects;
    let (name, mime_type, written) = with_file_part(multipart, invalid_file, async |field| {
        let name = field.file_name().unwrap_or("file").to_string();
        let mime_type = field
            .content_type()
            .unwrap_or("application/octet-stream")
            .to_string();
        if name.is_empty() || name.chars().count() > 255 {
            return Err(invalid_file(
                "the file name must be 1..255 characters".into(),
            ));
        }
        if let Some(column) = column
            && !mime_allowed(column, &mime_type)
        {
            return Err(invalid_file(format!(
                "column '{}' does not allow {mime_type} files",
                column.name
            )));
        }
        let written = objects_store
            .put_stream(&incoming, field, limit)
            .await
            .map_err(|e| match e {
                PutError::TooLarge { limit } => ApiError::code(
                    Code::RequestTooLarge,
                    format!("the file is larger than {limit} bytes"),
                ),
                PutError::Body(message) => invalid_file(message),
                PutError::Store(e) => ApiError::Internal(e),
            })?;
        Ok((name, mime_type, written))
    })
    .await?;
    let key = key(company_id, table.row.id, &written.digest);
    // Held until the upload is recorded: the janitor cannot delete the bytes between
    // the rename and the record that keeps them.
    let _lock = admission::object_lock(caller.pool(), company_id, &key).await?;
    objects_store
        .rename(&incoming, &key)
        .await
        .map_err(ApiError::Internal)?;
    let object_id = Uuid::new_v4();
    let stored = StoredObject {
        object_id,
        company_id: Some(company_id),
        kind: ObjectKind::Attachment,
        digest: written.digest.clone(),
        byte_size: written.byte_size,
        key,
    };
    caller
        .command::<OwnedObject>(object_id, ObjectCommand::Record(stored))
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(TableBlobResponse {
            blob_id: written.digest,
            name,
            mime_type,
            size: written.byte_size as i64,
        }),
    ))
}

/// The bytes of a file a record the caller reads holds (in a column the caller
/// sees), as an attachment named as that cell names it. The bytes are checked
/// against the blob id while they stream; a mismatch cuts the response short.
#[utoipa::path(get, path = "/tables/{table_id}/blobs/{blob_id}", tag = "custom_tables",
    params(("table_id" = Uuid, Path, description = "The table"), ("blob_id" = String, Path, description = "`sha256:<hex>`, from an attachment cell")),
    responses((status = 200, description = "the file, as an attachment (`application/octet-stream`, `nosniff`)")))]
async fn download_blob(caller: Caller, mount: Mount) -> ApiResult<Response> {
    let table = open_table(&caller, &mount, Operation::ReadRows).await?;
    let blob_id = mount.param("blob_id")?;
    if !is_blob_id(blob_id) {
        return Err(ApiError::NotFound);
    }
    let name = table
        .handle()
        .blob_name(caller.pool(), &table.selection(), blob_id)
        .await
        .map_err(ApiError::Internal)?
        .ok_or(ApiError::NotFound)?;
    let key = key(table.row.company_id, table.row.id, blob_id);
    let (size, _) = objects::attachment(caller.pool(), table.row.company_id, &key)
        .await?
        .ok_or(ApiError::NotFound)?;
    let stream = caller
        .state
        .objects
        .get_verified(&key, None, blob_id, size as u64)
        .await
        .map_err(|_| ApiError::NotFound)?;
    let mut response = attachment_response(
        Body::from_stream(stream),
        "application/octet-stream",
        attachment(&name),
    );
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(size));
    if let Ok(etag) = HeaderValue::from_str(&format!("\"{blob_id}\"")) {
        headers.insert(header::ETAG, etag);
    }
    Ok(response)
}
