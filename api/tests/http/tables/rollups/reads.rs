//! Rollup and lookup values in reads, filters, sorts and the preview, and under
//! the caller's permissions on the linked table.

use super::{cells, shop};
use crate::tables::fixture::Tables;
use reqwest::Method;
use serde_json::{Value, json};

#[tokio::test]
async fn rollups_and_lookups_read_linked_records() {
    let t = Tables::new().await;
    let shop = shop(&t).await;
    let orders = &shop.orders;
    let page = t.records(orders, "boss").await;
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
    let products = t.records(&shop.products, "boss").await;
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
    let page = t.records(orders, "boss").await;
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
    let page = t.records(orders, "boss").await;
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
    let page = t.records(&shop.orders, "member").await;
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
    let page = t.records(&shop.orders, "boss").await;
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
    let page = t.records(&shop.orders, "member").await;
    assert_eq!(cells(&page, "count"), [json!(0), json!(0), json!(0)]);
    assert_eq!(
        cells(&page, "total"),
        [json!(null), json!(null), json!(null)]
    );
    // Both the column routes and the table list say so; the manager reads on.
    let restricted = |columns: &Value, name: &str| {
        columns
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .map(|c| c["restricted"].clone())
    };
    let (_, columns) = t
        .call(
            Method::GET,
            &format!("{}/columns", shop.orders),
            "member",
            None,
        )
        .await;
    assert_eq!(restricted(&columns, "total"), Some(json!(true)));
    assert_eq!(restricted(&columns, "label"), Some(json!(false)));
    let mount = shop.orders.split("/tables/").next().unwrap().to_string();
    for (user, expected) in [("member", true), ("boss", false)] {
        let (_, list) = t
            .call(Method::GET, &format!("{mount}/tables"), user, None)
            .await;
        let orders = list["tables"]
            .as_array()
            .unwrap()
            .iter()
            .find(|table| table["name"] == "orders")
            .unwrap_or_else(|| panic!("{user}: {list}"));
        assert_eq!(
            restricted(&orders["columns"], "total"),
            Some(json!(expected)),
            "{user} lists tables"
        );
    }
}
