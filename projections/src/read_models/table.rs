//! Generic access to a read-model table by key, for the load-fold-store pattern.
//!
//! Rows travel as JSON: `jsonb_populate_recordset(NULL::table, $1)` turns a JSON
//! array of row objects into rows of the table's own type, and `to_jsonb(t)` turns
//! rows back into objects. One upsert, one delete and one load statement then serve
//! every table, whatever its columns, and table names stay unqualified so a rebuild
//! can aim them at shadow tables through the `search_path`.

use super::RowSet;
use serde::Serialize;
use serde::de::DeserializeOwned;
use sqlx::PgConnection;
use std::hash::Hash;

/// A read-model table: its name, primary-key columns and every column.
#[derive(Debug, Clone, Copy)]
pub struct Table {
    /// Unqualified table name.
    pub name: &'static str,
    /// Primary-key columns.
    pub key: &'static [&'static str],
    /// Every column, key included.
    pub columns: &'static [&'static str],
}

impl Table {
    /// Loads the rows whose keys are given. Keys serialize as objects of key columns.
    pub async fn load<K: Serialize, R: DeserializeOwned>(
        &self,
        conn: &mut PgConnection,
        keys: &[K],
    ) -> anyhow::Result<Vec<R>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let key = self.key.join(", ");
        let sql = format!(
            "SELECT to_jsonb(t) FROM {name} t
              WHERE ({key}) IN (SELECT {key} FROM jsonb_populate_recordset(NULL::{name}, $1))",
            name = self.name,
        );
        let rows: Vec<serde_json::Value> = sqlx::query_scalar(&sql)
            .bind(serde_json::to_value(keys)?)
            .fetch_all(conn)
            .await?;
        rows.into_iter()
            .map(|row| serde_json::from_value(row).map_err(anyhow::Error::from))
            .collect()
    }

    /// Writes the changes of a working set: one upsert, one delete.
    pub async fn store<K, R>(&self, conn: &mut PgConnection, rows: RowSet<K, R>) -> anyhow::Result<()>
    where
        K: Serialize + Hash + Eq + Clone,
        R: Serialize,
    {
        let (upserts, deletes) = rows.into_changes();
        self.delete(conn, &deletes).await?;
        self.upsert(conn, &upserts).await
    }

    /// Inserts or replaces rows.
    pub async fn upsert<R: Serialize>(&self, conn: &mut PgConnection, rows: &[R]) -> anyhow::Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let key = self.key.join(", ");
        let others: Vec<&str> = self.columns.iter().copied().filter(|c| !self.key.contains(c)).collect();
        let conflict = if others.is_empty() {
            "DO NOTHING".to_string()
        } else {
            let excluded: Vec<String> = others.iter().map(|c| format!("EXCLUDED.{c}")).collect();
            format!("DO UPDATE SET ({}) = ROW({})", others.join(", "), excluded.join(", "))
        };
        let sql = format!(
            "INSERT INTO {name} ({columns}) SELECT {columns} FROM jsonb_populate_recordset(NULL::{name}, $1)
             ON CONFLICT ({key}) {conflict}",
            name = self.name,
            columns = self.columns.join(", "),
        );
        sqlx::query(&sql).bind(serde_json::to_value(rows)?).execute(conn).await?;
        Ok(())
    }

    /// Deletes rows by key.
    pub async fn delete<K: Serialize>(&self, conn: &mut PgConnection, keys: &[K]) -> anyhow::Result<()> {
        if keys.is_empty() {
            return Ok(());
        }
        let key = self.key.join(", ");
        let sql = format!(
            "DELETE FROM {name} WHERE ({key}) IN (SELECT {key} FROM jsonb_populate_recordset(NULL::{name}, $1))",
            name = self.name,
        );
        sqlx::query(&sql).bind(serde_json::to_value(keys)?).execute(conn).await?;
        Ok(())
    }
}
