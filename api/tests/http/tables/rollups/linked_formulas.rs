//! Cross-table formula references `[Link -> Column]` (spec section 2 `expression`):
//! a number of the record a cardinality-one link names, read under the caller's
//! permissions there; evaluate-only; refused forms; the link column they read.

use super::{assert_eval_only, assert_read_by_computed, cells, shop};
use crate::tables::fixture::{Tables, code};
use reqwest::Method;
use serde_json::{Value, json};

async fn formula(t: &Tables, table: &str, name: &str, expression: &str) -> (u16, Value) {
    t.add_column(
        table,
        "boss",
        json!({"name": name, "type": "formula", "expression": expression}),
    )
    .await
}

#[tokio::test]
async fn formulas_read_numbers_of_the_linked_record() {
    let t = Tables::new().await;
    let shop = shop(&t).await;
    let orders = &shop.orders;
    let (status, body) = formula(&t, orders, "double main", "[main -> price] * 2").await;
    assert_eq!(status, 200, "{body}");
    let price = shop.keys["price"].as_str().unwrap();
    assert_eq!(
        body["column"]["expression"],
        format!("[main -> {price}] * 2"),
        "the target column is named by its internal key"
    );
    let (status, body) = formula(&t, orders, "heavy", "[main -> weight] > 1").await;
    assert_eq!(status, 200, "{body}");
    // A formula reading that formula reads through the link too.
    let (status, body) = formula(&t, orders, "plus one", "[double main] + 1").await;
    assert_eq!(status, 200, "{body}");
    let page = t.records(orders, "boss").await;
    assert_eq!(
        cells(&page, "double main"),
        [json!(20), json!(null), json!(null)]
    );
    assert_eq!(
        cells(&page, "heavy"),
        [json!(true), json!(null), json!(null)]
    );
    assert_eq!(
        cells(&page, "plus one"),
        [json!(21), json!(null), json!(null)]
    );

    // Under the caller's permissions on the products: A hidden, so nothing.
    let (status, body) = t
        .call(
            Method::PATCH,
            &format!("{}/default-permissions", shop.products),
            "boss",
            Some(json!({"can_read": "filtered", "row_filter": {"column": price, "op": "gt", "value": 15}})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let page = t.records(orders, "member").await;
    assert_eq!(
        cells(&page, "double main"),
        [json!(null), json!(null), json!(null)]
    );
    let (_, columns) = t
        .call(Method::GET, &format!("{orders}/columns"), "boss", None)
        .await;
    let double = columns
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "double main")
        .unwrap();
    assert_eq!(double["restricted"], false, "the manager reads products");

    // Evaluate-only, also through another formula.
    assert_eval_only(&t, orders, "double main", "plus one").await;
    // The link column cannot be deleted while a formula reads through it.
    assert_read_by_computed(&t, orders, shop.keys["main"].as_str().unwrap()).await;
}

#[tokio::test]
async fn cross_table_references_are_checked() {
    let t = Tables::new().await;
    let shop = shop(&t).await;
    let before = t.app.event_count().await;
    for (expression, message) in [
        ("[items -> price]", "must be a cardinality-one link"),
        (
            "[main -> name]",
            "cross-table references read integer and float",
        ),
        (
            "[main -> nope]",
            "'nope' is not a column of the linked table",
        ),
        ("[label -> price]", "'label' is not a link column"),
        ("[nope -> price]", "'nope' is not a link column"),
    ] {
        let got = formula(&t, &shop.orders, "F", expression).await;
        assert_eq!(got.0, 400, "{expression}: {}", got.1);
        assert_eq!(code(&got), "column_config_invalid");
        let text = got.1["detail"]["message"].as_str().unwrap_or_default();
        assert!(text.contains(message), "{expression}: {text}");
    }
    assert_eq!(t.app.event_count().await, before, "refusals change nothing");
}
