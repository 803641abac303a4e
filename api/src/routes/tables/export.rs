//! `POST .../records/export`: every matching record as CSV or XLSX, streamed.
//!
//! Rows come from one query whose result the server sends as the export consumes it
//! (so memory stays flat however large the table). CSV is written and sent in chunks
//! of 500 rows as they arrive. XLSX rows go to a constant-memory worksheet (a
//! temporary file) as they arrive, and the zip archive is written into the response
//! as it is produced once every row is in.

use super::gates::Operation;
use super::scope::{Mount, OpenTable, open_table};
use super::selection::{self, Query, SortSpec};
use crate::error::ApiResult;
use crate::extract::ApiJson;
use crate::request::Caller;
use crate::state::AppState;
use axum::body::{Body, Bytes};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use futures::future::BoxFuture;
use projections::read_models::tables::read::{RecordRow, Selection};
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::mpsc;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// The export route.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(export_records))
}

/// Rows per CSV chunk.
const CHUNK_ROWS: usize = 500;

/// The file format.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ExportFormat {
    /// RFC 4180 CSV, UTF-8.
    Csv,
    /// Office Open XML workbook.
    Xlsx,
}

/// The export body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordExport {
    /// `csv` or `xlsx`.
    pub format: ExportFormat,
    /// Row filter (as in search).
    #[schema(value_type = Option<Object>)]
    pub filter: Option<Value>,
    /// Substring over string and text columns.
    pub q: Option<String>,
    /// Sort keys.
    pub sort: Option<Vec<SortSpec>>,
    /// Columns to export (internal keys or display names).
    pub columns: Option<Vec<String>>,
    /// A stored view to export.
    pub view_id: Option<Uuid>,
}

/// The text of a cell: strings as they are, lists and objects as JSON, principals
/// as their tagged string.
fn cell_text(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Bool(_) | Value::Number(_) => value.to_string(),
        other => other.to_string(),
    }
}

fn header_row(table: &OpenTable, selection: &Selection) -> Vec<String> {
    let mut names: Vec<String> = ["id", "created_at", "updated_at", "created_by"]
        .map(String::from)
        .to_vec();
    names.extend(
        table
            .handle()
            .projected(selection.projection.as_deref())
            .into_iter()
            .map(|c| c.name),
    );
    names
}

fn row_texts(row: &RecordRow) -> Vec<String> {
    let mut texts = vec![
        row.id.to_string(),
        domain::tables::values::format_datetime(row.created_at),
        domain::tables::values::format_datetime(row.updated_at),
        row.created_by.clone(),
    ];
    texts.extend(row.cells.iter().map(|(_, v)| cell_text(v)));
    texts
}

type Chunk = Result<Bytes, std::io::Error>;

async fn write_csv(
    state: AppState,
    table: OpenTable,
    selection: Selection,
    tx: mpsc::Sender<Chunk>,
) -> anyhow::Result<()> {
    let mut conn = state.pool.acquire().await?;
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record(header_row(&table, &selection))?;
    let mut rows = 0usize;
    let mut failed: Option<csv::Error> = None;
    table
        .handle()
        .scan(&mut conn, &selection, |row| -> BoxFuture<'static, bool> {
            if let Err(error) = writer.write_record(row_texts(&row)) {
                failed = Some(error);
                return Box::pin(async { false });
            }
            rows += 1;
            if !rows.is_multiple_of(CHUNK_ROWS) {
                return Box::pin(async { true });
            }
            let full = std::mem::replace(&mut writer, csv::Writer::from_writer(Vec::new()));
            let chunk = match full.into_inner() {
                Ok(bytes) => bytes,
                Err(_) => return Box::pin(async { false }),
            };
            let tx = tx.clone();
            Box::pin(async move { tx.send(Ok(Bytes::from(chunk))).await.is_ok() })
        })
        .await?;
    if let Some(error) = failed {
        return Err(error.into());
    }
    let rest = writer.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?;
    if !rest.is_empty() {
        let _ = tx.send(Ok(Bytes::from(rest))).await;
    }
    Ok(())
}

/// Data rows one XLSX sheet holds under its header (Excel's 1,048,576 rows): the
/// rows past it go on in a next sheet, under the header again.
const SHEET_ROWS: u32 = 1_048_575;

/// Characters (UTF-16 units) an XLSX cell holds.
const CELL_UNITS: usize = 32_767;

/// A text as an XLSX cell takes it: a longer one is cut, ending in `…` (the CSV
/// export keeps it whole).
fn xlsx_text(text: &str) -> std::borrow::Cow<'_, str> {
    if text.len() <= CELL_UNITS || text.encode_utf16().count() <= CELL_UNITS {
        return text.into();
    }
    let mut units = 0;
    let kept: String = text
        .chars()
        .take_while(|c| {
            units += c.len_utf16();
            units < CELL_UNITS
        })
        .collect();
    format!("{kept}…").into()
}

/// Adds a sheet holding the header row.
fn add_sheet(
    workbook: &mut rust_xlsxwriter::Workbook,
    headers: &[String],
) -> Result<(), rust_xlsxwriter::XlsxError> {
    // Rows go to a temporary file as they are written, so memory stays flat.
    let sheet = workbook.add_worksheet_with_constant_memory()?;
    for (col, name) in headers.iter().enumerate() {
        sheet.write_string(0, col as u16, name)?;
    }
    Ok(())
}

async fn write_xlsx(
    state: AppState,
    table: OpenTable,
    selection: Selection,
    tx: mpsc::Sender<Chunk>,
) -> anyhow::Result<()> {
    let mut conn = state.pool.acquire().await?;
    let mut workbook = rust_xlsxwriter::Workbook::new();
    let headers = header_row(&table, &selection);
    add_sheet(&mut workbook, &headers)?;
    let (mut sheets, mut row_index) = (1, 0);
    let mut failed = None;
    table
        .handle()
        .scan(&mut conn, &selection, |row| -> BoxFuture<'static, bool> {
            let mut write = || {
                if row_index == SHEET_ROWS {
                    add_sheet(&mut workbook, &headers)?;
                    (sheets, row_index) = (sheets + 1, 0);
                }
                row_index += 1;
                let sheet = workbook.worksheet_from_index(sheets - 1)?;
                for (col, text) in row_texts(&row).iter().enumerate() {
                    let value = row.cells.get(col.wrapping_sub(4)).map(|(_, v)| v);
                    match value {
                        Some(Value::Number(n)) if col >= 4 => {
                            let n = n.as_f64().unwrap_or_default();
                            sheet.write_number(row_index, col as u16, n)?;
                        }
                        Some(Value::Bool(b)) if col >= 4 => {
                            sheet.write_boolean(row_index, col as u16, *b)?;
                        }
                        _ => {
                            sheet.write_string(row_index, col as u16, xlsx_text(text))?;
                        }
                    }
                }
                Ok::<_, rust_xlsxwriter::XlsxError>(())
            };
            let written = write();
            let go_on = written.is_ok();
            failed = written.err();
            Box::pin(async move { go_on })
        })
        .await?;
    if let Some(error) = failed {
        return Err(error.into());
    }
    // The zip is written straight into the response as it is produced.
    tokio::task::spawn_blocking(move || {
        let writer = std::io::BufWriter::with_capacity(64 * 1024, ChannelWriter(tx));
        workbook.save_to_writer(writer)
    })
    .await??;
    Ok(())
}

/// Hands bytes written by a blocking writer to the response stream.
struct ChannelWriter(mpsc::Sender<Chunk>);

impl std::io::Write for ChannelWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .blocking_send(Ok(Bytes::copy_from_slice(buf)))
            .map_err(|_| {
                std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the client went away")
            })?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Exports every matching record (spec: CSV and XLSX, streamed).
#[utoipa::path(post, path = "/tables/{table_id}/records/export", tag = "custom_tables", request_body = RecordExport,
    params(("table_id" = Uuid, Path, description = "The table")),
    responses((status = 200, description = "The file (text/csv or XLSX)", content_type = "text/csv")))]
async fn export_records(
    caller: Caller,
    mount: Mount,
    ApiJson(body): ApiJson<RecordExport>,
) -> ApiResult<Response> {
    let table = open_table(&caller, &mount, Operation::ReadRows).await?;
    let query = Query {
        filter: body.filter,
        q: body.q,
        sort: body.sort,
        columns: body.columns,
        view_id: body.view_id,
    };
    let selection = selection::resolve(&caller.state, &table, query).await?;
    let (tx, rx) = mpsc::channel::<Chunk>(8);
    let file = sanitize(&table.row.name);
    let (content_type, extension) = match body.format {
        ExportFormat::Csv => ("text/csv; charset=utf-8", "csv"),
        ExportFormat::Xlsx => (
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            "xlsx",
        ),
    };
    let format = body.format;
    let runtime = caller.state.runtime.clone();
    runtime.spawn(async move {
        let failure = tx.clone();
        let result = match format {
            ExportFormat::Csv => write_csv(caller.state, table, selection, tx).await,
            ExportFormat::Xlsx => write_xlsx(caller.state, table, selection, tx).await,
        };
        if let Err(error) = result {
            tracing::error!(error = format!("{error:#}"), "export failed");
            let _ = failure
                .send(Err(std::io::Error::other("export failed")))
                .await;
        }
    });
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|chunk| (chunk, rx))
    });
    let disposition = format!("attachment; filename=\"{file}.{extension}\"");
    Ok((
        [
            (header::CONTENT_TYPE, content_type.to_string()),
            (header::CONTENT_DISPOSITION, disposition),
        ],
        Body::from_stream(stream),
    )
        .into_response())
}

/// A file name from a table name (ASCII letters, digits, `-` and `_`).
fn sanitize(name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.trim_matches('_').is_empty() {
        "export".into()
    } else {
        clean
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_xlsx_cell_holds_at_most_32767_utf16_units() {
        let short = "x".repeat(CELL_UNITS);
        assert_eq!(xlsx_text(&short), short);
        let long = xlsx_text(&"x".repeat(40_000)).into_owned();
        assert_eq!(long.encode_utf16().count(), CELL_UNITS);
        assert!(long.ends_with('…'));
        // A character of two units is never split.
        let wide = xlsx_text(&"😀".repeat(20_000)).into_owned();
        assert!(wide.encode_utf16().count() <= CELL_UNITS);
        assert!(wide.ends_with("😀…"));
    }
}
