//! The cells of one column across a batch of records, as typed arrays for one
//! `unnest` of the write statement. A cell is converted here when the result is
//! certain to equal what its lenient SQL converter (`physical::converter`) gives:
//! a string in a text column, an integer in an integer column, a valid date, an
//! RFC 3339 instant of at most microsecond precision, a list of strings, a UUID.
//! Anything else travels as JSON and goes through that SQL function, so the
//! common case costs no SQL function call per cell and the rare one keeps the
//! converter's exact behaviour. `tests/cell_conversion.rs` checks the equality
//! against PostgreSQL.

use super::physical::converter;
use chrono::{DateTime, NaiveDate, NaiveTime, TimeZone, Utc};
use domain::tables::column::ColumnType;
use serde_json::Value;
use sqlx::Postgres;
use sqlx::postgres::PgArguments;
use sqlx::query::Query;
use uuid::Uuid;

/// A column's values converted on this side (`None`: empty, or left to SQL).
enum Typed {
    /// Text, or the text of an array literal that SQL casts (`cast`).
    Text {
        values: Vec<Option<String>>,
        convert: fn(&Value) -> Option<String>,
        cast: &'static str,
    },
    BigInt(Vec<Option<i64>>),
    Float(Vec<Option<f64>>),
    Boolean(Vec<Option<bool>>),
    Date(Vec<Option<NaiveDate>>),
    Instant(Vec<Option<DateTime<Utc>>>),
    Json(Vec<Option<Value>>),
    /// Every value goes through the SQL converter (intervals).
    SqlOnly,
}

/// One column's cells of a batch: the typed values, the JSON of the cells left to
/// the SQL converter, and (for updates) whether the record's change has the cell.
pub struct ColumnCells {
    column_type: ColumnType,
    typed: Typed,
    json: Vec<Option<Value>>,
    present: Option<Vec<bool>>,
}

impl ColumnCells {
    /// The cells of new records: a record without the cell has it empty.
    pub fn created(t: ColumnType) -> Self {
        Self::new(t, None)
    }

    /// The cells of changes: a change without the cell keeps the stored one.
    pub fn changed(t: ColumnType) -> Self {
        Self::new(t, Some(Vec::new()))
    }

    fn new(t: ColumnType, present: Option<Vec<bool>>) -> Self {
        use ColumnType as T;
        let text = |convert: fn(&Value) -> Option<String>, cast| Typed::Text {
            values: Vec::new(),
            convert,
            cast,
        };
        let typed = match t {
            T::Integer => Typed::BigInt(Vec::new()),
            T::Float => Typed::Float(Vec::new()),
            T::Boolean => Typed::Boolean(Vec::new()),
            T::Date => Typed::Date(Vec::new()),
            T::Datetime => Typed::Instant(Vec::new()),
            T::MultiSelect => text(|v| text_list(v).map(|l| array_literal(&l)), "::text[]"),
            T::Link => text(|v| id_list(v).map(|l| array_literal(&l)), "::uuid[]"),
            T::Attachment | T::Json => Typed::Json(Vec::new()),
            T::Interval => Typed::SqlOnly,
            T::User | T::SocialClient => text(id_text, ""),
            T::Principal => text(principal, ""),
            _ => text(plain_text, ""),
        };
        Self {
            column_type: t,
            typed,
            json: Vec::new(),
            present,
        }
    }

    /// Adds the next record's cell; `None` when the record does not have it.
    pub fn push(&mut self, cell: Option<&Value>) {
        if let Some(present) = &mut self.present {
            present.push(cell.is_some());
        }
        let cell = cell.filter(|v| !v.is_null());
        let converted = self.typed.push(cell);
        self.json.push(cell.filter(|_| !converted).cloned());
    }

    /// The SQL array types of the parameters [`bind`](Self::bind) adds, in order.
    pub fn parameter_types(&self) -> Vec<&'static str> {
        let mut types = match self.typed {
            Typed::Text { .. } => vec!["text[]"],
            Typed::BigInt(_) => vec!["bigint[]"],
            Typed::Float(_) => vec!["float8[]"],
            Typed::Boolean(_) => vec!["boolean[]"],
            Typed::Date(_) => vec!["date[]"],
            Typed::Instant(_) => vec!["timestamptz[]"],
            Typed::Json(_) => vec!["jsonb[]"],
            Typed::SqlOnly => vec![],
        };
        types.push("jsonb[]");
        if self.present.is_some() {
            types.push("boolean[]");
        }
        types
    }

    /// Whether the change has the cell, in SQL (changes only), given the names of
    /// its `unnest` columns in the order of [`parameter_types`](Self::parameter_types).
    pub fn present_sql<'n>(&self, names: &'n [String]) -> Option<&'n str> {
        self.present
            .as_ref()
            .and_then(|_| names.last())
            .map(String::as_str)
    }

    /// The cell's value in SQL, given the names of its `unnest` columns in the
    /// order of [`parameter_types`](Self::parameter_types).
    pub fn value_sql(&self, names: &[String]) -> String {
        let conv = converter(self.column_type);
        match &self.typed {
            Typed::SqlOnly => format!("{conv}({})", names[0]),
            typed => {
                let cast = match typed {
                    Typed::Text { cast, .. } => cast,
                    _ => "",
                };
                let (value, json) = (&names[0], &names[1]);
                format!("CASE WHEN {json} IS NULL THEN {value}{cast} ELSE {conv}({json}) END")
            }
        }
    }

    /// Binds the parameters of [`parameter_types`](Self::parameter_types).
    pub fn bind<'q>(
        self,
        query: Query<'q, Postgres, PgArguments>,
    ) -> Query<'q, Postgres, PgArguments> {
        let query = match self.typed {
            Typed::Text { values, .. } => query.bind(values),
            Typed::BigInt(values) => query.bind(values),
            Typed::Float(values) => query.bind(values),
            Typed::Boolean(values) => query.bind(values),
            Typed::Date(values) => query.bind(values),
            Typed::Instant(values) => query.bind(values),
            Typed::Json(values) => query.bind(values),
            Typed::SqlOnly => query,
        };
        let query = query.bind(self.json);
        match self.present {
            Some(present) => query.bind(present),
            None => query,
        }
    }
}

impl Typed {
    /// Adds a cell (`None`: empty); false when it is left to the SQL converter (an
    /// empty typed value stands in).
    fn push(&mut self, cell: Option<&Value>) -> bool {
        /// Pushes the conversion of the cell; false when a cell did not convert.
        fn put<T>(
            values: &mut Vec<Option<T>>,
            cell: Option<&Value>,
            convert: impl Fn(&Value) -> Option<T>,
        ) -> bool {
            let converted = cell.map(convert);
            let done = !matches!(converted, Some(None));
            values.push(converted.flatten());
            done
        }
        match self {
            Typed::Text {
                values, convert, ..
            } => put(values, cell, *convert),
            Typed::BigInt(values) => put(values, cell, bigint),
            Typed::Float(values) => put(values, cell, float),
            Typed::Boolean(values) => put(values, cell, boolean),
            Typed::Date(values) => put(values, cell, |v| v.as_str().and_then(date)),
            Typed::Instant(values) => put(values, cell, |v| v.as_str().and_then(instant)),
            Typed::Json(values) => put(values, cell, |v| Some(v.clone())),
            Typed::SqlOnly => false,
        }
    }
}

/// `ct_as_text` of a string or a boolean.
fn plain_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// `ct_as_bigint` of a 64-bit integer or a boolean.
fn bigint(value: &Value) -> Option<i64> {
    match value {
        Value::Number(n) => n.as_i64(),
        Value::Bool(b) => Some(i64::from(*b)),
        _ => None,
    }
}

/// `ct_as_float8` of a number whose decimal text PostgreSQL reads back as the
/// same double (far from the range limits), or a boolean.
fn float(value: &Value) -> Option<f64> {
    const EXACT_INTEGER: u64 = 1 << 53;
    match value {
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64()?;
            // Zero has no sign in `numeric`.
            (f == 0.0 || (1e-300..1e299).contains(&f.abs())).then_some(f + 0.0)
        }
        Value::Number(n) => n
            .as_i64()
            .filter(|i| i.unsigned_abs() <= EXACT_INTEGER)
            .map(|i| i as f64),
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        _ => None,
    }
}

/// `ct_as_boolean` of a boolean, an integer or an ASCII word.
fn boolean(value: &Value) -> Option<bool> {
    match value {
        Value::Bool(b) => Some(*b),
        Value::Number(n) => n.as_i64().map(|i| i != 0),
        Value::String(s) if s.is_ascii() => {
            match s.trim_matches(' ').to_ascii_lowercase().as_str() {
                "true" | "yes" | "y" | "t" | "1" => Some(true),
                "false" | "no" | "n" | "f" | "0" => Some(false),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Two ASCII digits at `at`.
fn two_digits(s: &[u8], at: usize) -> Option<u32> {
    let (a, b) = (*s.get(at)?, *s.get(at + 1)?);
    (a.is_ascii_digit() && b.is_ascii_digit())
        .then(|| u32::from(a - b'0') * 10 + u32::from(b - b'0'))
}

/// `ct_as_date` of `YYYY-MM-DD`, alone or followed by `T`, naming a real day.
fn date(s: &str) -> Option<NaiveDate> {
    let b = s.as_bytes();
    let shape = b.len() >= 10 && b[4] == b'-' && b[7] == b'-' && (b.len() == 10 || b[10] == b'T');
    if !shape {
        return None;
    }
    let year = two_digits(b, 0)? * 100 + two_digits(b, 2)?;
    let (month, day) = (two_digits(b, 5)?, two_digits(b, 8)?);
    if year == 0 || month == 0 || day == 0 {
        return None;
    }
    NaiveDate::from_ymd_opt(year as i32, month, day)
}

/// `ct_as_timestamptz` of a date (midnight UTC) or
/// `YYYY-MM-DDTHH:MM:SS[.f{1,6}](Z|±HH:MM)` with an offset up to 14 hours: the
/// shape the converter's pattern accepts, checked here, then read by chrono. More
/// fraction digits are left to PostgreSQL's rounding; PostgreSQL refuses offsets
/// past 15 hours, and real ones stop at 14.
fn instant(s: &str) -> Option<DateTime<Utc>> {
    let day = date(s)?;
    let b = s.as_bytes();
    if b.len() == 10 {
        return Some(Utc.from_utc_datetime(&day.and_time(NaiveTime::MIN)));
    }
    let fraction = match b.get(19) {
        Some(b'.') => b[20..].iter().take_while(|c| c.is_ascii_digit()).count() + 1,
        _ => 0,
    };
    let offset = b.get(19 + fraction..)?;
    let shaped = b.len() >= 20
        && b[13] == b':'
        && b[16] == b':'
        && two_digits(b, 11).is_some_and(|h| h <= 23)
        && two_digits(b, 14).is_some_and(|m| m <= 59)
        && two_digits(b, 17).is_some_and(|s| s <= 59)
        && fraction != 1
        && fraction <= 7
        && match offset {
            [b'Z'] => true,
            [b'+' | b'-', _, _, b':', _, _] => {
                two_digits(offset, 1).is_some_and(|h| h <= 14)
                    && two_digits(offset, 4).is_some_and(|m| m <= 59)
            }
            _ => false,
        };
    shaped
        .then(|| DateTime::parse_from_rfc3339(s).ok())
        .flatten()
        .map(|at| at.with_timezone(&Utc))
}

/// `ct_as_text_array` of a list of strings (empty items skipped) or of a
/// comma-separated string; `None` when the list would be empty (an empty cell,
/// which the converter gives too) or has items of other kinds.
fn text_list(value: &Value) -> Option<Vec<String>> {
    let items: Vec<String> = match value {
        Value::Array(items) => items
            .iter()
            .filter(|item| !item.is_null())
            .map(|item| item.as_str().map(str::to_string))
            .collect::<Option<_>>()?,
        Value::String(s) => s
            .split(',')
            .map(|part| part.trim_matches(' '))
            .filter(|part| !part.is_empty())
            .map(str::to_string)
            .collect(),
        _ => return None,
    };
    (!items.is_empty()).then_some(items)
}

/// A hyphenated UUID in ASCII hex, as the converters' pattern accepts it.
fn uuid_text(s: &str) -> Option<Uuid> {
    let hyphens = [8, 13, 18, 23];
    let b = s.as_bytes();
    let shaped = b.len() == 36
        && b.iter().enumerate().all(|(i, c)| {
            if hyphens.contains(&i) {
                *c == b'-'
            } else {
                c.is_ascii_hexdigit()
            }
        });
    shaped.then(|| Uuid::parse_str(s).ok()).flatten()
}

/// `ct_as_uuid_array` when every item of the list is a UUID.
fn id_list(value: &Value) -> Option<Vec<String>> {
    text_list(value)?
        .iter()
        .map(|item| uuid_text(item).map(|id| id.to_string()))
        .collect()
}

/// `ct_as_id_text` of a UUID string.
fn id_text(value: &Value) -> Option<String> {
    uuid_text(value.as_str()?).map(|id| id.to_string())
}

/// `ct_as_principal` of `user:`, `smc:` or `room:` and a UUID (any case).
fn principal(value: &Value) -> Option<String> {
    let s = value.as_str()?;
    let (kind, id) = s.split_once(':')?;
    let kind = kind.to_ascii_lowercase();
    let known = matches!(kind.as_str(), "user" | "smc" | "room");
    known
        .then(|| uuid_text(id).map(|id| format!("{kind}:{id}")))
        .flatten()
}

/// A PostgreSQL array literal of `items`, each quoted.
fn array_literal(items: &[String]) -> String {
    let quoted: Vec<String> = items
        .iter()
        .map(|item| format!("\"{}\"", item.replace('\\', "\\\\").replace('"', "\\\"")))
        .collect();
    format!("{{{}}}", quoted.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn instants_convert_offsets_and_fractions() {
        let at = instant("2026-01-01T10:00:00.25+05:30").unwrap();
        assert_eq!(at.to_rfc3339(), "2026-01-01T04:30:00.250+00:00");
        assert_eq!(instant("2026-02-30T10:00:00Z"), None);
        assert_eq!(instant("2026-01-01T10:00:00.1234567Z"), None);
        assert!(instant("2026-03-04").is_some());
    }

    #[test]
    fn lists_and_literals_quote_items() {
        let list = text_list(&json!(["a\"b", null, "c\\d"])).unwrap();
        assert_eq!(array_literal(&list), r#"{"a\"b","c\\d"}"#);
        assert_eq!(text_list(&json!(" , ")), None);
        assert_eq!(
            principal(&json!("USER:0000000A-0000-0000-0000-000000000000")).as_deref(),
            Some("user:0000000a-0000-0000-0000-000000000000")
        );
        assert_eq!(
            principal(&json!("group:0000000a-0000-0000-0000-000000000000")),
            None
        );
    }
}
