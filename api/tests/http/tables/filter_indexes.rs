//! Filter indexes: a saved view's filter and a grant's row policy each get a B-tree
//! over the bounded columns they test (equality-like first), so their counts read
//! an index alone; the index follows the filters as they change and goes with them.

use super::fixture::Tables;
use reqwest::Method;
use serde_json::json;
use uuid::Uuid;

/// The definitions of the filter indexes (`<table>_g_…`) of a table, without the
/// index on `created_by` that own-row grants get.
async fn filter_indexes(t: &Tables, table: &str) -> Vec<String> {
    let id: Uuid = table.rsplit('/').next().unwrap().parse().unwrap();
    let physical = format!("ct_{}", id.simple());
    sqlx::query_scalar(
        "SELECT indexdef FROM pg_indexes WHERE tablename = $1 AND indexname LIKE $1 || '\\_g\\_%'
            AND indexname NOT LIKE '%\\_g\\_creator' ORDER BY indexname",
    )
    .bind(&physical)
    .fetch_all(&t.app.db.pool)
    .await
    .unwrap()
}

/// A table manager's `PATCH`, which must succeed.
async fn patch(t: &Tables, path: &str, body: serde_json::Value) {
    let (code, answer) = t.call(Method::PATCH, path, "boss", Some(body)).await;
    assert_eq!(code, 200, "{path}: {answer}");
}

#[tokio::test]
async fn view_filters_and_row_policies_are_indexed_while_they_exist() {
    let t = Tables::new().await;
    let table = t.table("company", "boss", "indexed").await;
    let qty = t
        .column(&table, json!({"name": "qty", "type": "integer"}))
        .await;
    let status = t
        .column(
            &table,
            json!({"name": "status", "type": "select", "options": ["open", "done"]}),
        )
        .await;
    t.column(&table, json!({"name": "notes", "type": "text"}))
        .await;
    for i in 0..6 {
        t.record(
            &table,
            json!({"qty": i * 50, "status": if i % 2 == 0 { "open" } else { "done" }}),
        )
        .await;
    }
    assert!(filter_indexes(&t, &table).await.is_empty());

    let filter = json!({"and": [{"column": "qty", "op": "gte", "value": 100},
                                {"column": "status", "op": "eq", "value": "open"}]});
    let (code, view) = t
        .call(
            Method::POST,
            &format!("{table}/views"),
            "boss",
            Some(json!({"name": "open", "filter": filter, "sort": [{"column": "qty", "order": "asc"}]})),
        )
        .await;
    assert_eq!(code, 201, "{view}");
    let view_id = view["id"].as_str().unwrap();
    let indexes = filter_indexes(&t, &table).await;
    assert_eq!(indexes.len(), 1, "{indexes:?}");
    assert!(
        indexes[0].ends_with(&format!("({status}, {qty})")),
        "the equality test leads: {indexes:?}"
    );
    let (_, page) = t.search(&table, json!({"view_id": view_id})).await;
    assert_eq!(page["total"], 2, "{page}");

    // A row policy over the same columns shares the view's index.
    let policy = json!({"can_read": "filtered", "row_filter":
        {"and": [{"column": qty, "op": "lt", "value": 200}, {"column": status, "op": "in", "value": ["open"]}]}});
    patch(&t, &format!("{table}/default-permissions"), policy).await;
    assert_eq!(filter_indexes(&t, &table).await, indexes);

    // The view now tests an unbounded column only; the policy still needs the index.
    patch(
        &t,
        &format!("{table}/views/{view_id}"),
        json!({"filter": {"column": "notes", "op": "contains", "value": "x"}}),
    )
    .await;
    assert_eq!(filter_indexes(&t, &table).await, indexes);
    patch(
        &t,
        &format!("{table}/default-permissions"),
        json!({"can_read": "all", "row_filter": null}),
    )
    .await;
    assert!(
        filter_indexes(&t, &table).await.is_empty(),
        "nothing tests the columns any more"
    );

    patch(
        &t,
        &format!("{table}/views/{view_id}"),
        json!({"filter": {"column": "qty", "op": "lt", "value": 10}}),
    )
    .await;
    assert_eq!(filter_indexes(&t, &table).await.len(), 1);
    let (code, answer) = t
        .call(
            Method::DELETE,
            &format!("{table}/views/{view_id}"),
            "boss",
            None,
        )
        .await;
    assert_eq!(code, 200, "{answer}");
    assert!(filter_indexes(&t, &table).await.is_empty());
}
