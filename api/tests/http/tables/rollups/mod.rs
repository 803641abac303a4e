//! Rollups, lookups and cross-table formula references over HTTP (spec section 2
//! `link_field`, `aggregation`, `target_column`, `pick`, `fallback`, `expression`):
//! values in reads, filters and sorts,
//! computed under the caller's permissions on the linked table; their refusals and
//! dependencies.

mod fallback;
mod incoming;
mod linked_formulas;
mod reads;
mod refusals;

use super::fixture::Tables;
use serde_json::{Value, json};

pub(super) struct Shop {
    pub products: String,
    pub orders: String,
    /// Column keys by name, both tables.
    pub keys: Value,
}

pub(super) fn id(path: &str) -> &str {
    path.rsplit('/').next().unwrap()
}

/// Products A (10, 1.5 kg, 2026-01-01), B (20, 2.5 kg, 2025-06-01), C (5); orders
/// o1 (items A and B, main A), o2 (items C), o3 (no items).
pub(super) async fn shop(t: &Tables) -> Shop {
    let products = t.table("company", "boss", "products").await;
    for (name, kind) in [
        ("name", "string"),
        ("price", "integer"),
        ("weight", "float"),
        ("released", "date"),
    ] {
        t.column(&products, json!({"name": name, "type": kind}))
            .await;
    }
    let a = t
        .record(
            &products,
            json!({"name": "A", "price": 10, "weight": 1.5, "released": "2026-01-01"}),
        )
        .await;
    let b = t
        .record(
            &products,
            json!({"name": "B", "price": 20, "weight": 2.5, "released": "2025-06-01"}),
        )
        .await;
    let c = t.record(&products, json!({"name": "C", "price": 5})).await;
    let orders = t.table("company", "boss", "orders").await;
    t.column(&orders, json!({"name": "label", "type": "string"}))
        .await;
    t.column(
        &orders,
        json!({"name": "items", "type": "link", "target_table_id": id(&products)}),
    )
    .await;
    t.column(
        &orders,
        json!({"name": "main", "type": "link", "cardinality": "one", "target_table_id": id(&products)}),
    )
    .await;
    t.record(
        &orders,
        json!({"label": "o1", "items": [a["id"], b["id"]], "main": [a["id"]]}),
    )
    .await;
    t.record(&orders, json!({"label": "o2", "items": [c["id"]]}))
        .await;
    t.record(&orders, json!({"label": "o3"})).await;
    for column in [
        json!({"name": "count", "type": "rollup", "link_field": "items", "aggregation": "count"}),
        json!({"name": "total", "type": "rollup", "link_field": "items", "aggregation": "sum", "target_column": "price"}),
        json!({"name": "mean weight", "type": "rollup", "link_field": "items", "aggregation": "avg", "target_column": "weight"}),
        json!({"name": "newest", "type": "rollup", "link_field": "items", "aggregation": "max", "target_column": "released"}),
        json!({"name": "names", "type": "lookup", "link_field": "items", "target_column": "name"}),
        json!({"name": "priciest", "type": "lookup", "link_field": "items", "target_column": "name",
               "pick": {"order_column": "price", "direction": "desc"}}),
        json!({"name": "main name", "type": "lookup", "link_field": "main", "target_column": "name"}),
        json!({"name": "cheap", "type": "rollup", "link_field": "items", "aggregation": "count",
               "filter": [{"column": "price", "op": "lt", "value": 15}]}),
    ] {
        let (status, body) = t.add_column(&orders, "boss", column.clone()).await;
        assert_eq!(status, 200, "{column}: {body}");
    }
    let mut keys = serde_json::Map::new();
    for name in ["items", "main", "count", "total"] {
        keys.insert(name.into(), t.column_key(&orders, name).await.into());
    }
    for name in ["name", "price"] {
        keys.insert(name.into(), t.column_key(&products, name).await.into());
    }
    Shop {
        products,
        orders,
        keys: Value::Object(keys),
    }
}

pub(super) fn cells(page: &Value, name: &str) -> Vec<Value> {
    page["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["data"].get(name).cloned().unwrap_or(json!("<absent>")))
        .collect()
}

/// Filtering by `filter_by` and sorting by `sort_by` (evaluate-only columns) both
/// answer 400 naming them as such.
pub(super) async fn assert_eval_only(t: &Tables, table: &str, filter_by: &str, sort_by: &str) {
    for body in [
        json!({"filter": {"column": filter_by, "op": "gt", "value": 1}}),
        json!({"sort": [{"column": sort_by, "order": "asc"}]}),
    ] {
        let got = t.search(table, body.clone()).await;
        assert_eq!(got.0, 400, "{body}: {}", got.1);
        let text = got.1["detail"]["message"].as_str().unwrap_or_default();
        assert!(text.contains("evaluate-only"), "{body}: {text}");
    }
}

/// Deleting the column answers 409 `column_used_by_computed_column`.
pub(super) async fn assert_read_by_computed(t: &Tables, table: &str, key: &str) {
    let path = format!("{table}/columns/{key}");
    let got = t.call(reqwest::Method::DELETE, &path, "boss", None).await;
    assert_eq!(got.0, 409, "{}", got.1);
    assert_eq!(super::fixture::code(&got), "column_used_by_computed_column");
}
