//! Background migrations as column rewrites, so a change over a large table never
//! holds the pump (docs/decisions/0006-sealing-without-a-horizon.md).
//!
//! A type change, default fill or option rename over more than
//! `BACKGROUND_THRESHOLD` records used to rewrite every row inside the pump's
//! transaction when it completed; over a million rows that held every command of
//! the service for seconds. Now the starting event only adds an empty shadow column
//! `<key>_next` of the target type and records the [`Rewrite`]: the SQL expression
//! that computes the new cell from the row. The server fills the shadow in short
//! batches outside the pump ([`fill`]), builds its indexes concurrently and marks the
//! shadow filled (a comment on the column); meanwhile the pump keeps the shadow of
//! every row it writes current ([`sync`]). The completing event swaps the columns
//! ([`swap`]): drop the old column, rename the shadow and its indexes, all metadata
//! changes. A replay or a rebuild has no filler: there the swap fills the shadow
//! itself first, so the data after a migration depends only on the events.

use super::physical::{
    self, batch, conversion_sql, converter, ident, index_target, literal, search_index_name,
    search_index_target, table_name, text_array_literal,
};
use domain::tables::column::{ColumnDef, ColumnType};
use domain::tables::table::TableEvent;
use serde::{Deserialize, Serialize};
use sqlx::types::Json;
use sqlx::{Connection, PgConnection, PgPool};
use uuid::Uuid;

/// Rows one fill batch rewrites (one short transaction each).
pub const FILL_BATCH: i64 = 5_000;

/// The comment that marks a shadow column as filled by the server.
const FILLED: &str = "filled";

/// How a background migration rewrites its column.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rewrite {
    /// The column being rewritten.
    pub key: String,
    /// The SQL type of the rewritten column.
    pub sql_type: String,
    /// The new cell, as an SQL expression over the row's current cells.
    pub expression: String,
    /// The index of the rewritten column (what follows `ON <table>`), over the shadow.
    pub index: Option<String>,
    /// Its search index, likewise (absent from rewrites recorded before search
    /// indexes existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search_index: Option<String>,
}

/// One index of a rewrite: its name over the shadow, its name once swapped and
/// what it covers.
struct ShadowIndex<'a> {
    building: String,
    swapped: String,
    target: &'a str,
}

impl Rewrite {
    /// The rewrite a background migration's starting event stands for. `current` is
    /// the column's definition before the event (needed by option renames).
    pub fn of(event: &TableEvent, current: Option<&ColumnDef>) -> anyhow::Result<Option<Self>> {
        let (key, target, expression) = match event {
            TableEvent::ColumnAdded {
                column,
                fill: Some(fill),
                ..
            } => {
                let key = ident(&column.key)?;
                let fill = format!(
                    "{}({}::jsonb)",
                    converter(column.column_type),
                    literal(&fill.to_string())
                );
                (key, column, format!("coalesce({key}, {fill})"))
            }
            TableEvent::ColumnTypeChanged { from, column, .. } => {
                (ident(&column.key)?, column, conversion_sql(from, column)?)
            }
            TableEvent::ColumnOptionsRenamed { key, renames, .. } => {
                let Some(current) = current else {
                    anyhow::bail!("option rename of an unknown column {key}");
                };
                let key = ident(key)?;
                let (old, new): (Vec<String>, Vec<String>) = renames.clone().into_iter().unzip();
                let (old, new) = (text_array_literal(&old), text_array_literal(&new));
                let expression = if current.column_type == ColumnType::MultiSelect {
                    format!(
                        "(SELECT array_agg(x ORDER BY o) FROM
                           (SELECT coalesce(m.new, u.v) AS x, min(u.o) AS o
                              FROM unnest({key}) WITH ORDINALITY AS u(v, o)
                              LEFT JOIN unnest({old}, {new}) AS m(old, new) ON m.old = u.v
                             GROUP BY 1) s)"
                    )
                } else {
                    format!(
                        "coalesce((SELECT m.new FROM unnest({old}, {new}) AS m(old, new) WHERE m.old = {key}), {key})"
                    )
                };
                (key, current, expression)
            }
            _ => return Ok(None),
        };
        let shadow = shadow_of(key);
        Ok(Some(Self {
            key: key.to_string(),
            sql_type: physical::sql_type(target.column_type).to_string(),
            expression,
            index: index_target(&shadow, target.column_type),
            search_index: search_index_target(&shadow, target.column_type),
        }))
    }

    /// The shadow column.
    pub fn shadow(&self) -> String {
        shadow_of(&self.key)
    }

    /// The indexes the rewritten column gets, built over the shadow.
    fn indexes(&self, table: &str) -> Vec<ShadowIndex<'_>> {
        let (key, shadow) = (&self.key, self.shadow());
        let ordinary = self.index.as_deref().map(|target| ShadowIndex {
            building: format!("{table}_{shadow}"),
            swapped: format!("{table}_{key}"),
            target,
        });
        let search = self.search_index.as_deref().map(|target| ShadowIndex {
            building: search_index_name(table, &shadow),
            swapped: search_index_name(table, key),
            target,
        });
        ordinary.into_iter().chain(search).collect()
    }
}

/// `<key>_next`: never a column key itself, so it cannot collide with one.
fn shadow_of(key: &str) -> String {
    format!("{key}_next")
}

/// Adds the empty shadow column and records the rewrite with its migration.
pub async fn prepare(
    conn: &mut PgConnection,
    table_id: Uuid,
    migration_id: Uuid,
    rewrite: &Rewrite,
) -> anyhow::Result<()> {
    let table = table_name(table_id);
    batch(
        conn,
        &format!(
            "ALTER TABLE {table} ADD COLUMN {} {}",
            rewrite.shadow(),
            rewrite.sql_type
        ),
    )
    .await?;
    sqlx::query("UPDATE custom_table_migrations SET rewrite = $2 WHERE id = $1")
        .bind(migration_id)
        .bind(Json(rewrite))
        .execute(conn)
        .await?;
    Ok(())
}

/// Brings the shadow of rows the pump just wrote up to date.
pub async fn sync(
    conn: &mut PgConnection,
    table_id: Uuid,
    rewrite: &Rewrite,
    ids: &[Uuid],
) -> anyhow::Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    let sql = format!(
        "UPDATE {} SET {} = {} WHERE id = ANY($1)",
        table_name(table_id),
        rewrite.shadow(),
        rewrite.expression
    );
    sqlx::query(&sql).bind(ids).execute(conn).await?;
    Ok(())
}

/// What [`fill`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Filled {
    /// Rows rewritten.
    pub rows: u64,
    /// Transactions it took.
    pub batches: u64,
}

/// Fills the shadow column of a migration's table in batches of [`FILL_BATCH`]
/// rows, each its own short transaction, then builds the shadow's index without
/// blocking writes and marks the shadow filled. `None` when the migration has no
/// rewrite (started before rewrites existed, or already completed). `stop` is asked
/// between batches; a stopped fill is simply run again later.
pub async fn fill(
    pool: &PgPool,
    migration_id: Uuid,
    stop: impl Fn() -> bool,
) -> anyhow::Result<Option<Filled>> {
    let row: Option<(Uuid, Option<Json<Rewrite>>)> = sqlx::query_as(
        "SELECT table_id, rewrite FROM custom_table_migrations WHERE id = $1 AND completed_at IS NULL",
    )
    .bind(migration_id)
    .fetch_optional(pool)
    .await?;
    let Some((table_id, Some(Json(rewrite)))) = row else {
        return Ok(None);
    };
    let table = table_name(table_id);
    let shadow = rewrite.shadow();
    let sql = format!(
        "WITH b AS (SELECT id FROM {table} WHERE $1::uuid IS NULL OR id > $1 ORDER BY id LIMIT $2)
         UPDATE {table} AS t SET {shadow} = {} FROM b WHERE t.id = b.id RETURNING t.id",
        rewrite.expression
    );
    let mut filled = Filled {
        rows: 0,
        batches: 0,
    };
    let mut after: Option<Uuid> = None;
    let mut conn = pool.acquire().await?;
    loop {
        anyhow::ensure!(!stop(), "stopped");
        let mut tx = conn.begin().await?;
        settings(&mut tx).await?;
        let ids: Vec<Uuid> = sqlx::query_scalar(&sql)
            .bind(after)
            .bind(FILL_BATCH)
            .fetch_all(&mut *tx)
            .await?;
        tx.commit().await?;
        filled.batches += 1;
        filled.rows += ids.len() as u64;
        let last_batch = (ids.len() as i64) < FILL_BATCH;
        after = ids.into_iter().max().or(after);
        if last_batch {
            break;
        }
    }
    for index in rewrite.indexes(&table) {
        let (name, target) = (&index.building, index.target);
        // A build interrupted earlier leaves an invalid index behind: start over.
        batch(
            &mut conn,
            &format!("DROP INDEX CONCURRENTLY IF EXISTS {name}"),
        )
        .await?;
        batch(
            &mut conn,
            &format!("CREATE INDEX CONCURRENTLY {name} ON {table} {target}"),
        )
        .await?;
    }
    batch(
        &mut conn,
        &format!("COMMENT ON COLUMN {table}.{shadow} IS {}", literal(FILLED)),
    )
    .await?;
    Ok(Some(filled))
}

/// Conversions of datetimes and durations to text must not depend on the session.
pub async fn settings(conn: &mut PgConnection) -> anyhow::Result<()> {
    sqlx::query(
        "SELECT set_config('TimeZone', 'UTC', true), set_config('IntervalStyle', 'iso_8601', true)",
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Replaces the column with its shadow (inside the pump). A shadow the server did
/// not fill (a replay, a rebuild) is filled here first; its indexes are built here
/// when the server did not build them.
pub async fn swap(
    conn: &mut PgConnection,
    table_id: Uuid,
    rewrite: &Rewrite,
) -> anyhow::Result<()> {
    let table = table_name(table_id);
    let (key, shadow) = (ident(&rewrite.key)?, rewrite.shadow());
    let filled: bool = sqlx::query_scalar(
        "SELECT coalesce(col_description(a.attrelid, a.attnum) = $3, false)
           FROM pg_attribute a
          WHERE a.attrelid = to_regclass($1) AND a.attname = $2",
    )
    .bind(&table)
    .bind(&shadow)
    .bind(FILLED)
    .fetch_one(&mut *conn)
    .await?;
    let mut sql = String::new();
    if !filled {
        sql.push_str(&format!(
            "UPDATE {table} SET {shadow} = {};",
            rewrite.expression
        ));
    }
    let indexes = rewrite.indexes(&table);
    for index in &indexes {
        sql.push_str(&format!(
            "CREATE INDEX IF NOT EXISTS {} ON {table} {};",
            index.building, index.target
        ));
    }
    sql.push_str(&format!(
        "DROP INDEX IF EXISTS {table}_{key};
         DROP INDEX IF EXISTS {};
         ALTER TABLE {table} DROP COLUMN {key};
         ALTER TABLE {table} RENAME COLUMN {shadow} TO {key};
         COMMENT ON COLUMN {table}.{key} IS NULL;",
        search_index_name(&table, key)
    ));
    for index in &indexes {
        sql.push_str(&format!(
            "ALTER INDEX {} RENAME TO {};",
            index.building, index.swapped
        ));
    }
    batch(conn, &sql).await
}
