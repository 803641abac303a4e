//! Incoming rollups: records of a source table that link here.

use super::{cells, id, shop};
use crate::tables::fixture::{Tables, code};
use reqwest::Method;
use serde_json::json;

#[tokio::test]
async fn incoming_rollups_aggregate_the_records_that_link_here() {
    let t = Tables::new().await;
    let shop = shop(&t).await;
    let orders_id = id(&shop.orders).to_string();
    for column in [
        json!({"name": "ordered", "type": "rollup", "direction": "incoming", "source_table_id": orders_id,
               "match": {"items": "$self"}, "aggregation": "count"}),
        json!({"name": "labels", "type": "rollup", "direction": "incoming", "source_table_id": orders_id,
               "match": {"items": "$self"}, "aggregation": "count_distinct", "target_column": "label"}),
        json!({"name": "as main", "type": "rollup", "direction": "incoming", "source_table_id": orders_id,
               "match": {"main": "$self"}, "aggregation": "count"}),
    ] {
        let (status, body) = t.add_column(&shop.products, "boss", column.clone()).await;
        assert_eq!(status, 200, "{column}: {body}");
    }
    // A rollup filter reads stored and formula columns, not another rollup.
    let got = t
        .add_column(
            &shop.orders,
            "boss",
            json!({"name": "x", "type": "rollup", "link_field": "items", "aggregation": "count",
                   "filter": [{"column": "ordered", "op": "gt", "value": 0}]}),
        )
        .await;
    assert_eq!(got.0, 400, "{}", got.1);
    assert!(
        got.1.to_string().contains("stored or formula column"),
        "{}",
        got.1
    );
    // A pair naming a cardinality-one link column of this table: orders that share
    // this order's main product.
    let (status, body) = t
        .add_column(
            &shop.orders,
            "boss",
            json!({"name": "same main", "type": "rollup", "direction": "incoming",
                   "source_table_id": orders_id, "match": {"main": "main"}, "aggregation": "count"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["column"]["direction"], "incoming");
    assert_eq!(body["column"]["source_table_id"], orders_id);
    assert_eq!(
        body["column"]["match"][shop.keys["main"].as_str().unwrap()],
        shop.keys["main"]
    );

    let products = t.records(&shop.products, "boss").await;
    assert_eq!(cells(&products, "ordered"), [json!(1), json!(1), json!(1)]);
    assert_eq!(cells(&products, "labels"), [json!(1), json!(1), json!(1)]);
    assert_eq!(cells(&products, "as main"), [json!(1), json!(0), json!(0)]);
    let orders = t.records(&shop.orders, "boss").await;
    assert_eq!(cells(&orders, "same main"), [json!(1), json!(0), json!(0)]);

    // Refusals change nothing.
    let before = t.app.event_count().await;
    let products_id = id(&shop.products).to_string();
    for (column, message) in [
        (
            json!({"direction": "incoming", "match": {"items": "$self"}}),
            "source_table_id is required",
        ),
        (
            json!({"direction": "incoming", "source_table_id": "nope", "match": {"items": "$self"}}),
            "must be a table id",
        ),
        (
            json!({"direction": "incoming", "source_table_id": orders_id}),
            "match is required",
        ),
        (
            json!({"direction": "incoming", "source_table_id": orders_id, "match": {}}),
            "1..3 pairs",
        ),
        (
            json!({"direction": "incoming", "source_table_id": orders_id, "match": {"label": "$self"}}),
            "not a link column",
        ),
        (
            json!({"direction": "incoming", "source_table_id": products_id, "match": {"name": "$self"}}),
            "not a link column",
        ),
        (
            json!({"direction": "incoming", "source_table_id": orders_id, "match": {"items": "name"}}),
            "not a cardinality-one link",
        ),
        (
            json!({"direction": "incoming", "source_table_id": orders_id, "match": {"items": "$self"},
                "link_field": "x"}),
            "link_field is only allowed",
        ),
        (json!({"direction": "sideways"}), "direction must be"),
        (
            json!({"source_table_id": orders_id, "link_field": "x"}),
            "only allowed on incoming",
        ),
    ] {
        let mut body = json!({"name": "x", "type": "rollup", "aggregation": "count"});
        body.as_object_mut()
            .unwrap()
            .extend(column.as_object().unwrap().clone());
        let got = t.add_column(&shop.products, "boss", body.clone()).await;
        assert_eq!(got.0, 400, "{body}: {}", got.1);
        let text = got.1["detail"]["message"].as_str().unwrap_or_default();
        assert!(text.contains(message), "{body}: {text}");
    }
    // An order's `items` link to products, not to orders: no $self on orders.
    let got = t
        .add_column(
            &shop.orders,
            "boss",
            json!({"name": "x", "type": "rollup", "aggregation": "count", "direction": "incoming",
                   "source_table_id": orders_id, "match": {"items": "$self"}}),
        )
        .await;
    assert!(
        got.1.to_string().contains("does not link to this table"),
        "{}",
        got.1
    );
    assert_eq!(t.app.event_count().await, before);
    // The my-side link column is a dependency.
    let main = shop.keys["main"].as_str().unwrap();
    let got = t
        .call(
            Method::DELETE,
            &format!("{}/columns/{main}", shop.orders),
            "boss",
            None,
        )
        .await;
    assert_eq!(code(&got), "column_used_by_computed_column", "{}", got.1);
}
