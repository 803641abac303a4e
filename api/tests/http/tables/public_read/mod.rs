//! Public read tokens (spec `custom-tables.md` sections 2, 4, 5, 7, 8): minting by
//! moderators and its refusals, listing and revoking, anonymous reads that return
//! only what the token publishes, the query API, the byte-identical 404 for every
//! kind of bad token, the 413 before the token lookup, and the per-token rate.
//! This file holds the shared fixture and request helpers.

mod anonymous;
mod minting;
mod queries;

use super::fixture::Tables;
use reqwest::Method;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};

/// A company table with five rows, a view (size > 1, largest first, without
/// `note`) and a link column; returns (table path, keys by name, view id).
pub async fn published_table(t: &Tables) -> (String, Value, String) {
    let table = t.table("company", "boss", "catalog").await;
    let target = t.table("company", "boss", "target").await;
    let name = t
        .column(&table, json!({"name": "name", "type": "string"}))
        .await;
    let size = t
        .column(&table, json!({"name": "size", "type": "integer"}))
        .await;
    let note = t
        .column(&table, json!({"name": "note", "type": "text"}))
        .await;
    let owner = t
        .column(&table, json!({"name": "owner", "type": "string"}))
        .await;
    let target_id = target.rsplit('/').next().unwrap();
    let link = t
        .column(
            &table,
            json!({"name": "to", "type": "link", "target_table_id": target_id}),
        )
        .await;
    for (n, s) in [
        ("alpha", 1),
        ("beta", 2),
        ("gamma", 3),
        ("delta", 40),
        ("Beta two", 5),
    ] {
        t.record(
            &table,
            json!({"name": n, "size": s, "note": format!("note of {n}"), "owner": "internal"}),
        )
        .await;
    }
    let (status, view) = t
        .call(
            Method::POST,
            &format!("{table}/views"),
            "boss",
            Some(
                json!({"name": "big", "filter": {"column": size, "op": "gt", "value": 1},
                        "sort": [{"column": size, "order": "desc"}],
                        "columns": [name, size, owner, link]}),
            ),
        )
        .await;
    assert_eq!(status, 201, "{view}");
    let keys = json!({"name": name, "size": size, "note": note, "owner": owner, "link": link});
    (table, keys, view["id"].as_str().unwrap().to_string())
}

pub fn tokens_path(table: &str) -> String {
    // The mint route drops the scope id: `/company/tables/{id}/public-read-tokens`.
    format!("{table}/public-read-tokens")
}

pub async fn mint(t: &Tables, table: &str, body: Value) -> (u16, Value) {
    t.call(Method::POST, &tokens_path(table), "boss", Some(body))
        .await
}

pub async fn public(
    t: &Tables,
    method: Method,
    path: &str,
    bearer: Option<&str>,
    body: Option<String>,
) -> (u16, HeaderMap, String) {
    let mut request = t
        .app
        .request(method, &format!("/public/module/custom_tables/read/{path}"));
    if let Some(secret) = bearer {
        request = request.header("authorization", format!("Bearer {secret}"));
    }
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, headers, response.text().await.unwrap())
}

pub async fn read(t: &Tables, path: &str, bearer: Option<&str>) -> (u16, Value) {
    let (status, _, text) = public(t, Method::GET, path, bearer, None).await;
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

pub async fn query(t: &Tables, token: &str, body: Value) -> (u16, Value) {
    let (status, _, text) = public(
        t,
        Method::POST,
        &format!("{token}/query"),
        None,
        Some(body.to_string()),
    )
    .await;
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

pub fn names(page: &Value) -> Vec<String> {
    page["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["data"]["name"].as_str().unwrap().to_string())
        .collect()
}
