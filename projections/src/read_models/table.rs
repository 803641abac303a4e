//! Generic access to a read-model table by key, for the load-fold-store pattern.
//!
//! Rows are written column-wise: each column travels as one `text[]` parameter and
//! is cast to the column's type in SQL (`unnest($1::text[])::uuid`), so one upsert
//! and one delete statement serve every table whatever its columns, with PostgreSQL's
//! fast array path instead of per-row JSON parsing. Rows are read back with
//! `to_jsonb(t)`. Table names stay unqualified so a rebuild can aim them at shadow
//! tables through the `search_path`.

use super::RowSet;
use anyhow::Context;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use sqlx::PgConnection;
use std::hash::Hash;

/// Rows written per statement: a batch's changes fit in one; a rebuild's
/// [`crate::projection::MemoryFold`] writing a whole read model sends several, so
/// neither side holds every row's text at once.
pub const ROWS_PER_STATEMENT: usize = 50_000;

/// A read-model table: its name, primary-key columns and every column with its SQL
/// type.
#[derive(Debug, Clone, Copy)]
pub struct Table {
    /// Unqualified table name.
    pub name: &'static str,
    /// Primary-key columns.
    pub key: &'static [&'static str],
    /// Every column, key included, with its SQL type (`uuid`, `text`, `integer`,
    /// `bigint`, `boolean`, `timestamptz`, `jsonb`, `uuid[]`, `text[]`, ...).
    pub columns: &'static [(&'static str, &'static str)],
}

impl Table {
    fn column_type(&self, name: &str) -> &'static str {
        self.columns
            .iter()
            .find(|(c, _)| *c == name)
            .map_or("text", |(_, t)| t)
    }

    /// `unnest($1::text[], ...)` cast to the given columns' types, as `u(c1, ...)`.
    fn unnest(&self, columns: &[&str]) -> String {
        let params: Vec<String> = (1..=columns.len())
            .map(|i| format!("${i}::text[]"))
            .collect();
        let casts: Vec<String> = columns
            .iter()
            .map(|c| format!("u.{c}::{}", self.column_type(c)))
            .collect();
        format!(
            "SELECT {} FROM unnest({}) AS u({})",
            casts.join(", "),
            params.join(", "),
            columns.join(", ")
        )
    }

    /// Loads the rows whose keys are given. Keys serialize as objects of key columns.
    pub async fn load<K: Serialize, R: DeserializeOwned>(
        &self,
        conn: &mut PgConnection,
        keys: &[K],
    ) -> anyhow::Result<Vec<R>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT to_jsonb(t) FROM {name} t WHERE ({key}) IN ({keys})",
            name = self.name,
            key = self.key.join(", "),
            keys = self.unnest(self.key),
        );
        let mut query = sqlx::query_scalar::<_, Value>(&sql);
        for column in transpose(self, self.key, keys)? {
            query = query.bind(column);
        }
        let rows = query.fetch_all(conn).await?;
        rows.into_iter()
            .map(|row| serde_json::from_value(row).map_err(anyhow::Error::from))
            .collect()
    }

    /// Writes the changes of a working set: deletes, then upserts, one statement per
    /// [`ROWS_PER_STATEMENT`] rows.
    pub async fn store<K, R>(
        &self,
        conn: &mut PgConnection,
        rows: RowSet<K, R>,
    ) -> anyhow::Result<()>
    where
        K: Serialize + Hash + Eq + Clone,
        R: Serialize,
    {
        let (upserts, deletes) = rows.into_changes();
        for keys in deletes.chunks(ROWS_PER_STATEMENT) {
            self.delete(conn, keys).await?;
        }
        for rows in upserts.chunks(ROWS_PER_STATEMENT) {
            self.upsert(conn, rows).await?;
        }
        Ok(())
    }

    /// Inserts or replaces rows.
    pub async fn upsert<R: Serialize>(
        &self,
        conn: &mut PgConnection,
        rows: &[R],
    ) -> anyhow::Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let names: Vec<&str> = self.columns.iter().map(|(c, _)| *c).collect();
        let others: Vec<&str> = names
            .iter()
            .copied()
            .filter(|c| !self.key.contains(c))
            .collect();
        let conflict = if others.is_empty() {
            "DO NOTHING".to_string()
        } else {
            let excluded: Vec<String> = others.iter().map(|c| format!("EXCLUDED.{c}")).collect();
            format!(
                "DO UPDATE SET ({}) = ROW({})",
                others.join(", "),
                excluded.join(", ")
            )
        };
        let sql = format!(
            "INSERT INTO {name} ({columns}) {select} ON CONFLICT ({key}) {conflict}",
            name = self.name,
            columns = names.join(", "),
            select = self.unnest(&names),
            key = self.key.join(", "),
        );
        let mut query = sqlx::query(&sql);
        for column in transpose(self, &names, rows)? {
            query = query.bind(column);
        }
        query.execute(conn).await?;
        Ok(())
    }

    /// Deletes rows by key.
    pub async fn delete<K: Serialize>(
        &self,
        conn: &mut PgConnection,
        keys: &[K],
    ) -> anyhow::Result<()> {
        if keys.is_empty() {
            return Ok(());
        }
        let sql = format!(
            "DELETE FROM {name} WHERE ({key}) IN ({keys})",
            name = self.name,
            key = self.key.join(", "),
            keys = self.unnest(self.key),
        );
        let mut query = sqlx::query(&sql);
        for column in transpose(self, self.key, keys)? {
            query = query.bind(column);
        }
        query.execute(conn).await?;
        Ok(())
    }
}

/// Serializes rows and turns them into one text vector per column.
fn transpose<T: Serialize>(
    table: &Table,
    columns: &[&str],
    rows: &[T],
) -> anyhow::Result<Vec<Vec<Option<String>>>> {
    let mut out: Vec<Vec<Option<String>>> = columns
        .iter()
        .map(|_| Vec::with_capacity(rows.len()))
        .collect();
    for row in rows {
        let Value::Object(mut fields) = serde_json::to_value(row)? else {
            anyhow::bail!("rows of {} must serialize as objects", table.name);
        };
        for (column, values) in columns.iter().zip(out.iter_mut()) {
            let value = fields
                .remove(*column)
                .with_context(|| format!("{}.{column} is missing", table.name))?;
            values.push(to_text(value, table.column_type(column)));
        }
    }
    Ok(out)
}

/// The text form PostgreSQL casts back to the column's type.
fn to_text(value: Value, sql_type: &str) -> Option<String> {
    match value {
        Value::Null => None,
        value if sql_type == "jsonb" || sql_type == "json" => Some(value.to_string()),
        Value::String(s) => Some(s),
        Value::Array(items) => {
            let elements: Vec<String> = items
                .into_iter()
                .map(|item| match item {
                    Value::Null => "NULL".to_string(),
                    Value::String(s) => {
                        format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
                    }
                    other => format!(
                        "\"{}\"",
                        other.to_string().replace('\\', "\\\\").replace('"', "\\\"")
                    ),
                })
                .collect();
            Some(format!("{{{}}}", elements.join(",")))
        }
        other => Some(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::to_text;
    use serde_json::json;

    #[test]
    fn values_become_postgres_text() {
        assert_eq!(to_text(json!(null), "text"), None);
        assert_eq!(to_text(json!("a\"b"), "text"), Some("a\"b".into()));
        assert_eq!(to_text(json!(5), "integer"), Some("5".into()));
        assert_eq!(to_text(json!(true), "boolean"), Some("true".into()));
        assert_eq!(
            to_text(json!(["x", "y\"z", "a,b"]), "text[]"),
            Some(r#"{"x","y\"z","a,b"}"#.into())
        );
        assert_eq!(to_text(json!([]), "uuid[]"), Some("{}".into()));
        assert_eq!(
            to_text(json!({"a": [1]}), "jsonb"),
            Some(r#"{"a":[1]}"#.into())
        );
        assert_eq!(to_text(json!("s"), "jsonb"), Some(r#""s""#.into()));
    }
}
