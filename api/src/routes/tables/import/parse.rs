//! Reading an uploaded CSV or XLSX file into rows of JSON cells, and the column
//! type every non-empty value of a column fits.

use calamine::{Data, Reader, Xlsx};
use domain::tables::column::ColumnType;
use serde_json::{Number, Value};
use std::collections::BTreeMap;
use std::io::Cursor;

/// Data rows a file may hold.
pub const MAX_ROWS: usize = 10_000;

/// Columns a file may hold.
pub const MAX_COLUMNS: usize = 100;

/// A parsed file: its header row and data rows (every row as long as the header).
pub struct Sheet {
    /// `csv` or `xlsx`.
    pub format: &'static str,
    /// The worksheet read (XLSX).
    pub sheet: Option<String>,
    /// Header cells (a blank header becomes `Column <n>`).
    pub headers: Vec<String>,
    /// Data rows.
    pub rows: Vec<Vec<Value>>,
}

/// Parses a file by its content (an XLSX file is a ZIP archive), else by its name.
pub fn parse(file_name: &str, bytes: &[u8]) -> Result<Sheet, String> {
    let xlsx = bytes.starts_with(b"PK\x03\x04");
    let lower = file_name.to_ascii_lowercase();
    let mut sheet = if xlsx {
        xlsx_rows(bytes)?
    } else if lower.ends_with(".csv") || lower.ends_with(".txt") || !lower.contains('.') {
        csv_rows(bytes)?
    } else {
        return Err(format!("'{file_name}' is neither a CSV nor an XLSX file"));
    };
    if sheet.headers.is_empty() {
        return Err("the file has no header row".into());
    }
    if sheet.headers.len() > MAX_COLUMNS {
        return Err(format!("the file has more than {MAX_COLUMNS} columns"));
    }
    if sheet.rows.len() > MAX_ROWS {
        return Err(format!("the file has more than {MAX_ROWS} data rows"));
    }
    for (i, header) in sheet.headers.iter_mut().enumerate() {
        if header.trim().is_empty() {
            *header = format!("Column {}", i + 1);
        } else {
            *header = header.trim().to_string();
        }
    }
    let width = sheet.headers.len();
    for (i, row) in sheet.rows.iter_mut().enumerate() {
        if row.iter().skip(width).any(|v| !v.is_null()) {
            return Err(format!("row {} has more cells than the header", i + 2));
        }
        row.resize(width, Value::Null);
    }
    Ok(sheet)
}

fn csv_rows(bytes: &[u8]) -> Result<Sheet, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "the CSV file is not UTF-8".to_string())?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(text.as_bytes());
    let mut records = reader.records();
    let headers: Vec<String> = match records.next() {
        Some(record) => record
            .map_err(|e| format!("CSV: {e}"))?
            .iter()
            .map(str::to_string)
            .collect(),
        None => Vec::new(),
    };
    let mut rows = Vec::new();
    for record in records {
        let record = record.map_err(|e| format!("CSV: {e}"))?;
        if record.iter().all(|c| c.trim().is_empty()) {
            continue;
        }
        rows.push(
            record
                .iter()
                .map(|c| match c.trim() {
                    "" => Value::Null,
                    text => Value::String(text.to_string()),
                })
                .collect(),
        );
        if rows.len() > MAX_ROWS {
            break;
        }
    }
    Ok(Sheet {
        format: "csv",
        sheet: None,
        headers,
        rows,
    })
}

/// Reads the first worksheet cell by cell: a worksheet's bounding box is never
/// allocated (one cell in A1 and one in XFD1048576 would make it 1.7e10 cells),
/// and reading stops as soon as the file holds more cells than the limits allow.
/// The header is the first row holding a cell; columns start at the leftmost one.
fn xlsx_rows(bytes: &[u8]) -> Result<Sheet, String> {
    let mut workbook: Xlsx<_> =
        Xlsx::new(Cursor::new(bytes.to_vec())).map_err(|e| format!("XLSX: {e}"))?;
    let name = workbook
        .sheet_names()
        .first()
        .cloned()
        .ok_or_else(|| "the XLSX file has no worksheet".to_string())?;
    let mut reader = workbook
        .worksheet_cells_reader(&name)
        .map_err(|e| format!("XLSX: {e}"))?;
    let mut cells: BTreeMap<u32, Vec<(u32, Value)>> = BTreeMap::new();
    let (mut read, mut first_column, mut last_column) = (0, u32::MAX, 0);
    while let Some(found) = reader.next_cell().map_err(|e| format!("XLSX: {e}"))? {
        let value = cell(&Data::from(found.get_value().clone()));
        if value.is_null() {
            continue;
        }
        read += 1;
        if read > (MAX_ROWS + 1) * MAX_COLUMNS {
            return Err(format!("the file has more than {MAX_ROWS} data rows"));
        }
        let (row, column) = found.get_position();
        first_column = first_column.min(column);
        last_column = last_column.max(column);
        if (last_column - first_column) as usize >= MAX_COLUMNS {
            return Err(format!("the file has more than {MAX_COLUMNS} columns"));
        }
        cells.entry(row).or_default().push((column, value));
        if cells.len() > MAX_ROWS + 1 {
            return Err(format!("the file has more than {MAX_ROWS} data rows"));
        }
    }
    let width = if cells.is_empty() {
        0
    } else {
        (last_column - first_column) as usize + 1
    };
    let mut rows = cells.into_values().map(|row| {
        let mut values = vec![Value::Null; width];
        for (column, value) in row {
            values[(column - first_column) as usize] = value;
        }
        values
    });
    let headers = rows
        .next()
        .map(|row| row.iter().map(text).collect())
        .unwrap_or_default();
    Ok(Sheet {
        format: "xlsx",
        sheet: Some(name),
        headers,
        rows: rows.collect(),
    })
}

fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A worksheet cell as JSON: numbers, booleans, text, and dates as ISO strings.
fn cell(data: &Data) -> Value {
    match data {
        Data::Int(i) => Value::from(*i),
        Data::Float(f) if f.fract() == 0.0 && f.abs() < 9e15 => Value::from(*f as i64),
        Data::Float(f) => Number::from_f64(*f).map_or(Value::Null, Value::Number),
        Data::Bool(b) => Value::Bool(*b),
        Data::String(s) if s.trim().is_empty() => Value::Null,
        Data::String(s) => Value::String(s.trim().to_string()),
        Data::DateTime(d) => match d.as_datetime() {
            Some(t) if t.time() == chrono::NaiveTime::MIN => {
                Value::String(t.date().format("%Y-%m-%d").to_string())
            }
            Some(t) => Value::String(
                t.and_utc()
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            ),
            None => Value::Null,
        },
        Data::DateTimeIso(s) | Data::DurationIso(s) => Value::String(s.clone()),
        Data::Error(_) | Data::Empty => Value::Null,
    }
}

/// A file cell as a value of a column of type `t`: a CSV cell is text, so text
/// that reads as the column's number or boolean becomes one, and a number or
/// boolean going into a text column becomes its text. Anything else is left for
/// the column's own check to accept or refuse.
pub fn coerce(t: ColumnType, value: Value) -> Value {
    let text = match &value {
        Value::String(s) => s.trim().to_string(),
        Value::Number(_) | Value::Bool(_) if matches!(t, ColumnType::String | ColumnType::Text) => {
            return Value::String(value.to_string());
        }
        _ => return value,
    };
    let parsed = match t {
        ColumnType::Integer => text.parse::<i64>().ok().map(Value::from),
        ColumnType::Float => text
            .parse::<f64>()
            .ok()
            .filter(|f| f.is_finite())
            .and_then(Number::from_f64)
            .map(Value::Number),
        ColumnType::Boolean => match text.to_ascii_lowercase().as_str() {
            "true" | "yes" | "1" => Some(Value::Bool(true)),
            "false" | "no" | "0" => Some(Value::Bool(false)),
            _ => None,
        },
        _ => None,
    };
    parsed.unwrap_or(value)
}

/// The type every non-empty value of a column fits: integer, float, boolean,
/// date, datetime, text (a value over 255 characters) or string.
pub fn infer(values: impl Iterator<Item = Value>) -> ColumnType {
    let mut kinds = [true; 5];
    let mut long = false;
    let mut any = false;
    for value in values.filter(|v| !v.is_null()) {
        any = true;
        let s = text(&value);
        long |= s.chars().count() > 255;
        let checks = [
            value.is_i64() || s.trim().parse::<i64>().is_ok(),
            value.is_number() || s.trim().parse::<f64>().is_ok_and(f64::is_finite),
            value.is_boolean()
                || matches!(s.trim().to_ascii_lowercase().as_str(), "true" | "false"),
            // As a date column checks its values: `2026-01-02`, never `2026-1-2`.
            s.trim().len() == 10 && chrono::NaiveDate::parse_from_str(s.trim(), "%Y-%m-%d").is_ok(),
            chrono::DateTime::parse_from_rfc3339(s.trim()).is_ok(),
        ];
        for (kind, fits) in kinds.iter_mut().zip(checks) {
            *kind &= fits;
        }
    }
    let order = [
        ColumnType::Integer,
        ColumnType::Float,
        ColumnType::Boolean,
        ColumnType::Date,
        ColumnType::Datetime,
    ];
    match kinds.iter().position(|k| *k) {
        Some(i) if any => order[i],
        _ if long => ColumnType::Text,
        _ => ColumnType::String,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn types_are_the_narrowest_every_value_fits() {
        let of = |values: Vec<Value>| infer(values.into_iter());
        assert_eq!(
            of(vec![json!("1"), json!(null), json!("-2")]),
            ColumnType::Integer
        );
        assert_eq!(of(vec![json!("1"), json!("2.5")]), ColumnType::Float);
        assert_eq!(of(vec![json!("true"), json!("FALSE")]), ColumnType::Boolean);
        assert_eq!(of(vec![json!("2026-01-02")]), ColumnType::Date);
        assert_eq!(
            of(vec![json!("2026-01-02T03:04:05Z")]),
            ColumnType::Datetime
        );
        assert_eq!(
            of(vec![json!("2026-01-02"), json!("x")]),
            ColumnType::String
        );
        assert_eq!(of(vec![json!(null)]), ColumnType::String);
        assert_eq!(of(vec![json!("x".repeat(300))]), ColumnType::Text);
    }

    #[test]
    fn file_cells_become_the_column_type_they_read_as() {
        assert_eq!(coerce(ColumnType::Integer, json!(" 42 ")), json!(42));
        assert_eq!(coerce(ColumnType::Integer, json!("4x")), json!("4x"));
        assert_eq!(coerce(ColumnType::Float, json!("1.5")), json!(1.5));
        assert_eq!(coerce(ColumnType::Boolean, json!("Yes")), json!(true));
        assert_eq!(coerce(ColumnType::String, json!(7)), json!("7"));
        assert_eq!(
            coerce(ColumnType::Date, json!("2026-01-02")),
            json!("2026-01-02")
        );
    }

    #[test]
    fn an_xlsx_worksheet_reads_as_typed_cells() {
        let mut book = rust_xlsxwriter::Workbook::new();
        let sheet = book.add_worksheet();
        sheet.write_string(0, 0, "Item").unwrap();
        sheet.write_string(0, 1, "Price").unwrap();
        sheet.write_string(1, 0, "bolt").unwrap();
        sheet.write_number(1, 1, 1.5).unwrap();
        let bytes = book.save_to_buffer().unwrap();
        let sheet = parse("stock.xlsx", &bytes).unwrap();
        assert_eq!(sheet.headers, ["Item", "Price"]);
        assert_eq!(sheet.rows, vec![vec![json!("bolt"), json!(1.5)]]);
    }

    #[test]
    fn csv_headers_and_rows_are_trimmed_and_squared() {
        let sheet = parse(
            "a.csv",
            "\u{feff}Name, Qty ,\nAda,3\n,,\nBob,4,extra\n".as_bytes(),
        )
        .unwrap();
        assert_eq!(sheet.headers, ["Name", "Qty", "Column 3"]);
        assert_eq!(
            sheet.rows,
            vec![
                vec![json!("Ada"), json!("3"), Value::Null],
                vec![json!("Bob"), json!("4"), json!("extra")]
            ]
        );
        assert!(parse("a.pdf", b"%PDF").is_err());
    }
}
