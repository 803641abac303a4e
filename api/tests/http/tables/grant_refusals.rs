//! The grant routes' refusals and the columns a channel policy or a hidden grant
//! protects (spec sections 2, 4 and 7).

use super::channels::{governed, rows};
use super::fixture::{Tables, code};
use reqwest::Method;
use serde_json::{Value, json};

#[tokio::test]
async fn grant_routes_refuse_bad_input_and_change_nothing() {
    let t = Tables::with_cast().await;
    let table = t.table("company", "boss", "grants").await;
    t.column(&table, json!({"name": "n", "type": "integer"}))
        .await;
    let permissions = format!("{table}/permissions");
    let member = t.user("member");
    let body = |extra: Value| {
        let mut b = json!({"subject_type": "user", "subject_id": member, "can_read": "all"});
        b.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        Some(b)
    };
    let got = t
        .call(Method::POST, &permissions, "member", body(json!({})))
        .await;
    assert_eq!(got.0, 403, "members do not grant: {}", got.1);
    let got = t
        .call(
            Method::POST,
            &permissions,
            "boss",
            body(json!({"subject_id": uuid::Uuid::new_v4()})),
        )
        .await;
    assert_eq!((got.0, code(&got)), (404, "subject_not_found"));
    let got = t
        .call(
            Method::POST,
            &permissions,
            "boss",
            body(json!({"subject_type": "team"})),
        )
        .await;
    assert_eq!(got.0, 422, "{}", got.1);
    let got = t
        .call(
            Method::POST,
            &permissions,
            "boss",
            body(json!({"row_filter": {"column": "n", "op": "is_null"}})),
        )
        .await;
    assert_eq!(
        (got.0, code(&got)),
        (400, "invalid_query"),
        "a filter needs can_read filtered"
    );
    let got = t
        .call(
            Method::POST,
            &permissions,
            "boss",
            body(json!({"scope_values": ["x"]})),
        )
        .await;
    assert_eq!(
        got.0, 400,
        "scope values belong to chatroom grants: {}",
        got.1
    );
    let got = t
        .call(
            Method::POST,
            &permissions,
            "boss",
            body(json!({"hidden_columns": ["nope"]})),
        )
        .await;
    assert_eq!(got.0, 400, "{}", got.1);
    let got = t
        .call(
            Method::POST,
            &permissions,
            "boss",
            body(json!({"can_read": "some"})),
        )
        .await;
    assert_eq!(got.0, 422, "{}", got.1);
    let (_, list) = t.call(Method::GET, &permissions, "boss", None).await;
    assert_eq!(list["permissions"], json!([]), "nothing changed");
    let (status, _) = t.call(Method::GET, &permissions, "member", None).await;
    assert_eq!(status, 403);
    let got = t
        .call(
            Method::DELETE,
            &format!("{permissions}/user/{member}"),
            "boss",
            None,
        )
        .await;
    assert_eq!(got.0, 404, "no such grant");
    let got = t
        .call(
            Method::PUT,
            &format!("{table}/client-permissions/{}", uuid::Uuid::new_v4()),
            "boss",
            Some(json!({"can_read": "all"})),
        )
        .await;
    assert_eq!((got.0, code(&got)), (404, "subject_not_found"));
    let got = t
        .call(
            Method::PATCH,
            &table,
            "boss",
            Some(json!({"channel_scope_column": "n"})),
        )
        .await;
    assert_eq!(
        (got.0, code(&got)),
        (400, "table_config_invalid"),
        "company tables have no channel policy"
    );
    let got = t
        .call(
            Method::PATCH,
            &format!("{table}/default-permissions"),
            "member",
            Some(json!({"can_read": "none"})),
        )
        .await;
    assert_eq!(got.0, 403);
    let got = t
        .call(Method::POST, &permissions, "boss", body(json!({})))
        .await;
    assert_eq!(got.0, 200, "{}", got.1);
    let got = t
        .call(
            Method::DELETE,
            &format!("{permissions}/user/{member}"),
            "boss",
            None,
        )
        .await;
    assert_eq!(got.0, 200, "{}", got.1);
}

#[tokio::test]
async fn the_channel_scope_column_cannot_be_deleted() {
    let t = Tables::with_cast().await;
    let (table, _) = governed(&t).await;
    let (_, detail) = t.call(Method::GET, &table, "dm", None).await;
    let key = detail["channel_scope_column"].as_str().unwrap();
    let got = t
        .call(
            Method::DELETE,
            &format!("{table}/columns/{key}"),
            "dm",
            None,
        )
        .await;
    assert_eq!((got.0, code(&got)), (409, "column_is_channel_scope"));
    let got = t
        .call(
            Method::PATCH,
            &table,
            "dm",
            Some(json!({"channel_scope_column": null})),
        )
        .await;
    assert_eq!(got.0, 200, "{}", got.1);
    let (_, page) = rows(&t, &table, "member").await;
    assert_eq!(page["total"], 3, "no longer governed");
}

#[tokio::test]
async fn a_hidden_required_column_is_never_named() {
    let t = Tables::with_cast().await;
    let table = t.table("company", "boss", "hidden required").await;
    t.column(&table, json!({"name": "label", "type": "string"}))
        .await;
    let salary = t
        .column(
            &table,
            json!({"name": "salary", "type": "integer", "required": true}),
        )
        .await;
    let (status, _) = t
        .call(
            Method::PATCH,
            &format!("{table}/default-permissions"),
            "boss",
            Some(json!({"hidden_columns": ["salary"]})),
        )
        .await;
    assert_eq!(status, 200);
    let got = t.insert(&table, "member", json!({"label": "x"})).await;
    assert_eq!(got.0, 400, "{}", got.1);
    assert!(!got.1.to_string().contains("salary"), "{}", got.1);
    let got = t
        .insert(&table, "member", json!({"label": "x", "salary": 1}))
        .await;
    assert_eq!(got.0, 400, "a hidden column cannot be written: {}", got.1);
    let (status, body) = t
        .call(
            Method::PATCH,
            &format!("{table}/columns/{salary}"),
            "boss",
            Some(json!({"default_value": 0})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let got = t.insert(&table, "member", json!({"label": "x"})).await;
    assert_eq!(got.0, 201, "{}", got.1);
    assert!(got.1["data"].get("salary").is_none(), "{}", got.1);
}
