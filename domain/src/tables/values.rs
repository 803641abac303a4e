//! Cell values: type-aware validation and the canonical JSON form stored in events.
//!
//! Every write passes through [`normalize`], which checks a value against its column
//! and returns the canonical form (dates `YYYY-MM-DD`, datetimes RFC 3339 in UTC with
//! at most microseconds, durations `P…DT…H…M…S`, ids in lowercase). Facts that need
//! the directory or other tables (does the user exist, is the linked record live) are
//! returned as [`Reference`]s for the caller to check.

use super::column::{Cardinality, ColumnDef, ColumnType};
use chrono::{DateTime, NaiveDate, SubsecRound, Utc};
use serde_json::{Map, Value, json};
use uuid::Uuid;

/// Longest string or text cell when the column sets no `max_length`.
pub const DEFAULT_MAX_CHARS: usize = 100_000;
/// Largest JSON cell, in bytes of its compact form.
pub const MAX_JSON_BYTES: usize = 65_536;

/// Something a value names that must exist in the caller's company.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reference {
    /// A user.
    User(Uuid),
    /// A social media client.
    SocialClient(Uuid),
    /// A live (not archived) chatroom.
    Room(Uuid),
    /// A live record of a table.
    Record {
        /// The table.
        table_id: Uuid,
        /// The record.
        record_id: Uuid,
    },
}

/// The kind of a tagged principal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrincipalKind {
    /// `user:<id>`.
    User,
    /// `smc:<id>` (social media client).
    SocialClient,
    /// `room:<id>` (every member of a room).
    Room,
}

impl PrincipalKind {
    /// The tag.
    pub fn tag(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::SocialClient => "smc",
            Self::Room => "room",
        }
    }
}

/// Parses a tagged principal `user:<id>`, `smc:<id>` or `room:<id>`.
pub fn parse_principal(s: &str) -> Option<(PrincipalKind, Uuid)> {
    let (tag, id) = s.split_once(':')?;
    let kind = match tag {
        "user" => PrincipalKind::User,
        "smc" => PrincipalKind::SocialClient,
        "room" => PrincipalKind::Room,
        _ => return None,
    };
    Some((kind, parse_uuid(id)?))
}

fn parse_uuid(s: &str) -> Option<Uuid> {
    (s.len() == 36).then(|| Uuid::parse_str(s).ok()).flatten()
}

fn text(value: &Value, max: usize) -> Result<String, String> {
    let s = value.as_str().ok_or("expected a string")?;
    if s.contains('\0') {
        return Err("strings may not contain NUL characters".into());
    }
    if s.chars().count() > max {
        return Err(format!("at most {max} characters"));
    }
    Ok(s.to_string())
}

/// Formats seconds as an ISO 8601 duration with days, hours, minutes and seconds.
pub fn format_duration(total_micros: i64) -> String {
    let negative = total_micros < 0;
    let mut rest = total_micros.unsigned_abs();
    let micros = rest % 1_000_000;
    rest /= 1_000_000;
    let (days, hours, minutes, seconds) =
        (rest / 86_400, rest / 3_600 % 24, rest / 60 % 60, rest % 60);
    let mut out = String::from(if negative { "-P" } else { "P" });
    if days > 0 {
        out.push_str(&format!("{days}D"));
    }
    if hours > 0 || minutes > 0 || seconds > 0 || micros > 0 || days == 0 {
        out.push('T');
        if hours > 0 {
            out.push_str(&format!("{hours}H"));
        }
        if minutes > 0 {
            out.push_str(&format!("{minutes}M"));
        }
        if seconds > 0 || micros > 0 || (hours == 0 && minutes == 0) {
            if micros > 0 {
                let frac = format!("{micros:06}");
                out.push_str(&format!("{seconds}.{}S", frac.trim_end_matches('0')));
            } else {
                out.push_str(&format!("{seconds}S"));
            }
        }
    }
    out
}

/// Durations of more seconds than this are refused: the interval column stores
/// microseconds in 64 bits (and the SQL converter stops at the same bound).
const MAX_DURATION_SECONDS: i128 = 9_000_000_000_000;

/// Parses `PnW` or `PnDTnHnMnS` (each part optional, seconds may have up to six
/// decimals) or a number of seconds, into microseconds.
pub fn parse_duration(value: &Value) -> Option<i64> {
    if let Some(n) = value.as_f64() {
        return (n.is_finite() && n.abs() < 1e12).then(|| (n * 1e6).round() as i64);
    }
    let micros = iso_duration_micros(value.as_str()?)?;
    (micros.abs() < MAX_DURATION_SECONDS * 1_000_000).then_some(micros as i64)
}

/// The microseconds of an ISO 8601 duration, wide enough for nine-digit parts.
fn iso_duration_micros(s: &str) -> Option<i128> {
    let body = s.strip_prefix('P')?;
    if body.is_empty() || body.ends_with('T') {
        return None;
    }
    if let Some(weeks) = body.strip_suffix('W') {
        return number(weeks).map(|w| w * 7 * 86_400 * 1_000_000);
    }
    let (date, time) = body.split_once('T').unwrap_or((body, ""));
    let mut micros = 0;
    if !date.is_empty() {
        micros += number(date.strip_suffix('D')?)? * 86_400 * 1_000_000;
    }
    let mut rest = time;
    for (unit, factor) in [('H', 3_600_000_000), ('M', 60_000_000)] {
        if let Some(at) = rest.find(unit) {
            micros += number(&rest[..at])? * factor;
            rest = &rest[at + 1..];
        }
    }
    if !rest.is_empty() {
        let secs = rest.strip_suffix('S')?;
        let (whole, frac) = secs.split_once('.').unwrap_or((secs, ""));
        if frac.len() > 6 || !frac.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        micros += number(whole)? * 1_000_000 + format!("{frac:0<6}").parse::<i128>().ok()?;
    }
    Some(micros)
}

fn number(s: &str) -> Option<i128> {
    (!s.is_empty() && s.len() <= 9 && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// Checks a value against its column and returns its canonical form; `null` (and an
/// empty list) means an empty cell. References to check are appended to `refs`.
pub fn normalize(
    column: &ColumnDef,
    value: &Value,
    refs: &mut Vec<Reference>,
) -> Result<Value, String> {
    use ColumnType as T;
    if value.is_null() {
        return Ok(Value::Null);
    }
    let max_chars = column.max_length.map_or(DEFAULT_MAX_CHARS, |n| n as usize);
    Ok(match column.column_type {
        T::String | T::Text => Value::String(text(value, max_chars)?),
        T::Integer => match value.as_i64() {
            Some(n) => json!(n),
            None => return Err("expected an integer".into()),
        },
        T::Float => match value.as_f64() {
            Some(n) if value.is_number() && n.is_finite() => json!(n),
            _ => return Err("expected a number".into()),
        },
        T::Boolean => match value {
            Value::Bool(b) => Value::Bool(*b),
            _ => return Err("expected true or false".into()),
        },
        T::Date => {
            let s = value.as_str().ok_or("expected a date YYYY-MM-DD")?;
            let date = NaiveDate::parse_from_str(s, "%Y-%m-%d")
                .ok()
                .filter(|d| s.len() == 10 && d.format("%Y").to_string().len() == 4)
                .ok_or("expected a date YYYY-MM-DD")?;
            Value::String(date.format("%Y-%m-%d").to_string())
        }
        T::Datetime => {
            let s = value.as_str().ok_or("expected an RFC 3339 datetime")?;
            let at = DateTime::parse_from_rfc3339(s)
                .map_err(|_| "expected an RFC 3339 datetime with an offset")?
                .with_timezone(&Utc)
                .trunc_subsecs(6);
            Value::String(format_datetime(at))
        }
        T::Select => {
            let s = text(value, 64)?;
            if !column.options.iter().flatten().any(|o| *o == s) {
                return Err(format!("'{s}' is not an option"));
            }
            Value::String(s)
        }
        T::MultiSelect => {
            let items = value.as_array().ok_or("expected a list of options")?;
            let mut out: Vec<Value> = Vec::with_capacity(items.len());
            for item in items {
                let s = text(item, 64)?;
                if !column.options.iter().flatten().any(|o| *o == s) {
                    return Err(format!("'{s}' is not an option"));
                }
                if out.iter().any(|v| v == item) {
                    return Err(format!("'{s}' is listed twice"));
                }
                out.push(Value::String(s));
            }
            if out.is_empty() {
                Value::Null
            } else {
                Value::Array(out)
            }
        }
        T::Link => {
            let items: Vec<Value> = match value {
                Value::Array(items) => items.clone(),
                Value::String(_) => vec![value.clone()],
                _ => return Err("expected a list of record ids".into()),
            };
            let target = column.target_table_id.ok_or("link without target")?;
            let mut ids: Vec<Uuid> = Vec::with_capacity(items.len());
            for item in &items {
                let id = item
                    .as_str()
                    .and_then(parse_uuid)
                    .ok_or("expected record ids (UUIDs)")?;
                if ids.contains(&id) {
                    return Err(format!("record {id} is listed twice"));
                }
                ids.push(id);
            }
            if column.link_cardinality() == Cardinality::One && ids.len() > 1 {
                return Err("this link holds at most one record (cardinality one)".into());
            }
            refs.extend(ids.iter().map(|&record_id| Reference::Record {
                table_id: target,
                record_id,
            }));
            if ids.is_empty() {
                Value::Null
            } else {
                Value::Array(ids.iter().map(|id| Value::String(id.to_string())).collect())
            }
        }
        T::Attachment => attachment(column, value)?,
        T::Json => {
            if value.to_string().len() > MAX_JSON_BYTES {
                return Err(format!("at most {MAX_JSON_BYTES} bytes of JSON"));
            }
            value.clone()
        }
        T::User | T::SocialClient => {
            let id = value
                .as_str()
                .and_then(parse_uuid)
                .ok_or("expected an id (UUID)")?;
            refs.push(if column.column_type == T::User {
                Reference::User(id)
            } else {
                Reference::SocialClient(id)
            });
            Value::String(id.to_string())
        }
        T::Principal => {
            let s = value.as_str().ok_or("expected a tagged principal")?;
            let (kind, id) = parse_principal(s)
                .ok_or("expected exactly one tagged principal: user:<id>, smc:<id> or room:<id>")?;
            refs.push(match kind {
                PrincipalKind::User => Reference::User(id),
                PrincipalKind::SocialClient => Reference::SocialClient(id),
                PrincipalKind::Room => Reference::Room(id),
            });
            Value::String(format!("{}:{id}", kind.tag()))
        }
        T::Interval => {
            let micros = parse_duration(value).ok_or(
                "expected an ISO 8601 duration (PnDTnHnMnS or PnW) or a number of seconds",
            )?;
            Value::String(format_duration(micros))
        }
        T::Rollup | T::Lookup | T::Formula => return Err("computed columns are not written".into()),
    })
}

/// The canonical datetime form: RFC 3339, UTC, `Z`, microseconds only when present.
pub fn format_datetime(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}

/// Length of a blob id: `sha256:` and 64 hex digits.
const BLOB_ID_CHARS: usize = 71;

/// Whether `id` has the form of a blob id: `sha256:` and 64 lowercase hex digits
/// (the digest of the file's bytes; blobs are content-addressed per table).
pub fn is_blob_id(id: &str) -> bool {
    id.len() == BLOB_ID_CHARS
        && id.strip_prefix("sha256:").is_some_and(|hex| {
            hex.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        })
}

/// Attachment metadata: a list of `{name, mime_type, size, blob_id?}` (one object
/// alone is a list of one). A `blob_id` names an uploaded file of the table; the
/// write path checks it and its size before this runs.
fn attachment(column: &ColumnDef, value: &Value) -> Result<Value, String> {
    let items = match value {
        Value::Array(items) => items.clone(),
        Value::Object(_) => vec![value.clone()],
        _ => return Err("expected a list of {name, mime_type, size} objects".into()),
    };
    if let Some(max) = column.max_count
        && items.len() as i64 > max
    {
        return Err(format!("at most {max} file(s)"));
    }
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let Value::Object(fields) = item else {
            return Err("expected {name, mime_type, size} objects".into());
        };
        if let Some(extra) = fields
            .keys()
            .find(|k| !["name", "mime_type", "size", "blob_id"].contains(&k.as_str()))
        {
            return Err(format!("unknown attachment field '{extra}'"));
        }
        let name = fields
            .get("name")
            .map(|v| text(v, 255))
            .transpose()?
            .filter(|n| !n.is_empty());
        let name = name.ok_or("attachment name is required (1..255 characters)")?;
        let mime = fields
            .get("mime_type")
            .and_then(Value::as_str)
            .ok_or("attachment mime_type is required")?;
        let size = fields
            .get("size")
            .and_then(Value::as_i64)
            .filter(|s| *s >= 0)
            .ok_or("attachment size is required (bytes)")?;
        if let Some(max) = column.max_file_bytes
            && size > max
        {
            return Err(format!("'{name}' is larger than {max} bytes"));
        }
        if !mime_allowed(column, mime) {
            return Err(format!(
                "'{name}' has a MIME type ({mime}) this column does not allow"
            ));
        }
        let mut object = Map::new();
        object.insert("name".into(), Value::String(name));
        object.insert("mime_type".into(), Value::String(mime.to_string()));
        object.insert("size".into(), json!(size));
        if let Some(blob) = fields.get("blob_id") {
            let blob = text(blob, BLOB_ID_CHARS)?;
            if !is_blob_id(&blob) {
                return Err(format!(
                    "blob_id '{blob}' is not a blob id (sha256:<64 hex digits>, from an upload)"
                ));
            }
            object.insert("blob_id".into(), Value::String(blob));
        }
        out.push(Value::Object(object));
    }
    Ok(if out.is_empty() {
        Value::Null
    } else {
        Value::Array(out)
    })
}

/// Whether an attachment column takes files of this MIME type (`image/*` matches a
/// family; no list means any type).
pub fn mime_allowed(column: &ColumnDef, mime: &str) -> bool {
    let allowed = column.allowed_mime_types.as_deref().unwrap_or_default();
    allowed.is_empty() || allowed.iter().any(|a| mime_matches(a, mime))
}

fn mime_matches(pattern: &str, mime: &str) -> bool {
    match pattern.strip_suffix("/*") {
        Some(family) => mime.split('/').next() == Some(family),
        None => pattern.eq_ignore_ascii_case(mime),
    }
}

#[cfg(test)]
mod tests;
