//! Attachment cells that name uploaded files: each `blob_id` must be a file of the
//! table that is still kept, uploaded within [`ATTACH_WITHIN`] or already held by a
//! record; its size is filled in (or must match). Runs before the cell's own
//! checks (MIME types, per-file size, count), which then see the real size.

use super::key;
use crate::error::ApiResult;
use crate::routes::tables::cells::invalid;
use crate::routes::tables::scope::OpenTable;
use domain::tables::column::{ATTACH_WITHIN, ColumnDef};
use domain::tables::values::is_blob_id;
use projections::read_models::owned_objects::query as objects;
use projections::read_models::tables::query as tables;
use serde_json::{Value, json};

/// The cell with the size of every named file filled in; 400 for a file the
/// table does not hold or a size that is not the file's.
pub async fn complete(table: &OpenTable, column: &ColumnDef, value: &Value) -> ApiResult<Value> {
    let mut value = value.clone();
    let items: Vec<&mut Value> = match &mut value {
        Value::Array(items) => items.iter_mut().collect(),
        item @ Value::Object(_) => vec![item],
        _ => return Ok(value),
    };
    let pool = table.caller.pool();
    for item in items {
        let Some(fields) = item.as_object_mut() else {
            continue;
        };
        let Some(blob_id) = fields
            .get("blob_id")
            .and_then(Value::as_str)
            .filter(|b| is_blob_id(b))
            .map(str::to_string)
        else {
            continue;
        };
        let location = key(table.row.company_id, table.row.id, &blob_id);
        let Some((size, uploaded_at)) =
            objects::attachment(pool, table.row.company_id, &location).await?
        else {
            return Err(invalid(
                column,
                format!("{blob_id} is not a file uploaded to this table"),
            ));
        };
        let stale = uploaded_at < table.caller.ctx.time - ATTACH_WITHIN;
        if stale && !tables::blob_held(pool, table.row.id, &blob_id).await? {
            return Err(invalid(
                column,
                format!(
                    "{blob_id} was uploaded more than an hour ago and no record holds it; upload it again"
                ),
            ));
        }
        match fields.get("size") {
            None | Some(Value::Null) => {
                fields.insert("size".into(), json!(size));
            }
            Some(given) if given.as_i64() != Some(size) => {
                return Err(invalid(
                    column,
                    format!("size {given} is not the size of {blob_id} ({size} bytes)"),
                ));
            }
            Some(_) => {}
        }
    }
    Ok(value)
}
