//! Indexes that serve a table's row policies and saved views, kept in step with them.
//!
//! A caller reading through a row policy counts its rows on every table list
//! (`record_count`) and search (`total`), and a page of a saved view carries the
//! view's exact `total`; over a large table such a count is a scan of every row
//! unless an index answers it alone (a million rows: ~90 ms of parallel sequential
//! scan here, ~22 ms as an index-only scan). So each grant's row policy and each
//! view's filter gets a covering B-tree over the columns its predicates test
//! (equality-like tests first, at most [`MAX_COLUMNS`]), and own-row grants an
//! index on `created_by`: those counts then run as index-only scans. Only columns of
//! bounded width are indexed (numbers, booleans, dates, select options, ids,
//! principals), so no value can overflow an index entry. The set is recomputed from
//! the grants, views and column types after every change of any of them, and
//! indexes nothing needs any more are dropped. Filters testing the same columns
//! share one index.

use super::physical::{batch, ident, table_name};
use domain::tables::column::{ColumnDef, ColumnType};
use domain::tables::grants::{EditMode, Grant, ReadMode};
use serde_json::Value;
use sha2::{Digest, Sha256};
use sqlx::PgConnection;
use sqlx::types::Json;
use std::collections::BTreeMap;
use uuid::Uuid;

/// Columns of one policy index.
pub const MAX_COLUMNS: usize = 4;

/// Types whose values always fit an index entry.
fn bounded(t: ColumnType) -> bool {
    use ColumnType as T;
    matches!(
        t,
        T::Integer
            | T::Float
            | T::Boolean
            | T::Date
            | T::Datetime
            | T::Select
            | T::User
            | T::SocialClient
            | T::Principal
            | T::Interval
    )
}

/// The predicates of a filter (outside link targets): column key and whether the
/// test is equality-like (`eq`, `in`, `is_null`), in order of appearance.
fn predicates(node: &Value, out: &mut Vec<(String, bool)>) {
    let Value::Object(fields) = node else {
        return;
    };
    for key in ["and", "or"] {
        if let Some(Value::Array(items)) = fields.get(key) {
            items.iter().for_each(|i| predicates(i, out));
        }
    }
    if let Some(inner) = fields.get("not") {
        predicates(inner, out);
    }
    if let (Some(Value::String(column)), Some(Value::String(op))) =
        (fields.get("column"), fields.get("op"))
    {
        out.push((
            column.clone(),
            matches!(op.as_str(), "eq" | "in" | "is_null"),
        ));
    }
}

/// The index columns a filter wants: equality-like first, bounded types only.
fn filter_columns(filter: &Value, columns: &[ColumnDef]) -> Vec<String> {
    let mut tests = Vec::new();
    predicates(filter, &mut tests);
    tests.sort_by_key(|(_, equality)| !equality);
    let mut keys: Vec<String> = Vec::new();
    for (key, _) in tests {
        let fits = columns
            .iter()
            .any(|c| c.key == key && bounded(c.column_type));
        if fits && !keys.contains(&key) && keys.len() < MAX_COLUMNS {
            keys.push(key);
        }
    }
    keys
}

/// Index name to its indexed expressions, for the grants and the view filters of a
/// table.
fn wanted(
    table: &str,
    grants: &[Grant],
    view_filters: &[Value],
    columns: &[ColumnDef],
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if grants
        .iter()
        .any(|g| g.can_read == ReadMode::Own || g.can_edit == EditMode::Own)
    {
        out.insert(format!("{table}_g_creator"), "created_by".to_string());
    }
    let filters = grants.iter().filter_map(|g| g.row_filter.as_ref());
    for filter in filters.chain(view_filters) {
        let keys = filter_columns(filter, columns);
        if keys.is_empty() {
            continue;
        }
        let digest = hex::encode(&Sha256::digest(keys.join(",").as_bytes())[..8]);
        out.insert(format!("{table}_g_{digest}"), keys.join(", "));
    }
    out
}

/// Brings the filter indexes of a table in line with its grants, views and columns.
pub async fn sync(conn: &mut PgConnection, table_id: Uuid) -> anyhow::Result<()> {
    let table = table_name(table_id);
    let exists: bool = sqlx::query_scalar("SELECT to_regclass($1) IS NOT NULL")
        .bind(&table)
        .fetch_one(&mut *conn)
        .await?;
    if !exists {
        return Ok(());
    }
    let grants: Vec<(Json<Grant>,)> =
        sqlx::query_as("SELECT grant_body FROM custom_table_grants WHERE table_id = $1")
            .bind(table_id)
            .fetch_all(&mut *conn)
            .await?;
    let columns: Vec<(Json<ColumnDef>,)> =
        sqlx::query_as("SELECT definition FROM custom_table_columns WHERE table_id = $1")
            .bind(table_id)
            .fetch_all(&mut *conn)
            .await?;
    let view_filters: Vec<Value> = sqlx::query_scalar(
        "SELECT definition->'filter' FROM custom_table_views
          WHERE table_id = $1 AND jsonb_typeof(definition->'filter') = 'object'",
    )
    .bind(table_id)
    .fetch_all(&mut *conn)
    .await?;
    let grants: Vec<Grant> = grants.into_iter().map(|(g,)| g.0).collect();
    let columns: Vec<ColumnDef> = columns.into_iter().map(|(c,)| c.0).collect();
    let wanted = wanted(&table, &grants, &view_filters, &columns);
    let existing: Vec<String> = sqlx::query_scalar(
        "SELECT indexname::text FROM pg_indexes
          WHERE schemaname = current_schema() AND tablename = $1 AND indexname LIKE $1 || '\\_g\\_%'",
    )
    .bind(&table)
    .fetch_all(&mut *conn)
    .await?;
    let mut ddl = String::new();
    for name in existing.iter().filter(|n| !wanted.contains_key(*n)) {
        ddl.push_str(&format!("DROP INDEX {name};\n"));
    }
    for (name, keys) in wanted.iter().filter(|(n, _)| !existing.contains(n)) {
        for key in keys.split(", ").filter(|k| *k != "created_by") {
            ident(key)?;
        }
        ddl.push_str(&format!("CREATE INDEX {name} ON {table} ({keys});\n"));
    }
    if !ddl.is_empty() {
        batch(conn, &ddl).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn column(key: &str, t: ColumnType) -> ColumnDef {
        ColumnDef::new(key, key, t)
    }

    #[test]
    fn equality_columns_lead_and_unbounded_ones_stay_out() {
        let columns = [
            column("col_1", ColumnType::Integer),
            column("col_2", ColumnType::Select),
            column("col_3", ColumnType::String),
            column("col_4", ColumnType::Boolean),
        ];
        let policy = json!({"and": [
            {"column": "col_1", "op": "gte", "value": 1},
            {"column": "col_3", "op": "eq", "value": "x"},
            {"not": {"column": "col_2", "op": "in", "value": ["a"]}},
            {"link": "col_9", "quantifier": "any", "target": {"column": "col_4", "op": "eq", "value": true}}]});
        assert_eq!(filter_columns(&policy, &columns), vec!["col_2", "col_1"]);
    }

    #[test]
    fn a_view_filter_gets_an_index_and_shares_one_with_a_policy_on_the_same_columns() {
        let columns = [
            column("col_1", ColumnType::Integer),
            column("col_2", ColumnType::Select),
            column("col_3", ColumnType::Text),
        ];
        let view = json!({"and": [
            {"column": "col_2", "op": "eq", "value": "open"},
            {"column": "col_1", "op": "gte", "value": 100}]});
        let text_only = json!({"column": "col_3", "op": "contains", "value": "x"});
        let alone = wanted("ct_t", &[], &[view.clone(), text_only], &columns);
        assert_eq!(alone.values().collect::<Vec<_>>(), ["col_2, col_1"]);
        let grant = Grant {
            can_read: ReadMode::Filtered,
            can_edit: EditMode::None,
            row_filter: Some(json!({"and": [
                {"column": "col_1", "op": "lt", "value": 5},
                {"column": "col_2", "op": "in", "value": ["a"]}]})),
            ..Grant::standard_default()
        };
        assert_eq!(wanted("ct_t", &[grant], &[view], &columns), alone);
    }
}
