//! What rollups and lookups refuse, and the link column they depend on.

use super::{id, shop};
use crate::tables::fixture::{Tables, code};
use reqwest::Method;
use serde_json::json;

#[tokio::test]
async fn rollups_and_lookups_refuse_what_they_cannot_compute() {
    let t = Tables::new().await;
    let shop = shop(&t).await;
    let orders = &shop.orders;
    let before = t.app.event_count().await;
    for (column, message) in [
        (
            json!({"name": "x", "type": "rollup", "aggregation": "count"}),
            "link_field is required",
        ),
        (
            json!({"name": "x", "type": "rollup", "link_field": "label", "aggregation": "count"}),
            "is not a link column",
        ),
        (
            json!({"name": "x", "type": "rollup", "link_field": "items", "aggregation": "median"}),
            "aggregation must be",
        ),
        (
            json!({"name": "x", "type": "rollup", "link_field": "items", "aggregation": "sum"}),
            "target_column is required",
        ),
        (
            json!({"name": "x", "type": "rollup", "link_field": "items", "aggregation": "sum", "target_column": "name"}),
            "cannot aggregate",
        ),
        (
            json!({"name": "x", "type": "rollup", "link_field": "items", "aggregation": "count", "direction": "incoming"}),
            "link_field is only allowed",
        ),
        (
            json!({"name": "x", "type": "rollup", "link_field": "items", "aggregation": "count",
                   "filter": vec![json!({"column": "price", "op": "gt", "value": 1}); 11]}),
            "at most 10 predicates",
        ),
        (
            json!({"name": "x", "type": "rollup", "link_field": "items", "aggregation": "count",
                   "filter": [{"column": "nope", "op": "gt", "value": 1}]}),
            "filter[0]",
        ),
        (
            json!({"name": "x", "type": "rollup", "link_field": "items", "aggregation": "count",
                   "filter": [{"column": "price", "op": "in", "value": (0..101).collect::<Vec<_>>()}]}),
            "at most 100",
        ),
        (
            json!({"name": "x", "type": "lookup", "link_field": "items", "target_column": "nope"}),
            "not a stored column",
        ),
        (
            json!({"name": "x", "type": "lookup", "link_field": "items", "target_column": "name",
                "pick": {"order_column": "name", "direction": "desc"}}),
            "pick.order_column must be",
        ),
        (
            json!({"name": "x", "type": "lookup", "link_field": "items", "target_column": "name",
                "pick": {"order_column": "price", "direction": "up"}}),
            "pick.direction",
        ),
        (
            json!({"name": "x", "type": "lookup", "link_field": "main", "target_column": "name",
                "fallback": {"table_id": id(&shop.products)}}),
            "fallback: target_column is required",
        ),
    ] {
        let got = t.add_column(orders, "boss", column.clone()).await;
        assert_eq!(got.0, 400, "{column}: {}", got.1);
        assert_eq!(code(&got), "column_config_invalid");
        let text = got.1["detail"]["message"].as_str().unwrap_or_default();
        assert!(text.contains(message), "{column}: {text}");
    }
    assert_eq!(t.app.event_count().await, before);
    // The link column they read cannot be deleted while they read it.
    let items = shop.keys["items"].as_str().unwrap();
    let got = t
        .call(
            Method::DELETE,
            &format!("{orders}/columns/{items}"),
            "boss",
            None,
        )
        .await;
    assert_eq!(got.0, 409, "{}", got.1);
    assert_eq!(code(&got), "column_used_by_computed_column");
    assert_eq!(got.1["detail"]["usage_count"], 7, "{}", got.1);
}
