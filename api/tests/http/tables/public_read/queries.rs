//! The query API, its refusals and body limit, and the per-token rate.

use super::{mint, names, public, published_table, query, read};
use crate::tables::fixture::Tables;
use reqwest::Method;
use serde_json::{Value, json};

#[tokio::test]
async fn the_query_api_filters_searches_sorts_and_refuses_clearly() {
    let t = Tables::new().await;
    let (table, keys, view) = published_table(&t).await;
    let body = json!({"view_id": view, "secretless": true, "allow_query": true, "rpm": 1000,
                      "visible_columns": [keys["name"], keys["size"], keys["note"]]});
    let (_, minted) = mint(&t, &table, body).await;
    let token = minted["token_id"].as_str().unwrap().to_string();
    let (name, size, owner, link) = (
        keys["name"].as_str().unwrap(),
        keys["size"].as_str().unwrap(),
        keys["owner"].as_str().unwrap(),
        keys["link"].as_str().unwrap(),
    );

    // An empty body is the view.
    let (status, all) = query(&t, &token, json!({})).await;
    assert_eq!(status, 200, "{all}");
    assert_eq!(names(&all), ["delta", "Beta two", "gamma", "beta"]);
    // `filters`: partial, case-insensitive for strings; the view wins on its key.
    let (_, found) = query(&t, &token, json!({"filters": {name: "BETA"}})).await;
    assert_eq!(names(&found), ["Beta two", "beta"]);
    let (_, kept) = query(&t, &token, json!({"filters": {size: 1}})).await;
    assert_eq!(kept["total"], 4, "the view's filter on size wins: {kept}");
    // `stored_filters`, `any_of`, `q`, sorts and the window.
    let (_, typed) = query(
        &t,
        &token,
        json!({"stored_filters": [{"column": size, "op": "lte", "value": 3}]}),
    )
    .await;
    assert_eq!(names(&typed), ["gamma", "beta"]);
    let (_, either) = query(
        &t,
        &token,
        json!({"any_of": [{"column": size, "op": "eq", "value": 40},
                          [{"column": name, "op": "eq", "value": "beta"}]]}),
    )
    .await;
    assert_eq!(names(&either), ["delta", "beta"]);
    let (_, searched) = query(&t, &token, json!({"q": "AMM"})).await;
    assert_eq!(names(&searched), ["gamma"]);
    let (_, hidden_text) = query(&t, &token, json!({"q": "internal"})).await;
    assert_eq!(hidden_text["total"], 0, "q reads published columns only");
    let (_, sorted) = query(&t, &token, json!({"sort_by": name, "sort_order": "asc"})).await;
    assert_eq!(names(&sorted), ["Beta two", "beta", "delta", "gamma"]);
    let (_, multi) = query(
        &t,
        &token,
        json!({"sort": [{"column": size, "order": "asc"}], "skip": 1, "limit": 2}),
    )
    .await;
    assert_eq!(names(&multi), ["gamma", "Beta two"]);
    assert_eq!(multi["total"], 4);

    // Refusals, each with the spec's message.
    let detail = |body: &Value| body["detail"]["message"].as_str().unwrap_or("").to_string();
    for (body, message) in [
        (
            json!({"filters": {owner: "x"}}),
            format!("Column '{owner}' does not exist in table schema"),
        ),
        (
            json!({"filters": {"col_nothere": "x"}}),
            "Column 'col_nothere' does not exist in table schema".into(),
        ),
        // A computed column the token does not list is hidden like any other.
        (
            json!({"stored_filters": [{"column": link, "op": "is_null"}]}),
            format!("Column '{link}' does not exist in table schema"),
        ),
        (
            json!({"sort_by": link}),
            format!("Column '{link}' does not exist in table schema"),
        ),
        (
            json!({"sort_by": owner}),
            format!("Column '{owner}' does not exist in table schema"),
        ),
        (
            json!({"any_of": [{"column": name, "op": "name_contains", "value": "a"}]}),
            "the operator 'name_contains' is not available on public reads".into(),
        ),
    ] {
        let (status, refused) = query(&t, &token, body.clone()).await;
        assert_eq!(status, 400, "{body}: {refused}");
        assert_eq!(detail(&refused), message, "{body}");
    }
    // A computed column the token lists (every column: links are never shown) is
    // named as one.
    let body = json!({"view_id": view, "secretless": true, "allow_query": true, "rpm": 1000});
    let (status, minted) = mint(&t, &table, body).await;
    assert_eq!(status, 200, "{minted}");
    let listing = minted["token_id"].as_str().unwrap().to_string();
    for (body, message) in [
        (
            json!({"stored_filters": [{"column": link, "op": "is_null"}]}),
            format!("Cannot filter on computed column '{link}'"),
        ),
        (
            json!({"sort_by": link}),
            "Cannot sort on computed column".into(),
        ),
    ] {
        let (status, refused) = query(&t, &listing, body.clone()).await;
        assert_eq!(status, 400, "{body}: {refused}");
        assert_eq!(detail(&refused), message, "{body}");
    }
    for body in [
        json!({"computed_filters": {}}),
        json!({"limit": 101}),
        json!({"skip": -1}),
        json!({"q": 5}),
    ] {
        let (status, refused) = query(&t, &token, body.clone()).await;
        assert_eq!(status, 400, "{body}: {refused}");
        assert!(detail(&refused).starts_with("invalid body: "), "{refused}");
    }

    // 16,384 bytes are accepted; one more is 413, before the token is looked up.
    let exact = format!("{{}}{}", " ".repeat(16_382));
    let (status, _, _) = public(
        &t,
        Method::POST,
        &format!("{token}/query"),
        None,
        Some(exact.clone()),
    )
    .await;
    assert_eq!(status, 200);
    let over = format!("{exact} ");
    let unknown = uuid::Uuid::new_v4();
    let (status, _, text) = public(
        &t,
        Method::POST,
        &format!("{unknown}/query"),
        None,
        Some(over),
    )
    .await;
    assert_eq!(status, 413, "{text}");
    assert!(text.contains("body exceeds 16384 bytes"), "{text}");
}

#[tokio::test]
async fn a_token_is_throttled_at_its_own_rpm() {
    let t = Tables::new().await;
    let (table, _, view) = published_table(&t).await;
    let (_, slow) = mint(
        &t,
        &table,
        json!({"view_id": view, "secretless": true, "rpm": 2}),
    )
    .await;
    let slow = slow["token_id"].as_str().unwrap().to_string();
    let (_, other) = mint(
        &t,
        &table,
        json!({"view_id": view, "secretless": true, "rpm": 2}),
    )
    .await;
    let other = other["token_id"].as_str().unwrap().to_string();
    for _ in 0..2 {
        assert_eq!(read(&t, &format!("{slow}/records"), None).await.0, 200);
    }
    let (status, headers, text) =
        public(&t, Method::GET, &format!("{slow}/records"), None, None).await;
    assert_eq!(status, 429, "{text}");
    let retry: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry));
    let refused: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(refused["detail"]["code"], "public_token_rate_limited");
    assert_eq!(
        refused["detail"]["message"],
        "rate limit exceeded (2/min per token)"
    );
    // Another token has its own window; a bad token is not counted (404, not 429).
    assert_eq!(read(&t, &format!("{other}/records"), None).await.0, 200);
    let unknown = uuid::Uuid::new_v4();
    for _ in 0..3 {
        assert_eq!(read(&t, &format!("{unknown}/records"), None).await.0, 404);
    }
}
