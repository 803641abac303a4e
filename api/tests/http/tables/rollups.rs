//! Outgoing rollups and lookups over HTTP (spec section 2 `link_field`,
//! `aggregation`, `target_column`, `pick`): values in reads, filters and sorts,
//! computed under the caller's permissions on the linked table; their refusals and
//! dependencies.

use super::fixture::{Tables, code};
use reqwest::Method;
use serde_json::{Value, json};

struct Shop {
    products: String,
    orders: String,
    /// Column keys by name, both tables.
    keys: Value,
}

fn id(path: &str) -> &str {
    path.rsplit('/').next().unwrap()
}

/// Products A (10, 1.5 kg, 2026-01-01), B (20, 2.5 kg, 2025-06-01), C (5); orders
/// o1 (items A and B, main A), o2 (items C), o3 (no items).
async fn shop(t: &Tables) -> Shop {
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

fn cells(page: &Value, name: &str) -> Vec<Value> {
    page["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["data"].get(name).cloned().unwrap_or(json!("<absent>")))
        .collect()
}

#[tokio::test]
async fn rollups_and_lookups_read_linked_records() {
    let t = Tables::new().await;
    let shop = shop(&t).await;
    let orders = &shop.orders;
    let (status, page) = t
        .call(Method::GET, &format!("{orders}/records"), "boss", None)
        .await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(cells(&page, "count"), [json!(2), json!(1), json!(0)]);
    assert_eq!(cells(&page, "total"), [json!(30), json!(5), json!(null)]);
    assert_eq!(
        cells(&page, "mean weight"),
        [json!(2.0), json!(null), json!(null)]
    );
    assert_eq!(
        cells(&page, "newest"),
        [json!("2026-01-01"), json!(null), json!(null)]
    );
    assert_eq!(
        cells(&page, "names"),
        [json!(["A", "B"]), json!(["C"]), json!([])]
    );
    assert_eq!(
        cells(&page, "priciest"),
        [json!("B"), json!("C"), json!(null)]
    );
    assert_eq!(
        cells(&page, "main name"),
        [json!("A"), json!(null), json!(null)]
    );
    assert_eq!(
        cells(&page, "cheap"),
        [json!(1), json!(1), json!(0)],
        "a filtered rollup"
    );

    // Filters and sorts compute the same values.
    let (status, found) = t
        .search(
            orders,
            json!({"filter": {"column": "total", "op": "gte", "value": 10}}),
        )
        .await;
    assert_eq!(status, 200, "{found}");
    assert_eq!(cells(&found, "label"), ["o1"]);
    let (_, sorted) = t
        .search(
            orders,
            json!({"sort": [{"column": "count", "order": "asc"}]}),
        )
        .await;
    assert_eq!(cells(&sorted, "label"), ["o3", "o2", "o1"]);
    let got = t
        .search(
            orders,
            json!({"filter": {"column": "names", "op": "eq", "value": "A"}}),
        )
        .await;
    assert_eq!(got.0, 400, "a list lookup is no scalar: {}", got.1);

    // The column answers its resolved configuration.
    let (_, columns) = t
        .call(Method::GET, &format!("{orders}/columns"), "boss", None)
        .await;
    let total = columns
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "total")
        .unwrap();
    assert_eq!(total["link_field"], shop.keys["items"]);
    assert_eq!(total["aggregation"], "sum");
    assert_eq!(total["target_column"], shop.keys["price"]);
    assert_eq!(total["direction"], "outgoing");
    assert_eq!(total["restricted"], false);

    // A product deleted from under a link is no longer counted.
    let (_, products) = t
        .call(
            Method::GET,
            &format!("{}/records", shop.products),
            "boss",
            None,
        )
        .await;
    let b = products["records"][1]["id"].as_str().unwrap().to_string();
    let (status, _) = t
        .call(
            Method::DELETE,
            &format!("{}/records/{b}", shop.products),
            "boss",
            None,
        )
        .await;
    assert_eq!(status, 200);
    let (_, page) = t
        .call(Method::GET, &format!("{orders}/records"), "boss", None)
        .await;
    assert_eq!(cells(&page, "count")[0], 1);
    assert_eq!(cells(&page, "priciest")[0], "A");

    // A linked column retyped under a rollup reads as empty for it, while a rollup
    // created after the change reads the new type.
    let price = shop.keys["price"].as_str().unwrap();
    let (status, body) = t
        .call(
            Method::PATCH,
            &format!("{}/columns/{price}", shop.products),
            "boss",
            Some(json!({"type": "float"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    t.column(
        orders,
        json!({"name": "total now", "type": "rollup", "link_field": "items",
               "aggregation": "sum", "target_column": "price"}),
    )
    .await;
    let (status, page) = t
        .call(Method::GET, &format!("{orders}/records"), "boss", None)
        .await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(
        cells(&page, "total"),
        [json!(null), json!(null), json!(null)]
    );
    assert_eq!(
        cells(&page, "total now"),
        [json!(10.0), json!(5.0), json!(null)]
    );
    let (status, body) = t
        .call(
            Method::PATCH,
            &format!("{}/columns/{price}", shop.products),
            "boss",
            Some(json!({"type": "integer"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");

    // The preview samples through the same computation.
    let (status, body) = t
        .call(
            Method::POST,
            &format!("{orders}/columns/preview"),
            "boss",
            Some(
                json!({"name": "cheapest", "type": "rollup", "link_field": "items",
                        "aggregation": "min", "target_column": "price"}),
            ),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["normalized"]["restricted"], false);
    let sample: Vec<Value> = body["sample"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["value"].clone())
        .collect();
    assert_eq!(sample, [json!(10), json!(5), json!(null)]);
}

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
            "not available yet",
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

#[tokio::test]
async fn rollups_count_only_the_linked_rows_the_caller_reads() {
    let t = Tables::new().await;
    let shop = shop(&t).await;
    // Members read products cheaper than 15 and never their names.
    let price = shop.keys["price"].as_str().unwrap();
    let (status, body) = t
        .call(
            Method::PATCH,
            &format!("{}/default-permissions", shop.products),
            "boss",
            Some(json!({"can_read": "filtered",
                        "row_filter": {"column": price, "op": "lt", "value": 15},
                        "hidden_columns": ["name"]})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, page) = t
        .call(
            Method::GET,
            &format!("{}/records", shop.orders),
            "member",
            None,
        )
        .await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(
        cells(&page, "count"),
        [json!(1), json!(1), json!(0)],
        "B is not theirs"
    );
    assert_eq!(cells(&page, "total"), [json!(10), json!(5), json!(null)]);
    assert_eq!(
        cells(&page, "names"),
        [json!([]), json!([]), json!([])],
        "names are hidden"
    );
    assert_eq!(
        cells(&page, "main name"),
        [json!(null), json!(null), json!(null)]
    );
    assert_eq!(cells(&page, "cheap"), [json!(1), json!(1), json!(0)]);
    // The manager still reads everything.
    let (_, page) = t
        .call(
            Method::GET,
            &format!("{}/records", shop.orders),
            "boss",
            None,
        )
        .await;
    assert_eq!(cells(&page, "count")[0], 2);

    // A caller who cannot read the products table at all reads empty values and
    // the column says `restricted`.
    let (status, body) = t
        .call(
            Method::PATCH,
            &format!("{}/default-permissions", shop.products),
            "boss",
            Some(json!({"can_read": "none", "row_filter": null})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (_, page) = t
        .call(
            Method::GET,
            &format!("{}/records", shop.orders),
            "member",
            None,
        )
        .await;
    assert_eq!(cells(&page, "count"), [json!(0), json!(0), json!(0)]);
    assert_eq!(
        cells(&page, "total"),
        [json!(null), json!(null), json!(null)]
    );
}

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

    let (_, products) = t
        .call(
            Method::GET,
            &format!("{}/records", shop.products),
            "boss",
            None,
        )
        .await;
    assert_eq!(cells(&products, "ordered"), [json!(1), json!(1), json!(1)]);
    assert_eq!(cells(&products, "labels"), [json!(1), json!(1), json!(1)]);
    assert_eq!(cells(&products, "as main"), [json!(1), json!(0), json!(0)]);
    let (_, orders) = t
        .call(
            Method::GET,
            &format!("{}/records", shop.orders),
            "boss",
            None,
        )
        .await;
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
