//! `custom_table_blob_holders`: which live record holds which attachment file.
//!
//! Kept with the records of tables that have attachment columns (the rows a flush
//! wrote or deleted are looked at again) and recomputed for the whole table when an
//! attachment column goes away or changes type. Attachment files that no record
//! holds are what the janitor removes.

use super::physical::{ident, table_name};
use domain::tables::column::ColumnType;
use sqlx::PgConnection;
use uuid::Uuid;

/// The attachment columns among a table's stored columns.
pub fn attachment_keys(columns: &[(String, ColumnType)]) -> Vec<&str> {
    columns
        .iter()
        .filter(|(_, t)| *t == ColumnType::Attachment)
        .map(|(k, _)| k.as_str())
        .collect()
}

/// Inserts the holders among the table's rows that `rows` (SQL over `t`) selects.
async fn insert(
    conn: &mut PgConnection,
    table_id: Uuid,
    keys: &[&str],
    rows: &str,
    ids: Option<&[Uuid]>,
) -> anyhow::Result<()> {
    if keys.is_empty() {
        return Ok(());
    }
    let cells = keys
        .iter()
        .map(|k| ident(k).map(|k| format!("coalesce(t.{k}, '[]'::jsonb)")))
        .collect::<anyhow::Result<Vec<_>>>()?
        .join(" || ");
    let sql = format!(
        "INSERT INTO custom_table_blob_holders (table_id, blob_id, record_id)
         SELECT DISTINCT $1::uuid, e->>'blob_id', t.id
           FROM {} AS t CROSS JOIN LATERAL jsonb_array_elements({cells}) AS e
          WHERE {rows} AND e ? 'blob_id'
         ON CONFLICT DO NOTHING",
        table_name(table_id)
    );
    let mut query = sqlx::query(&sql).persistent(false).bind(table_id);
    if let Some(ids) = ids {
        query = query.bind(ids);
    }
    query.execute(conn).await?;
    Ok(())
}

/// Looks again at the rows a flush created, changed or deleted.
pub async fn sync(
    conn: &mut PgConnection,
    table_id: Uuid,
    records: &[Uuid],
    keys: &[&str],
) -> anyhow::Result<()> {
    sqlx::query(
        "DELETE FROM custom_table_blob_holders WHERE table_id = $1 AND record_id = ANY($2)",
    )
    .bind(table_id)
    .bind(records)
    .execute(&mut *conn)
    .await?;
    insert(conn, table_id, keys, "t.id = ANY($2)", Some(records)).await
}

/// Recomputes the holders of a whole table from its attachment columns now.
pub async fn refresh(conn: &mut PgConnection, table_id: Uuid, keys: &[&str]) -> anyhow::Result<()> {
    forget(conn, table_id).await?;
    insert(conn, table_id, keys, "true", None).await
}

/// Forgets a table's holders (the table is gone, or has no attachment column).
pub async fn forget(conn: &mut PgConnection, table_id: Uuid) -> anyhow::Result<()> {
    sqlx::query("DELETE FROM custom_table_blob_holders WHERE table_id = $1")
        .bind(table_id)
        .execute(conn)
        .await?;
    Ok(())
}
