//! Record routes: writes, `can_edit`, search flags, paging, views, aggregate.

use super::fixture::{Tables, code};
use crate::support::assert_validation;
use reqwest::Method;
use serde_json::json;

#[tokio::test]
async fn can_edit_follows_the_creator_and_table_managers() {
    let t = Tables::new().await;
    let table = t.table("company", "boss", "notes").await;
    t.column(&table, json!({"name": "note", "type": "text"}))
        .await;
    let (status, mine) = t.insert(&table, "member", json!({"note": "mine"})).await;
    assert_eq!(status, 201, "{mine}");
    assert_eq!(mine["can_edit"], true);
    let path = format!("{table}/records/{}", mine["id"].as_str().unwrap());
    let (_, seen) = t.call(Method::GET, &path, "outsider", None).await;
    assert_eq!(seen["can_edit"], false, "another user");
    let (_, seen) = t.call(Method::GET, &path, "boss", None).await;
    assert_eq!(
        seen["can_edit"], true,
        "a company manager manages the table"
    );
    let got = t
        .call(
            Method::PUT,
            &path,
            "outsider",
            Some(json!({"data": {"note": "x"}})),
        )
        .await;
    assert_eq!(got.0, 403);
    let (status, _) = t.call(Method::DELETE, &path, "outsider", None).await;
    assert_eq!(status, 403);
    let (status, changed) = t
        .call(
            Method::PUT,
            &path,
            "member",
            Some(json!({"data": {"note": "changed"}})),
        )
        .await;
    assert_eq!(status, 200, "{changed}");
    assert_eq!(changed["data"]["note"], "changed");
    assert!(changed["updated_at"].as_str() >= mine["updated_at"].as_str());
    t.insert(&table, "outsider", json!({"note": "theirs"}))
        .await;
    let (_, found) = t
        .call(
            Method::POST,
            &format!("{table}/records/search"),
            "member",
            Some(json!({"editable": true})),
        )
        .await;
    assert_eq!(found["total"], 1);
    assert_eq!(found["records"][0]["data"]["note"], "changed");
    let (_, found) = t
        .call(
            Method::POST,
            &format!("{table}/records/search"),
            "member",
            Some(json!({"editable": false})),
        )
        .await;
    assert_eq!(found["total"], 1);
    assert_eq!(found["records"][0]["data"]["note"], "theirs");
    let (_, found) = t.search(&table, json!({"editable": true})).await;
    assert_eq!(found["total"], 2, "a manager may edit every row");
    let (_, found) = t.search(&table, json!({"pending_approval": true})).await;
    assert_eq!(found["total"], 0, "nothing is staged for approval");
    let (status, _) = t.call(Method::DELETE, &path, "member", None).await;
    assert_eq!(status, 200);
    let (status, _) = t.call(Method::GET, &path, "member", None).await;
    assert_eq!(status, 404);
    let (status, _) = t
        .call(
            Method::GET,
            &format!("{table}/records?editable=true"),
            "member",
            None,
        )
        .await;
    assert_eq!(
        status, 200,
        "unknown query parameters are ignored on the list route"
    );
}

#[tokio::test]
async fn writes_check_names_required_and_unknown_columns() {
    let t = Tables::new().await;
    let table = t.table("company", "boss", "w").await;
    let key = t
        .column(
            &table,
            json!({"name": "title", "type": "string", "required": true}),
        )
        .await;
    let got = t.insert(&table, "boss", json!({})).await;
    assert_eq!(
        (got.0, code(&got)),
        (400, "invalid_record_value"),
        "{}",
        got.1
    );
    let got = t
        .insert(&table, "boss", json!({"nope": 1, "title": "x"}))
        .await;
    assert_eq!(got.0, 400, "{}", got.1);
    assert!(
        got.1["detail"]["message"]
            .as_str()
            .unwrap()
            .contains("does not exist")
    );
    let record = t.record(&table, json!({key.as_str(): "by key"})).await;
    assert_eq!(record["data"]["title"], "by key");
    let path = format!("{table}/records/{}", record["id"].as_str().unwrap());
    let got = t
        .call(
            Method::PUT,
            &path,
            "boss",
            Some(json!({"data": {"title": null}})),
        )
        .await;
    assert_eq!(got.0, 400, "a required cell cannot be emptied");
    let got = t
        .call(
            Method::PUT,
            &path,
            "boss",
            Some(json!({"data": {}, "extra": 1})),
        )
        .await;
    assert_validation(&got, "extra_forbidden", &["body", "extra"]);
    let got = t
        .call(
            Method::GET,
            &format!("{table}/records/not-a-uuid"),
            "boss",
            None,
        )
        .await;
    assert_eq!(got.0, 422);
}

#[tokio::test]
async fn search_pages_sorts_filters_and_aggregates() {
    let t = Tables::new().await;
    let table = t.table("company", "boss", "s").await;
    t.column(&table, json!({"name": "name", "type": "string"}))
        .await;
    t.column(&table, json!({"name": "n", "type": "integer"}))
        .await;
    t.column(
        &table,
        json!({"name": "kind", "type": "select", "options": ["x", "y"]}),
    )
    .await;
    for i in 0..7 {
        let kind = if i % 2 == 0 { "x" } else { "y" };
        t.record(
            &table,
            json!({"name": format!("item {i}"), "n": i, "kind": kind}),
        )
        .await;
    }
    t.record(&table, json!({"name": "empty"})).await;
    let (_, page) = t
        .search(
            &table,
            json!({"sort": [{"column": "n", "order": "desc"}], "skip": 1, "limit": 2}),
        )
        .await;
    assert_eq!(page["total"], 8);
    let names: Vec<&str> = page["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["data"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["item 5", "item 4"]);
    let (_, found) = t
        .search(
            &table,
            json!({"filter": {"column": "kind", "op": "neq", "value": "x"}}),
        )
        .await;
    assert_eq!(found["total"], 3, "neq excludes empty cells");
    let (_, found) = t
        .search(
            &table,
            json!({"filter": {"not": {"column": "kind", "op": "eq", "value": "x"}}}),
        )
        .await;
    assert_eq!(found["total"], 4, "not(eq) includes empty cells");
    let (_, found) = t
        .search(&table, json!({"filter": {"or": [{"column": "n", "op": "in", "value": [1, 2]}, {"column": "n", "op": "gte", "value": 6}]}}))
        .await;
    assert_eq!(found["total"], 3);
    let (_, found) = t.search(&table, json!({"q": "ITEM 3"})).await;
    assert_eq!(found["total"], 1);
    let (_, found) = t
        .search(
            &table,
            json!({"filter": {"column": "kind", "op": "is_null"}, "columns": ["name"]}),
        )
        .await;
    assert_eq!(
        found["records"][0]["data"],
        json!({"name": "empty"}),
        "projection"
    );
    for bad in [
        json!({"limit": 101}),
        json!({"limit": 0}),
        json!({"skip": -1}),
    ] {
        let (status, _) = t.search(&table, bad.clone()).await;
        assert_eq!(status, 422, "{bad}");
    }
    let (status, body) = t
        .search(
            &table,
            json!({"filter": {"column": "n", "op": "contains", "value": 1}}),
        )
        .await;
    assert_eq!(
        (status, body["detail"]["code"].as_str()),
        (400, Some("invalid_query"))
    );
    let (status, _) = t.search(&table, json!({"filter": {"and": []}})).await;
    assert_eq!(status, 400);
    let (status, body) = t
        .call(Method::POST, &format!("{table}/records/aggregate"), "boss",
              Some(json!({"group_by": ["kind"], "aggregations": [{"op": "count"}, {"op": "avg", "column": "n", "alias": "mean"}, {"op": "max", "column": "n"}]})))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["groups"][0],
        json!({"key": {"kind": "x"}, "values": {"count": 4, "mean": 3.0, "max_n": 6}})
    );
    assert_eq!(body["groups"][2]["key"]["kind"], json!(null));
    let (status, _) = t
        .call(
            Method::POST,
            &format!("{table}/records/aggregate"),
            "boss",
            Some(json!({"aggregations": [{"op": "sum", "column": "name"}]})),
        )
        .await;
    assert_eq!(status, 400, "sum needs numbers");
    let (_, list) = t
        .call(
            Method::GET,
            &format!("{table}/records?sort_by=n&sort_order=desc&limit=1"),
            "boss",
            None,
        )
        .await;
    assert_eq!(list["records"][0]["data"]["n"], 6);
    let (status, _) = t
        .call(
            Method::GET,
            &format!("{table}/records?limit=500"),
            "boss",
            None,
        )
        .await;
    assert_eq!(status, 422);
}

#[tokio::test]
async fn views_store_a_filter_sort_and_projection() {
    let t = Tables::new().await;
    let table = t.table("company", "boss", "v").await;
    let n = t
        .column(&table, json!({"name": "n", "type": "integer"}))
        .await;
    t.column(&table, json!({"name": "label", "type": "string"}))
        .await;
    for i in 0..5 {
        t.record(&table, json!({"n": i, "label": format!("l{i}")}))
            .await;
    }
    let view = json!({"name": "big", "filter": {"column": "n", "op": "gte", "value": 2}, "sort": [{"column": "n", "order": "desc"}], "columns": ["label"]});
    let got = t
        .call(
            Method::POST,
            &format!("{table}/views"),
            "member",
            Some(view.clone()),
        )
        .await;
    assert_eq!(got.0, 403, "views are managed by table managers");
    let (status, created) = t
        .call(Method::POST, &format!("{table}/views"), "boss", Some(view))
        .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["filter"]["column"], n, "stored by internal key");
    let view_id = created["id"].as_str().unwrap();
    let (_, found) = t
        .call(
            Method::POST,
            &format!("{table}/records/search"),
            "member",
            Some(json!({"view_id": view_id})),
        )
        .await;
    assert_eq!(found["total"], 3);
    assert_eq!(found["records"][0]["data"], json!({"label": "l4"}));
    let csv = t
        .export_csv(&table, json!({"format": "csv", "view_id": view_id}))
        .await;
    assert_eq!(csv.lines().count(), 4, "{csv}");
    t.call(
        Method::PATCH,
        &format!("{table}/columns/{n}"),
        "boss",
        Some(json!({"name": "number"})),
    )
    .await;
    let (status, updated) = t
        .call(
            Method::PATCH,
            &format!("{table}/views/{view_id}"),
            "boss",
            Some(json!({"columns": null})),
        )
        .await;
    assert_eq!(status, 200, "{updated}");
    let (_, found) = t.search(&table, json!({"view_id": view_id})).await;
    assert_eq!(
        found["records"][0]["data"]["number"], 4,
        "the view survives the rename"
    );
    let (_, views) = t
        .call(Method::GET, &format!("{table}/views"), "member", None)
        .await;
    assert_eq!(views.as_array().unwrap().len(), 1);
    let got = t
        .call(
            Method::POST,
            &format!("{table}/views"),
            "boss",
            Some(json!({"name": "bad", "sort": [{"column": "nope"}]})),
        )
        .await;
    assert_eq!(got.0, 400);
    let got = t
        .call(
            Method::DELETE,
            &format!("{table}/columns/{n}"),
            "boss",
            None,
        )
        .await;
    assert_eq!(got.0, 409, "a column a view uses stays: {}", got.1);
    assert_eq!(got.1["detail"]["code"], "column_used_by_view");
    let (status, _) = t
        .call(
            Method::DELETE,
            &format!("{table}/views/{view_id}"),
            "boss",
            None,
        )
        .await;
    assert_eq!(status, 200);
    let (status, _) = t.search(&table, json!({"view_id": view_id})).await;
    assert_eq!(status, 404);
    let (status, body) = t
        .call(
            Method::DELETE,
            &format!("{table}/columns/{n}"),
            "boss",
            None,
        )
        .await;
    assert_eq!(status, 200, "without its view the column may go: {body}");
}

#[tokio::test]
async fn tables_rename_and_delete() {
    let t = Tables::new().await;
    let table = t.table("department:rnd", "member", "mine").await;
    let (status, body) = t
        .call(
            Method::PATCH,
            &table,
            "member",
            Some(json!({"name": "renamed", "description": "d"})),
        )
        .await;
    assert_eq!(status, 200, "the creator manages: {body}");
    assert_eq!(
        (body["name"].clone(), body["can_manage"].clone()),
        (json!("renamed"), json!(true))
    );
    let got = t
        .call(Method::PATCH, &table, "boss", Some(json!({"name": ""})))
        .await;
    assert_eq!(got.0, 400);
    let other = t.table("department:rnd", "dm", "theirs").await;
    let (status, _) = t.call(Method::DELETE, &other, "member", None).await;
    assert_eq!(status, 403);
    t.record(&table, json!({})).await;
    let (status, _) = t.call(Method::DELETE, &table, "dm", None).await;
    assert_eq!(status, 200, "the department manager manages");
    let (status, _) = t.call(Method::GET, &table, "dm", None).await;
    assert_eq!(status, 404);
    let (_, list) = t
        .call(
            Method::GET,
            &format!("{}/tables", t.mount("department:rnd")),
            "member",
            None,
        )
        .await;
    assert_eq!(list["total"], 1);
}

#[tokio::test]
async fn integers_keep_the_64_bit_range_and_a_sum_past_it_is_empty() {
    let t = Tables::new().await;
    let table = t.table("company", "boss", "big").await;
    t.column(&table, json!({"name": "n", "type": "integer"}))
        .await;
    let sum = || async {
        t.call(
            Method::POST,
            &format!("{table}/records/aggregate"),
            "boss",
            Some(json!({"aggregations": [{"op": "sum", "column": "n", "alias": "total"}]})),
        )
        .await
    };
    t.record(&table, json!({"n": i64::MAX})).await;
    let (status, body) = sum().await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["groups"][0]["values"]["total"],
        json!(i64::MAX),
        "{body}"
    );
    let page = t.records(&table, "boss").await;
    assert_eq!(
        page["records"][0]["data"]["n"],
        json!(i64::MAX),
        "the whole range is kept"
    );
    t.record(&table, json!({"n": 1})).await;
    let (status, body) = sum().await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["groups"][0]["values"]["total"], json!(null));
}
