//! The physical table of a custom table: `ct_<table id hex>` with `id`,
//! `created_at`, `updated_at`, `created_by` and one typed column per stored column
//! (named by its internal `col_<hex>` key). Names are unqualified, so a rebuild can
//! create them in a shadow schema through the `search_path`.

use domain::tables::column::{ColumnDef, ColumnType, is_column_key};
use sqlx::PgConnection;
use uuid::Uuid;

/// Characters of a string or text cell that its index and sort key use.
pub const PREFIX_CHARS: usize = 200;

/// The physical table of a custom table.
pub fn table_name(table_id: Uuid) -> String {
    format!("ct_{}", table_id.simple())
}

/// The SQL type of a stored column.
pub fn sql_type(t: ColumnType) -> &'static str {
    use ColumnType as T;
    match t {
        T::Integer => "bigint",
        T::Float => "double precision",
        T::Boolean => "boolean",
        T::Date => "date",
        T::Datetime => "timestamptz",
        T::MultiSelect => "text[]",
        T::Link => "uuid[]",
        T::Attachment | T::Json => "jsonb",
        T::Interval => "interval",
        _ => "text",
    }
}

/// The SQL function that turns a JSON value into the column's type, never raising
/// (migration `0500_custom_tables.sql`).
pub fn converter(t: ColumnType) -> &'static str {
    use ColumnType as T;
    match t {
        T::Integer => "ct_as_bigint",
        T::Float => "ct_as_float8",
        T::Boolean => "ct_as_boolean",
        T::Date => "ct_as_date",
        T::Datetime => "ct_as_timestamptz",
        T::MultiSelect => "ct_as_text_array",
        T::Link => "ct_as_uuid_array",
        T::Attachment | T::Json => "ct_as_jsonb",
        T::Interval => "ct_as_interval",
        T::User | T::SocialClient => "ct_as_id_text",
        T::Principal => "ct_as_principal",
        _ => "ct_as_text",
    }
}

/// A column key checked to be a safe identifier.
pub fn ident(key: &str) -> anyhow::Result<&str> {
    anyhow::ensure!(is_column_key(key), "'{key}' is not a column key");
    Ok(key)
}

/// A SQL string literal (standard-conforming strings; NUL is refused upstream).
pub fn literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// `ARRAY['a','b']::text[]`.
pub fn text_array_literal(items: &[String]) -> String {
    let items: Vec<String> = items.iter().map(|s| literal(s)).collect();
    format!("ARRAY[{}]::text[]", items.join(","))
}

/// Creates the physical table of a new custom table.
pub async fn create_table(conn: &mut PgConnection, table_id: Uuid) -> anyhow::Result<()> {
    let name = table_name(table_id);
    batch(
        conn,
        &format!(
            "CREATE TABLE {name} (id uuid PRIMARY KEY, created_at timestamptz NOT NULL,
                              updated_at timestamptz NOT NULL, created_by text NOT NULL);
         CREATE INDEX {name}_created ON {name} (created_at, id);"
        ),
    )
    .await?;
    Ok(())
}

/// Drops the physical table.
pub async fn drop_table(conn: &mut PgConnection, table_id: Uuid) -> anyhow::Result<()> {
    batch(
        conn,
        &format!("DROP TABLE IF EXISTS {}", table_name(table_id)),
    )
    .await?;
    Ok(())
}

/// What the index of a column of type `t` named `column` covers (the part after
/// `ON <table>`): B-tree on scalars (on the first characters of strings, whose
/// values can exceed an index entry), GIN on lists, none on JSON.
pub fn index_target(column: &str, t: ColumnType) -> Option<String> {
    use ColumnType as T;
    match t {
        T::String | T::Text => Some(format!("(left({column}, {PREFIX_CHARS}), id)")),
        T::MultiSelect | T::Link => Some(format!("USING gin ({column})")),
        T::Json | T::Attachment => None,
        t if t.is_stored() => Some(format!("({column}, id)")),
        _ => None,
    }
}

/// What the search index of a column of type `t` covers: trigrams of string and
/// text cells (extension `pg_trgm`), so that `q` searches and `contains` filters,
/// whose patterns match anywhere in a cell, read an index instead of every row.
pub fn search_index_target(column: &str, t: ColumnType) -> Option<String> {
    t.is_textual()
        .then(|| format!("USING gin ({column} gin_trgm_ops)"))
}

/// The name of the search index of column `column` of `table` (`<table>_<column>`
/// names its ordinary index).
pub fn search_index_name(table: &str, column: &str) -> String {
    format!("{table}_{column}_q")
}

/// The statements creating a column's indexes (none for some types).
fn index_sql(table: &str, column: &ColumnDef) -> anyhow::Result<String> {
    let key = ident(&column.key)?;
    let mut sql = String::new();
    if let Some(target) = index_target(key, column.column_type) {
        sql.push_str(&format!("CREATE INDEX {table}_{key} ON {table} {target};"));
    }
    if let Some(target) = search_index_target(key, column.column_type) {
        let name = search_index_name(table, key);
        sql.push_str(&format!("CREATE INDEX {name} ON {table} {target};"));
    }
    Ok(sql)
}

/// Adds a stored column (and its index).
pub async fn add_column(
    conn: &mut PgConnection,
    table_id: Uuid,
    column: &ColumnDef,
) -> anyhow::Result<()> {
    if !column.column_type.is_stored() {
        return Ok(());
    }
    let table = table_name(table_id);
    let key = ident(&column.key)?;
    let mut sql = format!(
        "ALTER TABLE {table} ADD COLUMN {key} {};",
        sql_type(column.column_type)
    );
    sql.push_str(&index_sql(&table, column)?);
    batch(conn, &sql).await?;
    Ok(())
}

/// Drops a column with its values.
pub async fn drop_column(conn: &mut PgConnection, table_id: Uuid, key: &str) -> anyhow::Result<()> {
    let sql = format!(
        "ALTER TABLE {} DROP COLUMN IF EXISTS {}",
        table_name(table_id),
        ident(key)?
    );
    batch(conn, &sql).await?;
    Ok(())
}

/// The JSON a column's current value converts from, by source and target type.
fn source_json(key: &str, from: ColumnType, to: ColumnType) -> String {
    use ColumnType as T;
    match (from, to) {
        (T::Interval, t) if t.is_numeric() => format!("to_jsonb(extract(epoch from {key}))"),
        (T::User, T::Principal) => format!("to_jsonb('user:' || {key})"),
        (T::SocialClient, T::Principal) => format!("to_jsonb('smc:' || {key})"),
        (T::Principal, T::User) => {
            format!("to_jsonb(CASE WHEN {key} LIKE 'user:%' THEN substr({key}, 6) END)")
        }
        (T::Principal, T::SocialClient) => {
            format!("to_jsonb(CASE WHEN {key} LIKE 'smc:%' THEN substr({key}, 5) END)")
        }
        _ => format!("to_jsonb({key})"),
    }
}

/// The conversion of a type change, as the `USING` expression of `ALTER COLUMN`.
/// Values that do not convert become empty (see docs/decisions/0004).
pub fn conversion_sql(from: &ColumnDef, to: &ColumnDef) -> anyhow::Result<String> {
    let key = ident(&from.key)?;
    let json = source_json(key, from.column_type, to.column_type);
    let options = text_array_literal(to.options.as_deref().unwrap_or_default());
    use ColumnType as T;
    Ok(match (from.column_type, to.column_type) {
        (T::MultiSelect, T::Select) => format!("(ct_keep_options({key}, {options}))[1]"),
        (_, T::Select) => {
            format!("CASE WHEN ct_as_text({json}) = ANY({options}) THEN ct_as_text({json}) END")
        }
        (_, T::MultiSelect) => format!("ct_keep_options(ct_as_text_array({json}), {options})"),
        (_, t) => format!("{}({json})", converter(t)),
    })
}

/// Changes a column's type, converting every row with one statement.
pub async fn change_type(
    conn: &mut PgConnection,
    table_id: Uuid,
    from: &ColumnDef,
    to: &ColumnDef,
) -> anyhow::Result<()> {
    let table = table_name(table_id);
    let key = ident(&from.key)?;
    let mut sql = format!(
        "DROP INDEX IF EXISTS {table}_{key};
         DROP INDEX IF EXISTS {};
         ALTER TABLE {table} ALTER COLUMN {key} TYPE {} USING {};",
        search_index_name(&table, key),
        sql_type(to.column_type),
        conversion_sql(from, to)?
    );
    sql.push_str(&index_sql(&table, to)?);
    batch(conn, &sql).await?;
    Ok(())
}

/// Runs several statements (simple query protocol, no parameters).
pub fn batch<'c>(
    conn: &'c mut PgConnection,
    sql: &'c str,
) -> futures::future::BoxFuture<'c, anyhow::Result<()>> {
    Box::pin(async move {
        sqlx::Executor::execute(conn, sql).await?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_escape_quotes() {
        assert_eq!(literal("it's"), "'it''s'");
        assert_eq!(
            text_array_literal(&["a".into(), "b'".into()]),
            "ARRAY['a','b''']::text[]"
        );
        assert_eq!(
            table_name(Uuid::from_u128(1)),
            "ct_00000000000000000000000000000001"
        );
    }
}
