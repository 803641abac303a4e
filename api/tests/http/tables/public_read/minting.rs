//! Minting, listing and revoking tokens, and what a token publishes.

use super::{mint, names, published_table, read, tokens_path};
use crate::tables::fixture::Tables;
use reqwest::Method;
use serde_json::{Value, json};

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
    // Nor a change of the schema: a renamed column reads under its new name.
    let column = format!("{table}/columns/{}", keys["size"].as_str().unwrap());
    let rename = json!({"name": "bigness"});
    let (status, renamed) = t.call(Method::PATCH, &column, "boss", Some(rename)).await;
    assert_eq!(status, 200, "{renamed}");
    let (_, after) = read(&t, &format!("{token}/records"), None).await;
    assert_eq!(
        after["records"][0]["data"],
        json!({"name": "Beta two", "bigness": 5})
    );
    let rename = json!({"name": "size"});
    let (status, _) = t.call(Method::PATCH, &column, "boss", Some(rename)).await;
    assert_eq!(status, 200);

    // Paging and its validation (before the token is looked up). A page past the
    // last row still carries the total.
    let (_, beyond) = read(&t, &format!("{token}/records?skip=10&limit=5"), None).await;
    assert_eq!(beyond["records"], json!([]));
    assert_eq!(beyond["total"], 3);
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
    let gone = t.call(Method::DELETE, &unknown, "boss", None).await;
    assert_eq!(gone, (404, json!({"detail": "Token not found"})));
    // A missing table answers so before anything else, on every token route.
    let (_, id) = table.rsplit_once('/').unwrap();
    let missing = table.replace(id, &uuid::Uuid::new_v4().to_string());
    let no_table = json!({"detail": "Custom table not found"});
    let minted = mint(&t, &missing, json!({"view_id": uuid::Uuid::new_v4()})).await;
    assert_eq!(minted, (404, no_table.clone()));
    let listed = t
        .call(Method::GET, &tokens_path(&missing), "boss", None)
        .await;
    assert_eq!(listed, (404, no_table.clone()));
    let revoked = format!("{}/{token}", tokens_path(&missing));
    let revoked = t.call(Method::DELETE, &revoked, "boss", None).await;
    assert_eq!(revoked, (404, no_table));
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
    let refused = mint(&t, &other, refusal(json!({}))).await;
    assert_eq!(refused, (404, json!({"detail": "View not found"})));
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
    let (governed, _) = crate::tables::channels::governed(&t).await;
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
