//! Lookup `fallback` (spec section 2): a defaults-table value when the linked record
//! gives none, never when the caller may not read what the link names; refused
//! configurations; evaluate-only.

use super::{assert_eval_only, assert_read_by_computed, cells, id, shop};
use crate::tables::fixture::{Tables, code};
use reqwest::Method;
use serde_json::{Value, json};

/// Orders o1..o3 of the shop plus o4 (main: D, a product without price, EU), o5
/// (no main, US) and o6 (main: A, US); a `defaults` table (EU 7, US 9); and the
/// lookups `price or default` (fallback by the order's region) and `eu default`
/// (fallback by a literal). Returns the defaults table.
async fn with_defaults(t: &Tables, shop: &super::Shop) -> String {
    let defaults = t.table("company", "boss", "defaults").await;
    for (name, kind) in [
        ("region", "string"),
        ("price", "integer"),
        ("starts", "date"),
    ] {
        t.column(&defaults, json!({"name": name, "type": kind}))
            .await;
    }
    t.record(&defaults, json!({"region": "EU", "price": 7}))
        .await;
    t.record(&defaults, json!({"region": "US", "price": 9}))
        .await;
    let orders = &shop.orders;
    t.column(orders, json!({"name": "region", "type": "string"}))
        .await;
    let a = t.records(&shop.products, "boss").await["records"][0]["id"].clone();
    let d = t.record(&shop.products, json!({"name": "D"})).await["id"].clone();
    t.record(orders, json!({"label": "o4", "main": [d], "region": "EU"}))
        .await;
    t.record(orders, json!({"label": "o5", "region": "US"}))
        .await;
    t.record(orders, json!({"label": "o6", "main": [a], "region": "US"}))
        .await;
    for (name, pairs) in [
        ("price or default", json!({"region": "$row.region"})),
        ("eu default", json!({"region": "EU"})),
    ] {
        let column = json!({"name": name, "type": "lookup", "link_field": "main", "target_column": "price",
            "fallback": {"table_id": id(&defaults), "match": pairs, "target_column": "price"}});
        let (status, body) = t.add_column(orders, "boss", column).await;
        assert_eq!(status, 200, "{name}: {body}");
    }
    defaults
}

async fn restrict(t: &Tables, table: &str, grant: Value) {
    let path = format!("{table}/default-permissions");
    let (status, body) = t.call(Method::PATCH, &path, "boss", Some(grant)).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn lookups_fall_back_to_the_defaults_table_when_the_link_gives_nothing() {
    let t = Tables::new().await;
    let shop = shop(&t).await;
    let defaults = with_defaults(&t, &shop).await;
    let page = t.records(&shop.orders, "boss").await;
    assert_eq!(cells(&page, "label"), ["o1", "o2", "o3", "o4", "o5", "o6"]);
    let null = Value::Null;
    assert_eq!(
        cells(&page, "price or default"),
        [
            json!(10),
            null.clone(),
            null.clone(),
            json!(7),
            json!(9),
            json!(10)
        ],
        "the linked price, else the region's default (o2 and o3 have no region)"
    );
    assert_eq!(
        cells(&page, "eu default"),
        [json!(10), json!(7), json!(7), json!(7), json!(7), json!(10)]
    );

    // The column shows its fallback, columns by internal key.
    let (_, columns) = t
        .call(
            Method::GET,
            &format!("{}/columns", shop.orders),
            "boss",
            None,
        )
        .await;
    let column = columns
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "price or default")
        .unwrap();
    let region = t.column_key(&shop.orders, "region").await;
    let their_region = t.column_key(&defaults, "region").await;
    assert_eq!(column["fallback"]["table_id"], id(&defaults));
    assert_eq!(
        column["fallback"]["match"][&their_region],
        format!("$row.{region}")
    );

    // Evaluate-only: never filtered or sorted by.
    assert_eval_only(&t, &shop.orders, "price or default", "eu default").await;
    // The column of this table it matches by cannot go while it is read.
    assert_read_by_computed(&t, &shop.orders, &region).await;
}

#[tokio::test]
async fn a_link_the_caller_may_not_read_never_falls_back() {
    let t = Tables::new().await;
    let shop = shop(&t).await;
    let defaults = with_defaults(&t, &shop).await;
    let price = shop.keys["price"].as_str().unwrap();
    let null = Value::Null;
    // Members read products cheaper than 15: A, C (D has no price, so not D).
    restrict(
        &t,
        &shop.products,
        json!({"can_read": "filtered", "row_filter": {"column": price, "op": "lt", "value": 15}}),
    )
    .await;
    let page = t.records(&shop.orders, "member").await;
    assert_eq!(
        cells(&page, "price or default"),
        [
            json!(10),
            null.clone(),
            null.clone(),
            null.clone(),
            json!(9),
            json!(10)
        ],
        "o4 links D, which the member may not read: no fallback"
    );
    // The price column hidden: every link is a denial; no link still falls back.
    restrict(
        &t,
        &shop.products,
        json!({"can_read": "all", "row_filter": null, "hidden_columns": ["price"]}),
    )
    .await;
    let page = t.records(&shop.orders, "member").await;
    assert_eq!(
        cells(&page, "price or default"),
        [
            null.clone(),
            null.clone(),
            null.clone(),
            null.clone(),
            json!(9),
            null.clone()
        ]
    );
    // The products table unreadable: the same, and the column is restricted.
    restrict(
        &t,
        &shop.products,
        json!({"can_read": "none", "row_filter": null, "hidden_columns": []}),
    )
    .await;
    let page = t.records(&shop.orders, "member").await;
    assert_eq!(cells(&page, "eu default")[1], json!(7), "o2 has no link");
    assert_eq!(cells(&page, "eu default")[0], null, "o1 links A");
    // The defaults table unreadable: nothing to fall back to.
    restrict(
        &t,
        &defaults,
        json!({"can_read": "none", "row_filter": null}),
    )
    .await;
    let page = t.records(&shop.orders, "member").await;
    assert_eq!(cells(&page, "eu default")[1], null);
    // The manager still reads everything.
    let page = t.records(&shop.orders, "boss").await;
    assert_eq!(cells(&page, "price or default")[3], json!(7));
}

#[tokio::test]
async fn fallback_configurations_are_checked() {
    let t = Tables::new().await;
    let shop = shop(&t).await;
    let defaults = with_defaults(&t, &shop).await;
    let elsewhere = t.table("department:rnd", "boss", "rnd defaults").await;
    let before = t.app.event_count().await;
    let lookup = |link: &str, fallback: Value| json!({"name": "x", "type": "lookup", "link_field": link, "target_column": "price", "fallback": fallback});
    let d = id(&defaults);
    let cases = [
        (
            lookup(
                "items",
                json!({"table_id": d, "match": {"region": "EU"}, "target_column": "price"}),
            ),
            "valid only on a cardinality-one link or a picked lookup",
        ),
        (
            lookup(
                "main",
                json!({"table_id": d, "match": {"region": "EU"}, "target_column": "starts"}),
            ),
            "the lookup shows integer values",
        ),
        (
            lookup(
                "main",
                json!({"table_id": d, "match": {"region": "EU", "price": 1, "starts": "2026-01-01"}, "target_column": "price"}),
            ),
            "match holds 1..2 pairs",
        ),
        (
            lookup(
                "main",
                json!({"table_id": uuid::Uuid::new_v4(), "match": {"region": "EU"}, "target_column": "price"}),
            ),
            "does not exist",
        ),
        (
            lookup(
                "main",
                json!({"table_id": d, "match": {"region": "$row.nope"}, "target_column": "price"}),
            ),
            "'nope' is not a stored column of this table",
        ),
        (
            lookup(
                "main",
                json!({"table_id": d, "match": {"region": ["EU"]}, "target_column": "price"}),
            ),
            "match values are",
        ),
        (
            lookup(
                "main",
                json!({"table_id": d, "match": {"starts": "soon"}, "target_column": "price"}),
            ),
            "match: 'starts'",
        ),
        (
            lookup(
                "main",
                json!({"table_id": d, "match": {"region": "EU"}, "target_column": "price", "when": 1}),
            ),
            "unknown key 'when'",
        ),
        (
            lookup(
                "main",
                json!({"table_id": id(&elsewhere), "match": {"region": "EU"}, "target_column": "price"}),
            ),
            "an ancestor scope",
        ),
    ];
    for (column, message) in cases {
        let got = t.add_column(&shop.orders, "boss", column.clone()).await;
        assert_eq!(got.0, 400, "{column}: {}", got.1);
        assert_eq!(code(&got), "column_config_invalid");
        let text = got.1["detail"]["message"].as_str().unwrap_or_default();
        assert!(text.contains(message), "{column}: {text}");
    }
    assert_eq!(t.app.event_count().await, before, "refusals change nothing");
    // A picked many-lookup may fall back.
    let picked = json!({"name": "priciest or default", "type": "lookup", "link_field": "items",
        "target_column": "price", "pick": {"order_column": "price", "direction": "desc"},
        "fallback": {"table_id": d, "match": {"region": "US"}, "target_column": "price"}});
    let (status, body) = t.add_column(&shop.orders, "boss", picked).await;
    assert_eq!(status, 200, "{body}");
    let page = t.records(&shop.orders, "boss").await;
    assert_eq!(
        cells(&page, "priciest or default")[..3],
        [json!(20), json!(5), json!(9)]
    );
}
