//! Public read tokens (spec `custom-tables.md` sections 2, 4, 5, 7, 8): minting by
//! moderators and its refusals, listing and revoking, anonymous reads that return
//! only what the token publishes, the query API, the byte-identical 404 for every
//! kind of bad token, the 413 before the token lookup, and the per-token rate.

use super::fixture::Tables;
use reqwest::Method;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};

/// A company table with five rows, a view (size > 1, largest first, without
/// `note`) and a link column; returns (table path, keys by name, view id).
async fn published_table(t: &Tables) -> (String, Value, String) {
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

fn tokens_path(table: &str) -> String {
    // The mint route drops the scope id: `/company/tables/{id}/public-read-tokens`.
    format!("{table}/public-read-tokens")
}

async fn mint(t: &Tables, table: &str, body: Value) -> (u16, Value) {
    t.call(Method::POST, &tokens_path(table), "boss", Some(body))
        .await
}

async fn public(
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

async fn read(t: &Tables, path: &str, bearer: Option<&str>) -> (u16, Value) {
    let (status, _, text) = public(t, Method::GET, path, bearer, None).await;
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

async fn query(t: &Tables, token: &str, body: Value) -> (u16, Value) {
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

fn names(page: &Value) -> Vec<String> {
    page["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["data"]["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn moderators_mint_tokens_that_publish_only_the_intersection() {
    let t = Tables::new().await;
    let (table, keys, view) = published_table(&t).await;
    let body = json!({"view_id": view, "name": "open", "secretless": true,
                      "visible_columns": [keys["name"], "size", keys["note"]],
                      "read_filter": {"column": keys["size"], "op": "lt", "value": 10},
                      "allow_query": true, "rpm": 1000});
    // Only moderators mint, list and revoke.
    for who in ["member", "dm"] {
        let (status, refused) = t
            .call(Method::POST, &tokens_path(&table), who, Some(body.clone()))
            .await;
        assert!(status == 403 || status == 404, "{who}: {status} {refused}");
        let (status, _) = t.call(Method::GET, &tokens_path(&table), who, None).await;
        assert!(status == 403 || status == 404, "{who} lists");
    }
    let (status, minted) = mint(&t, &table, body).await;
    assert_eq!(status, 200, "{minted}");
    assert_eq!(minted["secret"], Value::Null);
    assert_eq!(minted["secretless"], true);
    let token = minted["token_id"].as_str().unwrap().to_string();
    assert_eq!(
        minted["url_path"],
        format!("/public/module/custom_tables/read/{token}/records")
    );

    // The page: the view's rows (size > 1) under the token's (size < 10), largest
    // first, with the columns of the table, the view and the allowlist in common.
    let (status, page) = read(&t, &format!("{token}/records"), None).await;
    assert_eq!(status, 200, "{page}");
    let mut fields: Vec<&String> = page.as_object().unwrap().keys().collect();
    fields.sort();
    assert_eq!(fields, ["columns", "records", "table_name", "total"]);
    assert_eq!(page["table_name"], "catalog");
    assert_eq!(page["total"], 3);
    assert_eq!(names(&page), ["Beta two", "gamma", "beta"]);
    assert_eq!(
        page["columns"],
        json!([{"name": "name", "type": "string"}, {"name": "size", "type": "integer"}])
    );
    let first = &page["records"][0];
    let mut record_fields: Vec<&String> = first.as_object().unwrap().keys().collect();
    record_fields.sort();
    assert_eq!(record_fields, ["created_at", "data", "id", "updated_at"]);
    assert_eq!(first["data"], json!({"name": "Beta two", "size": 5}));

    // A cached answer never outlives a change of the table.
    let (_, again) = read(&t, &format!("{token}/records"), None).await;
    assert_eq!(again, page);
    let added = t
        .record(&table, json!({"name": "epsilon", "size": 6}))
        .await;
    let (_, changed) = read(&t, &format!("{token}/records"), None).await;
    assert_eq!(changed["total"], 4);
    assert_eq!(names(&changed), ["epsilon", "Beta two", "gamma", "beta"]);
    let path = format!("{table}/records/{}", added["id"].as_str().unwrap());
    assert_eq!(t.call(Method::DELETE, &path, "boss", None).await.0, 200);
    let (_, restored) = read(&t, &format!("{token}/records"), None).await;
    assert_eq!(restored["total"], 3);

    // Paging and its validation (before the token is looked up).
    let (_, second) = read(&t, &format!("{token}/records?skip=1&limit=1"), None).await;
    assert_eq!(names(&second), ["gamma"]);
    assert_eq!(second["total"], 3);
    for bad in ["skip=-1", "limit=0", "limit=101"] {
        let unknown = uuid::Uuid::new_v4();
        let (status, refused) = read(&t, &format!("{unknown}/records?{bad}"), None).await;
        assert_eq!(status, 422, "{bad}: {refused}");
        assert!(refused["detail"].is_array());
    }

    // One record: published ones only.
    let id = first["id"].as_str().unwrap();
    let (status, one) = read(&t, &format!("{token}/records/{id}"), None).await;
    assert_eq!(status, 200, "{one}");
    assert_eq!(one["data"], first["data"]);
    let (_, everything) = t
        .call(
            Method::GET,
            &format!("{table}/records?limit=100"),
            "boss",
            None,
        )
        .await;
    for record in everything["records"].as_array().unwrap() {
        let name = record["data"]["name"].as_str().unwrap();
        let (status, _) = read(
            &t,
            &format!("{token}/records/{}", record["id"].as_str().unwrap()),
            None,
        )
        .await;
        let published = ["Beta two", "gamma", "beta"].contains(&name);
        assert_eq!(status, if published { 200 } else { 404 }, "{name}");
    }

    // The list shows the token without any secret; revoking keeps it listed and
    // closes it.
    let (status, listed) = t
        .call(Method::GET, &tokens_path(&table), "boss", None)
        .await;
    assert_eq!(status, 200, "{listed}");
    let info = &listed["tokens"][0];
    assert_eq!(info["id"], token.as_str());
    assert_eq!(info["name"], "open");
    assert_eq!(
        info["visible_columns"],
        json!([keys["name"], keys["size"], keys["note"]])
    );
    assert_eq!(info["revoked"], false);
    assert!(info["last_used_at"].is_string(), "{info}");
    assert!(info.get("secret").is_none() && info.get("secret_hash").is_none());
    let revoke = format!("{}/{token}", tokens_path(&table));
    let (status, _) = t.call(Method::DELETE, &revoke, "member", None).await;
    assert!(status == 403 || status == 404);
    let (status, done) = t.call(Method::DELETE, &revoke, "boss", None).await;
    assert_eq!(status, 200, "{done}");
    let (_, listed) = t
        .call(Method::GET, &tokens_path(&table), "boss", None)
        .await;
    assert_eq!(listed["tokens"][0]["revoked"], true);
    assert_eq!(read(&t, &format!("{token}/records"), None).await.0, 404);
    let unknown = format!("{}/{}", tokens_path(&table), uuid::Uuid::new_v4());
    assert_eq!(t.call(Method::DELETE, &unknown, "boss", None).await.0, 404);
}

#[tokio::test]
async fn minting_refuses_what_cannot_be_published() {
    let t = Tables::new().await;
    let (table, keys, view) = published_table(&t).await;
    let other = t.table("company", "boss", "other").await;
    let refusal = |body: Value| {
        let mut full = json!({"view_id": view, "secretless": true});
        for (k, v) in body.as_object().unwrap() {
            full[k] = v.clone();
        }
        full
    };
    // A view of another table.
    let (status, _) = mint(&t, &other, refusal(json!({}))).await;
    assert_eq!(status, 404);
    // Columns never published.
    let (status, body) = mint(
        &t,
        &table,
        refusal(json!({"visible_columns": [keys["link"]]})),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["detail"]["code"], "not_publishable");
    // Principal tokens, and malformed policies.
    let me = json!({"read_filter": {"column": keys["owner"], "op": "eq", "value": "$me"}});
    let (status, body) = mint(&t, &table, refusal(me)).await;
    assert_eq!(status, 422, "{body}");
    let since = t
        .column(&table, json!({"name": "since", "type": "date"}))
        .await;
    let today = json!({"read_filter": {"column": since, "op": "lte", "value": "$today"}});
    assert_eq!(mint(&t, &table, refusal(today)).await.0, 200);
    for bad in [
        json!({"and": []}),
        json!({"column": "col_missing", "op": "eq", "value": 1}),
        json!({"column": keys["size"], "op": "frobnicate", "value": 1}),
    ] {
        let (status, body) = mint(&t, &table, refusal(json!({"read_filter": bad}))).await;
        assert_eq!(status, 400, "{bad}: {body}");
    }
    // A view that filters on a link column.
    let (status, computed) = t
        .call(
            Method::POST,
            &format!("{table}/views"),
            "boss",
            Some(json!({"name": "linked", "filter": {"column": keys["link"], "op": "is_null"}})),
        )
        .await;
    assert_eq!(status, 201, "{computed}");
    let (status, body) = mint(
        &t,
        &table,
        json!({"view_id": computed["id"], "secretless": true}),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    // A table governed by a scoped channel policy.
    let (governed, _) = super::channels::governed(&t).await;
    let (status, view) = t
        .call(
            Method::POST,
            &format!("{governed}/views"),
            "dm",
            Some(json!({"name": "all"})),
        )
        .await;
    assert_eq!(status, 201, "{view}");
    let governed_tokens = governed.replace(
        &format!("/department/{}", t.department("rnd")),
        "/department",
    );
    let (status, body) = t
        .call(
            Method::POST,
            &tokens_path(&governed_tokens),
            "dm",
            Some(json!({"view_id": view["id"], "secretless": true})),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["detail"]["code"], "table_channel_governed");
    assert_eq!(
        body["detail"]["message"],
        "Cannot publish a table governed by a scoped channel policy"
    );
}

/// Status, body and headers of a response, without the per-request headers.
fn shape(response: (u16, HeaderMap, String)) -> (u16, Vec<(String, String)>, String) {
    let (status, headers, body) = response;
    let mut kept: Vec<(String, String)> = headers
        .iter()
        .filter(|(name, _)| !["date", "x-request-id"].contains(&name.as_str()))
        .map(|(n, v)| (n.to_string(), v.to_str().unwrap_or("").to_string()))
        .collect();
    kept.sort();
    (status, kept, body)
}

#[tokio::test]
async fn every_bad_token_answers_the_same_bytes() {
    let t = Tables::new().await;
    let (table, _, view) = published_table(&t).await;
    let (status, with_secret) = mint(&t, &table, json!({"view_id": view})).await;
    assert_eq!(status, 200, "{with_secret}");
    assert_eq!(with_secret["secretless"], false);
    let token = with_secret["token_id"].as_str().unwrap().to_string();
    let secret = with_secret["secret"].as_str().unwrap().to_string();
    assert!(secret.len() >= 43, "at least 256 bits");
    let (status, page) = read(&t, &format!("{token}/records"), Some(&secret)).await;
    assert_eq!(status, 200, "{page}");

    let (_, revoked) = mint(&t, &table, json!({"view_id": view, "secretless": true})).await;
    let revoked = revoked["token_id"].as_str().unwrap().to_string();
    let path = format!("{}/{revoked}", tokens_path(&table));
    assert_eq!(t.call(Method::DELETE, &path, "boss", None).await.0, 200);
    let soon = chrono::Utc::now() + chrono::Duration::seconds(2);
    let (_, expiring) = mint(
        &t,
        &table,
        json!({"view_id": view, "secretless": true, "valid_until": soon}),
    )
    .await;
    let expiring = expiring["token_id"].as_str().unwrap().to_string();
    let (_, closed) = mint(&t, &table, json!({"view_id": view, "secretless": true})).await;
    let closed = closed["token_id"].as_str().unwrap().to_string();
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;

    let unknown = uuid::Uuid::new_v4().to_string();
    let cases: Vec<(String, Method, String, Option<&str>)> = vec![
        (
            "unknown".into(),
            Method::GET,
            format!("{unknown}/records"),
            None,
        ),
        (
            "not a uuid".into(),
            Method::GET,
            "not-a-token/records".into(),
            None,
        ),
        (
            "no secret".into(),
            Method::GET,
            format!("{token}/records"),
            None,
        ),
        (
            "wrong secret".into(),
            Method::GET,
            format!("{token}/records"),
            Some("wrong"),
        ),
        (
            "secret of another token".into(),
            Method::GET,
            format!("{revoked}/records"),
            Some(&secret),
        ),
        (
            "revoked".into(),
            Method::GET,
            format!("{revoked}/records"),
            None,
        ),
        (
            "expired".into(),
            Method::GET,
            format!("{expiring}/records"),
            None,
        ),
        (
            "query not allowed".into(),
            Method::POST,
            format!("{closed}/query"),
            None,
        ),
        (
            "unknown record".into(),
            Method::GET,
            format!("{token}/records/{unknown}"),
            Some(&secret),
        ),
        (
            "malformed record".into(),
            Method::GET,
            format!("{token}/records/x"),
            Some(&secret),
        ),
    ];
    let mut answers = Vec::new();
    for (label, method, path, bearer) in cases {
        let body = (method == Method::POST).then(|| "{}".to_string());
        let answer = shape(public(&t, method, &path, bearer, body).await);
        assert_eq!(answer.0, 404, "{label}: {answer:?}");
        answers.push((label, answer));
    }
    let (_, first) = &answers[0];
    for (label, answer) in &answers {
        assert_eq!(answer, first, "{label} differs from an unknown token");
    }
    assert_eq!(first.2, r#"{"detail":"Not found"}"#);
}

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
        (
            json!({"stored_filters": [{"column": link, "op": "is_null"}]}),
            format!("Cannot filter on computed column '{link}'"),
        ),
        (
            json!({"sort_by": link}),
            "Cannot sort on computed column".into(),
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
