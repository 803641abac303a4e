//! Digests and dumps of read-model tables in any schema.
//!
//! Rows are read as `jsonb` and ordered by that text form, so neither the physical
//! order of a table nor the batches that built it show: two read models with the
//! same rows have the same digest. Rebuild checks, the replay tests and
//! `sandboxctl projections digest` compare read models this way.

use serde_json::Value;
use sha2::{Digest, Sha256};
use sqlx::PgConnection;
use std::collections::BTreeMap;

/// A schema-qualified table name, quoted.
pub fn qualified(schema: &str, table: &str) -> String {
    format!("{}.{}", quote(schema), quote(table))
}

/// An SQL identifier, quoted.
pub fn quote(identifier: &str) -> String {
    format!("\"{}\"", identifier.replace('"', "\"\""))
}

/// Every row of a table as JSON, in canonical order.
pub async fn rows(conn: &mut PgConnection, schema: &str, table: &str) -> sqlx::Result<Vec<Value>> {
    sqlx::query_scalar(&format!(
        "SELECT to_jsonb(t) FROM {} t ORDER BY to_jsonb(t)::text",
        qualified(schema, table)
    ))
    .fetch_all(conn)
    .await
}

/// The SHA-256 (hex) of each table's rows in canonical order.
pub async fn digest(
    conn: &mut PgConnection,
    schema: &str,
    tables: &[&str],
) -> sqlx::Result<BTreeMap<String, String>> {
    let mut digests = BTreeMap::new();
    for table in tables {
        let texts: Vec<String> = sqlx::query_scalar(&format!(
            "SELECT to_jsonb(t)::text AS row FROM {} t ORDER BY 1",
            qualified(schema, table)
        ))
        .fetch_all(&mut *conn)
        .await?;
        let mut hasher = Sha256::new();
        for text in texts {
            hasher.update(text.as_bytes());
            hasher.update(b"\n");
        }
        digests.insert(table.to_string(), hex::encode(hasher.finalize()));
    }
    Ok(digests)
}
