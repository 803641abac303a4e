//! Formula columns over HTTP (spec section 2 `expression`, section 4 columns and
//! preview, the limits of section 8): values in reads, filters, sorts, aggregates,
//! exports and public reads; renames flowing through; dependencies refusing deletes
//! and type changes; hidden columns hiding the formulas that read them.

use super::fixture::{Tables, code};
use super::public_read::{mint, query};
use reqwest::Method;
use serde_json::{Value, json};
use std::collections::HashMap;

/// A table with price, qty, paid and title, three records and three formulas.
async fn priced(t: &Tables) -> String {
    let table = t.table("company", "boss", "orders").await;
    for (name, kind) in [
        ("price", "integer"),
        ("qty", "integer"),
        ("paid", "boolean"),
        ("title", "string"),
    ] {
        t.column(&table, json!({"name": name, "type": kind})).await;
    }
    t.record(
        &table,
        json!({"price": 10, "qty": 3, "paid": true, "title": "a"}),
    )
    .await;
    t.record(
        &table,
        json!({"price": 5, "qty": 0, "paid": false, "title": "b"}),
    )
    .await;
    t.record(&table, json!({"qty": 2, "title": "c"})).await;
    for (name, expression) in [
        ("Total", "[price] * [qty]"),
        ("Label", "IF([paid], [title], \"unpaid\")"),
        ("Ratio", "[price] / [qty]"),
    ] {
        let (status, body) = t
            .add_column(
                &table,
                "boss",
                json!({"name": name, "type": "formula", "expression": expression}),
            )
            .await;
        assert_eq!(status, 200, "{expression}: {body}");
        assert_eq!(body["column"]["type"], "formula");
        assert_eq!(body["column"]["expression"], expression);
        assert_eq!(body["migration_info"]["records_migrated"], 0);
    }
    table
}

/// The internal keys of the priced table's columns by name.
async fn keys(t: &Tables, table: &str) -> HashMap<&'static str, String> {
    let mut keys = HashMap::new();
    for name in ["price", "qty", "title", "Total", "Ratio"] {
        keys.insert(name, t.column_key(table, name).await);
    }
    keys
}

fn column_of(page: &Value, name: &str) -> Vec<Value> {
    page["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["data"][name].clone())
        .collect()
}

#[tokio::test]
async fn formula_columns_compute_in_reads_filters_sorts_and_exports() {
    let t = Tables::new().await;
    let table = priced(&t).await;
    let page = t.records(&table, "boss").await;
    assert_eq!(
        column_of(&page, "Total"),
        [json!(30), json!(0), json!(null)]
    );
    assert_eq!(column_of(&page, "Label"), ["a", "unpaid", "unpaid"]);
    let ratio = column_of(&page, "Ratio");
    assert!(
        (ratio[0].as_f64().unwrap() - 10.0 / 3.0).abs() < 1e-9,
        "{ratio:?}"
    );
    assert_eq!(
        ratio[1..],
        [json!(null), json!(null)],
        "x / 0 and empty cells"
    );

    // Filters, sorts and aggregates compute the same values.
    let (status, found) = t
        .search(
            &table,
            json!({"filter": {"column": "Total", "op": "gte", "value": 1}}),
        )
        .await;
    assert_eq!(status, 200, "{found}");
    assert_eq!(column_of(&found, "title"), ["a"]);
    let (_, sorted) = t
        .search(
            &table,
            json!({"sort": [{"column": "Total", "order": "asc"}]}),
        )
        .await;
    assert_eq!(
        column_of(&sorted, "title"),
        ["b", "a", "c"],
        "empty sorts last"
    );
    let (_, labelled) = t
        .search(
            &table,
            json!({"filter": {"column": "Label", "op": "eq", "value": "unpaid"}}),
        )
        .await;
    assert_eq!(labelled["total"], 2, "{labelled}");
    let (status, body) = t
        .call(
            Method::POST,
            &format!("{table}/records/aggregate"),
            "boss",
            Some(json!({"aggregations": [{"op": "sum", "column": "Total", "alias": "sum"}]})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["groups"][0]["values"]["sum"], 30);
    let (status, refused) = t
        .search(
            &table,
            json!({"filter": {"column": "Total", "op": "contains", "value": "3"}}),
        )
        .await;
    assert_eq!(
        (status, code(&(status, refused.clone()))),
        (400, "invalid_query")
    );

    // Exports carry them.
    let csv = t.export_csv(&table, json!({"format": "csv"})).await;
    let header = csv.lines().next().unwrap();
    assert!(
        header.contains("Total") && header.contains("Label"),
        "{csv}"
    );
    assert!(csv.lines().nth(1).unwrap().contains("30"), "{csv}");

    // Formulas are never written.
    let got = t
        .insert(&table, "boss", json!({"price": 1, "Total": 5}))
        .await;
    assert_eq!(got.0, 400, "{}", got.1);
    assert_eq!(code(&got), "invalid_record_value");
    assert!(got.1.to_string().contains("computed"), "{}", got.1);

    // A renamed column is named anew in the expression; values still compute.
    let price = t.column_key(&table, "price").await;
    let (status, body) = t
        .call(
            Method::PATCH,
            &format!("{table}/columns/{price}"),
            "boss",
            Some(json!({"name": "unit price"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (_, columns) = t
        .call(Method::GET, &format!("{table}/columns"), "boss", None)
        .await;
    let total = columns
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "Total")
        .unwrap();
    assert_eq!(total["expression"], "[unit price] * [qty]");
    let page = t.records(&table, "boss").await;
    assert_eq!(column_of(&page, "Total")[0], 30);
}

#[tokio::test]
async fn formula_errors_name_the_problem_and_change_nothing() {
    let t = Tables::new().await;
    let table = priced(&t).await;
    let before = t.app.event_count().await;
    let too_long = format!("1{}", " + 1".repeat(250));
    let too_deep = format!("{}1{}", "(".repeat(21), ")".repeat(21));
    let too_many = vec!["[qty]"; 21].join(" + ");
    for (expression, message) in [
        (Value::Null, "expression is required"),
        (json!("[price] +"), "syntax error at character"),
        (json!("[nope] * 2"), "Column 'nope' does not exist"),
        (json!("[title] * 2"), "needs numbers"),
        (
            json!("IF([price], 1, 2)"),
            "condition of IF must be a boolean",
        ),
        (json!("[to -> amount]"), "'to' is not a link column"),
        (json!(too_long), "at most 1000"),
        (json!(too_deep), "at most 20"),
        (json!(too_many), "at most 20"),
    ] {
        let got = t
            .add_column(
                &table,
                "boss",
                json!({"name": "F", "type": "formula", "expression": expression}),
            )
            .await;
        assert_eq!(got.0, 400, "{expression}: {}", got.1);
        assert_eq!(code(&got), "column_config_invalid", "{}", got.1);
        let text = got.1["detail"]["message"].as_str().unwrap_or_default();
        assert!(text.contains(message), "{expression}: {text}");
    }
    assert_eq!(t.app.event_count().await, before, "nothing was recorded");
}

#[tokio::test]
async fn formula_dependencies_refuse_delete_and_retype() {
    let t = Tables::new().await;
    let table = priced(&t).await;
    let keys = keys(&t, &table).await;
    let key = |name: &str| keys[name].clone();
    // A formula reading a formula.
    t.column(
        &table,
        json!({"name": "Double", "type": "formula", "expression": "[Total] * 2"}),
    )
    .await;
    let path = |k: &str| format!("{table}/columns/{k}");
    let got = t
        .call(Method::DELETE, &path(&key("price")), "boss", None)
        .await;
    assert_eq!(got.0, 409, "{}", got.1);
    assert_eq!(code(&got), "column_used_by_computed_column");
    assert_eq!(
        got.1["detail"]["usage_count"], 2,
        "Total and Ratio: {}",
        got.1
    );
    let got = t
        .call(
            Method::PATCH,
            &path(&key("price")),
            "boss",
            Some(json!({"type": "string"})),
        )
        .await;
    assert_eq!(got.0, 409, "{}", got.1);
    assert_eq!(code(&got), "column_used_by_computed_column");
    let got = t
        .call(Method::DELETE, &path(&key("Total")), "boss", None)
        .await;
    assert_eq!(
        code(&got),
        "column_used_by_computed_column",
        "Double reads it"
    );
    // A formula cannot become a stored column.
    let got = t
        .call(
            Method::PATCH,
            &path(&key("Ratio")),
            "boss",
            Some(json!({"type": "float"})),
        )
        .await;
    assert_eq!(got.0, 400, "{}", got.1);
    // Deleting the readers first frees the column.
    let double = t.column_key(&table, "Double").await;
    for k in [double, key("Total"), key("Ratio"), key("price")] {
        let got = t.call(Method::DELETE, &path(&k), "boss", None).await;
        assert_eq!(got.0, 200, "{}", got.1);
    }
}

#[tokio::test]
async fn formulas_follow_hidden_columns_and_the_preview_samples_them() {
    let t = Tables::new().await;
    let table = priced(&t).await;
    let (status, body) = t
        .call(
            Method::PATCH,
            &format!("{table}/default-permissions"),
            "boss",
            Some(json!({"hidden_columns": ["price"]})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let page = t.records(&table, "member").await;
    let first = &page["records"][0]["data"];
    assert!(
        first.get("price").is_none() && first.get("Total").is_none(),
        "{first}"
    );
    assert!(first.get("Ratio").is_none(), "{first}");
    assert_eq!(first["Label"], "a", "a formula over visible columns shows");
    let got = t
        .search(
            &table,
            json!({"filter": {"column": "Total", "op": "gt", "value": 0}}),
        )
        .await;
    assert_eq!(got.0, 200, "the manager still filters by it: {}", got.1);
    let got = t
        .call(
            Method::POST,
            &format!("{table}/records/search"),
            "member",
            Some(json!({"filter": {"column": "Total", "op": "gt", "value": 0}})),
        )
        .await;
    assert_eq!(
        got.0, 400,
        "a hidden formula is no column to its reader: {}",
        got.1
    );

    // The preview computes the first five records' values and writes nothing.
    let before = t.app.event_count().await;
    let preview = format!("{table}/columns/preview");
    let (status, body) = t
        .call(
            Method::POST,
            &preview,
            "boss",
            Some(json!({"name": "Net", "type": "formula", "expression": "[price] - 1"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["valid"], true, "{body}");
    assert_eq!(body["normalized"]["expression"], "[price] - 1");
    let values: Vec<Value> = body["sample"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["value"].clone())
        .collect();
    assert_eq!(values, [json!(9), json!(4), json!(null)]);
    let (_, body) = t
        .call(
            Method::POST,
            &preview,
            "boss",
            Some(json!({"name": "Net", "type": "formula", "expression": "[price] -"})),
        )
        .await;
    assert_eq!(body["valid"], false);
    assert_eq!(body["errors"][0]["code"], "column_config_invalid");
    assert_eq!(t.app.event_count().await, before);
}

#[tokio::test]
async fn public_reads_publish_a_formula_only_with_what_it_reads() {
    let t = Tables::new().await;
    let table = priced(&t).await;
    let keys = keys(&t, &table).await;
    let key = |name: &str| json!(keys[name]);
    let (status, view) = t
        .call(
            Method::POST,
            &format!("{table}/views"),
            "boss",
            Some(json!({"name": "all"})),
        )
        .await;
    assert_eq!(status, 201, "{view}");
    let mint_for = |visible: Value| {
        json!({"view_id": view["id"], "secretless": true, "allow_query": true, "rpm": 1000,
               "visible_columns": visible})
    };
    let (status, minted) = mint(
        &t,
        &table,
        mint_for(json!([
            key("price"),
            key("qty"),
            key("Total"),
            key("title")
        ])),
    )
    .await;
    assert_eq!(status, 200, "{minted}");
    let token = minted["token_id"].as_str().unwrap();
    let (status, page) = query(&t, token, json!({})).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["records"][0]["data"]["Total"], 30, "{page}");
    assert!(page["columns"].to_string().contains("Total"));
    let (status, refused) = query(
        &t,
        token,
        json!({"stored_filters": [{"column": key("Total"), "op": "gt", "value": 1}]}),
    )
    .await;
    assert_eq!(status, 400, "{refused}");
    assert!(
        refused
            .to_string()
            .contains("Cannot filter on computed column")
    );

    // Without price, Total is not published.
    let (_, minted) = mint(&t, &table, mint_for(json!([key("qty"), key("Total")]))).await;
    let (_, page) = query(&t, minted["token_id"].as_str().unwrap(), json!({})).await;
    assert!(page["records"][0]["data"].get("Total").is_none(), "{page}");
    assert!(!page["columns"].to_string().contains("Total"), "{page}");
}
