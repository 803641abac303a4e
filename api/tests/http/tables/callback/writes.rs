//! Callback writes: Bearer and signed creations and updates as the minting
//! moderator, their refusals, the byte-identical 404, the body limit, the minute
//! window, the migration lock and channel-governed tables.

use super::{intake_table, mint, names, send, signed, write};
use crate::tables::fixture::Tables;
use reqwest::Method;
use serde_json::{Value, json};

#[tokio::test]
async fn tokens_create_and_update_records_as_their_moderator() {
    let t = Tables::new().await;
    let (table, keys) = intake_table(&t).await;
    let (token, secret) = mint(&t, &table, "create,update").await;
    // Create: display names or internal keys.
    let body =
        json!({"op": "create", "data": {"name": "lead one", keys["qty"].as_str().unwrap(): 3}});
    let (status, created) = write(&t, &token, &secret, body).await;
    assert_eq!(status, 200, "{created}");
    let mut fields: Vec<&String> = created.as_object().unwrap().keys().collect();
    fields.sort();
    assert_eq!(
        fields,
        [
            "ok",
            "op",
            "process_id",
            "record_id",
            "replayed",
            "rule_label",
            "staged_change_id",
            "status"
        ]
    );
    assert_eq!(created["ok"], true);
    assert_eq!(created["status"], "created");
    assert_eq!(created["replayed"], false);
    assert_eq!(created["process_id"], Value::Null);
    let record_id = created["record_id"].as_str().unwrap().to_string();
    let record = format!("{table}/records/{record_id}");
    let (_, stored) = t.call(Method::GET, &record, "dm", None).await;
    assert_eq!(stored["data"]["qty"], 3);
    assert_eq!(stored["created_by"], format!("user:{}", t.user("dm")));

    // Update: internal keys only.
    let name_key = keys["name"].as_str().unwrap();
    let body = json!({"op": "update", "record_id": record_id, "data": {name_key: "lead 1"}});
    let (status, updated) = write(&t, &token, &secret, body).await;
    assert_eq!(status, 200, "{updated}");
    assert_eq!(updated["status"], "updated");
    assert_eq!(updated["record_id"], record_id.as_str());
    assert_eq!(names(&t, &table).await, ["lead 1"]);
    let by_name = json!({"op": "update", "record_id": record_id, "data": {"name": "x"}});
    let (status, refused) = write(&t, &token, &secret, by_name).await;
    assert_eq!(status, 400, "{refused}");

    // Signed by an independent HMAC implementation (Python), over the exact bytes.
    let body = r#"{"op": "create",  "data": {"name": "signed lead"}}"#;
    let (status, got) = signed(&t, "POST", &token, &secret, body, 0).await;
    assert_eq!(status, 200, "{got}");
    assert_eq!(got["status"], "created");
    for skew in [-301, 301] {
        let (status, _) = signed(&t, "POST", &token, &secret, body, skew).await;
        assert_eq!(status, 404, "timestamp {skew} s off");
    }
    let (status, _) = signed(&t, "POST", &token, &secret, body, -290).await;
    assert_eq!(status, 200, "within the tolerance");
    let (status, _) = signed(&t, "POST", &token, "not the secret", body, 0).await;
    assert_eq!(status, 404);
    assert_eq!(
        names(&t, &table).await,
        ["lead 1", "signed lead", "signed lead"]
    );
}

#[tokio::test]
async fn bad_writes_are_refused_and_change_nothing() {
    let t = Tables::new().await;
    let (table, keys) = intake_table(&t).await;
    let (creator, secret) = mint(&t, &table, "create").await;
    let qty = keys["qty"].as_str().unwrap();
    let cases = [
        (json!({"op": "create", "data": {"qty": "many"}}), 400),
        (json!({"op": "create", "data": {"nope": 1}}), 400),
        (json!({"op": "create", "data": {}, "extra": 1}), 400),
        (json!({"op": "delete", "data": {}}), 400),
        (
            json!({"op": "create", "data": {}, "idempotency_key": ""}),
            400,
        ),
        (
            json!({"op": "create", "data": {}, "idempotency_key": "k".repeat(129)}),
            400,
        ),
        (
            json!({"op": "create", "data": {}, "record_id": uuid::Uuid::new_v4()}),
            400,
        ),
        (
            json!({"op": "update", "record_id": uuid::Uuid::new_v4(), "data": {qty: 1}}),
            403,
        ),
    ];
    for (body, expected) in cases {
        let (status, refused) = write(&t, &creator, &secret, body.clone()).await;
        assert_eq!(status, expected, "{body}: {refused}");
    }
    let (status, refused) = write(&t, &creator, &secret, json!({"op": "update", "data": {}})).await;
    assert_eq!(
        refused["detail"]["code"], "callback_op_not_allowed",
        "{status}"
    );
    let (updater, secret2) = mint(&t, &table, "create,update").await;
    let missing = json!({"op": "update", "data": {qty: 1}});
    assert_eq!(write(&t, &updater, &secret2, missing).await.0, 400);
    let unknown = json!({"op": "update", "record_id": uuid::Uuid::new_v4(), "data": {qty: 1}});
    assert_eq!(write(&t, &updater, &secret2, unknown).await.0, 404);
    assert!(names(&t, &table).await.is_empty());
}

#[tokio::test]
async fn every_failed_authentication_is_the_same_404() {
    let t = Tables::new().await;
    let (table, _) = intake_table(&t).await;
    let (token, secret) = mint(&t, &table, "create").await;
    let (revoked, revoked_secret) = mint(&t, &table, "create").await;
    let path = format!("{table}/callback-tokens/{revoked}");
    assert_eq!(t.call(Method::DELETE, &path, "dm", None).await.0, 200);
    let soon = chrono::Utc::now() + chrono::Duration::seconds(2);
    let (status, expiring) = t
        .call(
            Method::POST,
            &format!("{table}/callback-tokens"),
            "dm",
            Some(json!({"name": "brief", "valid_until": soon})),
        )
        .await;
    assert_eq!(status, 201, "{expiring}");
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    let expired = expiring["token_id"].as_str().unwrap().to_string();
    let expired_secret = expiring["secret"].as_str().unwrap().to_string();

    let body = json!({"op": "create", "data": {"name": "x"}}).to_string();
    let bearer = |s: &str| vec![("authorization", format!("Bearer {s}"))];
    let now = chrono::Utc::now().timestamp().to_string();
    let cases: Vec<(String, Vec<(&str, String)>)> = vec![
        (uuid::Uuid::new_v4().to_string(), bearer(&secret)),
        ("not-a-uuid".into(), bearer(&secret)),
        (revoked.clone(), bearer(&revoked_secret)),
        (expired.clone(), bearer(&expired_secret)),
        (token.clone(), bearer("wrong")),
        (token.clone(), vec![]),
        (token.clone(), vec![("authorization", secret.clone())]),
        (
            token.clone(),
            vec![
                ("x-callback-timestamp", now.clone()),
                ("x-callback-signature", "00".repeat(32)),
            ],
        ),
        (
            token.clone(),
            vec![
                ("x-callback-timestamp", "yesterday".into()),
                ("x-callback-signature", "zz".into()),
            ],
        ),
        (
            token.clone(),
            vec![
                ("x-callback-timestamp", i64::MIN.to_string()),
                ("x-callback-signature", "00".repeat(32)),
            ],
        ),
    ];
    let mut answers = Vec::new();
    for (path, headers) in &cases {
        let (status, mut headers, text) =
            send(&t, Method::POST, path, headers, Some(body.clone())).await;
        headers.remove("date");
        headers.remove("x-request-id");
        answers.push((status, headers, text));
    }
    assert_eq!(answers[0].0, 404);
    assert_eq!(answers[0].2, r#"{"detail":"Not found"}"#);
    for (i, answer) in answers.iter().enumerate() {
        assert_eq!(answer, &answers[0], "case {i} differs");
    }
    assert!(names(&t, &table).await.is_empty());
}

#[tokio::test]
async fn limits_locks_and_governed_tables() {
    let t = Tables::new().await;
    let (table, _) = intake_table(&t).await;
    let (token, secret) = mint(&t, &table, "create").await;
    let bearer = [("authorization", format!("Bearer {secret}"))];
    // 65,536 bytes are accepted, 65,537 are 413 (before the token is looked up).
    let json = json!({"op": "create", "data": {"name": "padded"}}).to_string();
    let exact = format!("{json}{}", " ".repeat(65_536 - json.len()));
    let (status, _, text) = send(&t, Method::POST, &token, &bearer, Some(exact.clone())).await;
    assert_eq!(status, 200, "{text}");
    let over = format!("{exact} ");
    let unknown = uuid::Uuid::new_v4().to_string();
    let (status, _, text) = send(&t, Method::POST, &unknown, &bearer, Some(over)).await;
    assert_eq!(status, 413, "{text}");
    assert!(text.contains("body exceeds 65536 bytes"), "{text}");

    // 423 while a background migration holds the table (marked as the projection
    // marks it, so the test needs no hundred-thousand-row table).
    let table_id = uuid::Uuid::parse_str(table.rsplit('/').next().unwrap()).unwrap();
    let lock = |id: Option<uuid::Uuid>| {
        sqlx::query("UPDATE custom_tables SET migration_id = $2 WHERE id = $1")
            .bind(table_id)
            .bind(id)
            .execute(&t.app.db.pool)
    };
    lock(Some(uuid::Uuid::new_v4())).await.unwrap();
    let (status, locked) = write(
        &t,
        &token,
        &secret,
        json!({"op": "create", "data": {"name": "l"}}),
    )
    .await;
    assert_eq!(status, 423, "{locked}");
    lock(None).await.unwrap();

    // 60 requests per minute per token, counted after authentication.
    for _ in 0..58 {
        write(&t, &token, &secret, json!({"op": "bad"})).await;
    }
    let (status, headers, text) = send(&t, Method::POST, &token, &bearer, Some(json.clone())).await;
    assert_eq!(status, 429, "{text}");
    let retry: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry));
    let refused: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(refused["detail"]["code"], "callback_rate_limited");
    assert_eq!(
        refused["detail"]["message"],
        "rate limit exceeded (60/min per token)"
    );
    assert_eq!(names(&t, &table).await, ["padded"]);
}

#[tokio::test]
async fn channel_governed_tables_refuse_callback_writes() {
    let t = Tables::new().await;
    let (table, _) = crate::tables::channels::governed(&t).await;
    let (status, minted) = t
        .call(
            Method::POST,
            &format!("{table}/callback-tokens"),
            "dm",
            Some(json!({"name": "crm"})),
        )
        .await;
    assert_eq!(status, 201, "{minted}");
    let token = minted["token_id"].as_str().unwrap();
    let secret = minted["secret"].as_str().unwrap();
    let body = json!({"op": "create", "data": {"label": "x", "region": "north"}});
    let (status, refused) = write(&t, token, secret, body).await;
    assert_eq!(status, 409, "{refused}");
    assert_eq!(refused["detail"]["code"], "table_channel_governed");
}
