//! Typed cells back to their canonical JSON form.

use chrono::{DateTime, NaiveDate, Utc};
use domain::tables::column::{ColumnDef, ColumnType};
use domain::tables::values::{format_datetime, format_duration};
use serde_json::{Value, json};
use sqlx::Row;
use sqlx::postgres::PgRow;
use sqlx::postgres::types::PgInterval;
use uuid::Uuid;

/// One record as read.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordRow {
    /// Id.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// The creator (`user:<id>` or `social_media_client:<id>`).
    pub created_by: String,
    /// The selection's per-row flag (whether the caller may edit it), when asked.
    pub flag: Option<bool>,
    /// Cells of the selected columns, in column order (`null` for empty).
    pub cells: Vec<(ColumnDef, Value)>,
}

pub(super) fn record(row: &PgRow, columns: &[ColumnDef]) -> anyhow::Result<RecordRow> {
    let mut cells = Vec::with_capacity(columns.len());
    for (i, column) in columns.iter().enumerate() {
        cells.push((
            column.clone(),
            decode_cell(row, 5 + i, column.value_type())?,
        ));
    }
    Ok(RecordRow {
        id: row.try_get(0)?,
        created_at: row.try_get(1)?,
        updated_at: row.try_get(2)?,
        created_by: row.try_get(3)?,
        flag: row.try_get(4)?,
        cells,
    })
}

/// Decodes the cell at `index` of a column of type `t`.
pub fn decode_cell(row: &PgRow, index: usize, t: ColumnType) -> anyhow::Result<Value> {
    use ColumnType as T;
    Ok(match t {
        T::Integer => json!(row.try_get::<Option<i64>, _>(index)?),
        T::Float => json!(row.try_get::<Option<f64>, _>(index)?),
        T::Boolean => json!(row.try_get::<Option<bool>, _>(index)?),
        T::Date => json!(
            row.try_get::<Option<NaiveDate>, _>(index)?
                .map(|d| d.format("%Y-%m-%d").to_string())
        ),
        T::Datetime => json!(
            row.try_get::<Option<DateTime<Utc>>, _>(index)?
                .map(format_datetime)
        ),
        T::MultiSelect => json!(row.try_get::<Option<Vec<String>>, _>(index)?),
        T::Link => json!(row.try_get::<Option<Vec<Uuid>>, _>(index)?),
        T::Attachment | T::Json => row
            .try_get::<Option<Value>, _>(index)?
            .unwrap_or(Value::Null),
        T::Interval => json!(row.try_get::<Option<PgInterval>, _>(index)?.map(|i| {
            let days = i64::from(i.months) * 30 + i64::from(i.days);
            format_duration(days * 86_400_000_000 + i.microseconds)
        })),
        _ => json!(row.try_get::<Option<String>, _>(index)?),
    })
}
