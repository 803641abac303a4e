//! Shadow tables: empty copies of a projection's live tables in another schema.
//!
//! The copies are UNLOGGED while they fill (no WAL for every row: a rebuild runs
//! about 40 % faster) and are made durable by [`make_durable`] once, before the
//! swap or the end of a point-in-time build. Crash recovery empties unlogged tables,
//! so a rebuild resumed after a server restart starts over.
//!
//! `CREATE TABLE shadow.t (LIKE live.t INCLUDING ALL)` copies columns, defaults,
//! constraints and indexes, but gives the indexes new names. The copies are renamed
//! after the live indexes they mirror (matched by definition), so after a swap the
//! indexes and primary keys carry the names the migrations gave them and a later
//! migration can still refer to them.

use crate::digest::{qualified, quote};
use sqlx::PgConnection;

/// Whether a schema name is one a rebuild may create and write (plain lower-case
/// identifier, not a system or the live schema).
pub fn check_schema_name(schema: &str, live: &str) -> anyhow::Result<()> {
    let plain = !schema.is_empty()
        && schema.len() <= 63
        && schema.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && schema
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    anyhow::ensure!(
        plain,
        "schema name `{schema}` must be a plain lower-case identifier"
    );
    anyhow::ensure!(
        schema != live && schema != "information_schema" && !schema.starts_with("pg_"),
        "schema `{schema}` is not one a rebuild may write"
    );
    Ok(())
}

/// Creates the schema (if needed) and an empty copy of each table in it. Fails when a
/// table of that name already exists there.
pub async fn create(
    conn: &mut PgConnection,
    live: &str,
    shadow: &str,
    tables: &[&str],
) -> anyhow::Result<()> {
    sqlx::query(&format!("CREATE SCHEMA IF NOT EXISTS {}", quote(shadow)))
        .execute(&mut *conn)
        .await?;
    for table in tables {
        sqlx::query(&format!(
            "CREATE UNLOGGED TABLE {} (LIKE {} INCLUDING ALL)",
            qualified(shadow, table),
            qualified(live, table)
        ))
        .execute(&mut *conn)
        .await?;
        name_indexes_like(conn, live, shadow, table).await?;
    }
    Ok(())
}

/// Gives the shadow table's indexes the names of the live indexes they mirror.
async fn name_indexes_like(
    conn: &mut PgConnection,
    live: &str,
    shadow: &str,
    table: &str,
) -> anyhow::Result<()> {
    let indexes: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT schemaname::text, indexname::text, indexdef FROM pg_indexes
          WHERE schemaname = ANY($1) AND tablename = $2 ORDER BY indexname",
    )
    .bind([live, shadow])
    .bind(table)
    .fetch_all(&mut *conn)
    .await?;
    // The definition without its name and table: uniqueness, method, columns, predicate.
    let shape = |definition: &str| {
        let unique = definition.starts_with("CREATE UNIQUE");
        let tail = definition
            .split_once(" USING ")
            .map_or("", |(_, tail)| tail)
            .to_string();
        (unique, tail)
    };
    let mut copies: Vec<(String, (bool, String))> = indexes
        .iter()
        .filter(|(schema, _, _)| schema == shadow)
        .map(|(_, name, definition)| (name.clone(), shape(definition)))
        .collect();
    for (_, name, definition) in indexes.iter().filter(|(schema, _, _)| schema == live) {
        let wanted = shape(definition);
        let Some(at) = copies.iter().position(|(_, s)| *s == wanted) else {
            anyhow::bail!("the copy of {live}.{table} lacks index {name}");
        };
        let (copy, _) = copies.remove(at);
        if &copy != name {
            sqlx::query(&format!(
                "ALTER INDEX {} RENAME TO {}",
                qualified(shadow, &copy),
                quote(name)
            ))
            .execute(&mut *conn)
            .await?;
        }
    }
    Ok(())
}

/// What differs between live tables and their copies in the shadow schema: each
/// table's columns (with type, nullability and default) and its indexes (by
/// shape, as [`create`] matches them). The copies were made when the rebuild
/// began; a migration that ran since (a new index, column or table) would be lost
/// in the swap, so a rebuild whose copies drifted starts over. Empty when they
/// match.
pub async fn drift(
    conn: &mut PgConnection,
    live: &str,
    shadow: &str,
    tables: &[&str],
) -> anyhow::Result<Vec<String>> {
    let shapes: Vec<(String, String, Vec<String>, Vec<String>)> = sqlx::query_as(
        "SELECT n.nspname::text, c.relname::text,
                coalesce((SELECT array_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
                                           || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
                                           || coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), '')
                                           ORDER BY a.attname)
                            FROM pg_attribute a
                            LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
                           WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped), '{}'),
                coalesce((SELECT array_agg(shape ORDER BY shape) FROM (
                              SELECT CASE WHEN i.indisunique THEN 'unique ' ELSE '' END
                                     || split_part(pg_get_indexdef(i.indexrelid), ' USING ', 2) AS shape
                                FROM pg_index i WHERE i.indrelid = c.oid) s), '{}')
           FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = ANY($1) AND c.relname = ANY($2) AND c.relkind IN ('r', 'p')",
    )
    .bind([live, shadow])
    .bind(tables)
    .fetch_all(&mut *conn)
    .await?;
    let shape_in = |schema: &str, table: &str| {
        shapes
            .iter()
            .find(|(s, t, _, _)| s == schema && t == table)
            .map(|(_, _, columns, indexes)| (columns, indexes))
    };
    let mut drifted = Vec::new();
    for table in tables {
        match (shape_in(live, table), shape_in(shadow, table)) {
            (Some(_), None) => drifted.push(format!("{table} has no copy")),
            (Some((live_columns, live_indexes)), Some((columns, indexes))) => {
                if live_columns != columns {
                    drifted.push(format!("the columns of {table} changed"));
                }
                if live_indexes != indexes {
                    drifted.push(format!("the indexes of {table} changed"));
                }
            }
            (None, _) => drifted.push(format!("{table} is not a live table any more")),
        }
    }
    Ok(drifted)
}

/// Makes every table of the projection in the shadow schema logged (one pass over
/// each table), so the swapped-in or point-in-time tables survive a crash.
pub async fn make_durable(
    conn: &mut PgConnection,
    projection: &dyn crate::projection::Projection,
    shadow: &str,
) -> anyhow::Result<()> {
    for table in projection.owned_tables(conn, shadow).await? {
        sqlx::query(&format!(
            "ALTER TABLE {} SET LOGGED",
            qualified(shadow, &table)
        ))
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// Drops the tables from the schema, and the schema once it holds nothing else.
pub async fn drop(conn: &mut PgConnection, shadow: &str, tables: &[String]) -> anyhow::Result<()> {
    for table in tables {
        sqlx::query(&format!(
            "DROP TABLE IF EXISTS {}",
            qualified(shadow, table)
        ))
        .execute(&mut *conn)
        .await?;
    }
    drop_schema_if_empty(conn, shadow).await
}

/// Drops the schema when no object is left in it.
pub async fn drop_schema_if_empty(conn: &mut PgConnection, shadow: &str) -> anyhow::Result<()> {
    let objects: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = $1",
    )
    .bind(shadow)
    .fetch_one(&mut *conn)
    .await?;
    if objects == 0 {
        sqlx::query(&format!("DROP SCHEMA IF EXISTS {}", quote(shadow)))
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}
