//! The name-resolution throttle (spec `custom-tables.md` section 8): per table and
//! caller, 30 searches matching people by name per 300 seconds for users, 10 for
//! social media clients; other searches and other tables are not counted.

use super::fixture::{Tables, code};
use reqwest::Method;
use serde_json::json;

#[tokio::test]
async fn people_are_matched_by_name_within_a_budget_per_table_and_caller() {
    let t = Tables::new().await;
    let table = t.table("chatroom:lab", "dm", "Tasks").await;
    t.column(&table, json!({"name": "Owner", "type": "user"}))
        .await;
    let client = t.client();
    let (s, _) = t
        .call(
            Method::PUT,
            &format!("{table}/client-permissions/{client}"),
            "dm",
            Some(json!({"can_read": "all"})),
        )
        .await;
    assert_eq!(s, 200);
    let search = format!("{table}/records/search");
    let by_name = json!({"filter": {"column": "Owner", "op": "name_eq", "value": "member"}});
    for _ in 0..30 {
        let (s, body) = t
            .call(Method::POST, &search, "dm", Some(by_name.clone()))
            .await;
        assert_eq!(s, 200, "{body}");
    }
    let got = t
        .call(Method::POST, &search, "dm", Some(by_name.clone()))
        .await;
    assert_eq!(
        (got.0, code(&got)),
        (429, "name_resolution_rate_limited"),
        "{}",
        got.1
    );
    let (s, _) = t
        .call(
            Method::POST,
            &search,
            "dm",
            Some(json!({"filter": {"column": "Owner", "op": "is_null"}})),
        )
        .await;
    assert_eq!(s, 200, "a search without names is not counted");
    let other = t.table("chatroom:lab", "dm", "Other").await;
    t.column(&other, json!({"name": "Owner", "type": "user"}))
        .await;
    let (s, _) = t
        .call(
            Method::POST,
            &format!("{other}/records/search"),
            "dm",
            Some(by_name.clone()),
        )
        .await;
    assert_eq!(s, 200, "another table has its own budget");

    // Social media clients (external) have 10.
    for _ in 0..10 {
        let (s, body) = t
            .call(Method::POST, &search, "line1", Some(by_name.clone()))
            .await;
        assert_eq!(s, 200, "{body}");
    }
    let got = t.call(Method::POST, &search, "line1", Some(by_name)).await;
    assert_eq!((got.0, code(&got)), (429, "name_resolution_rate_limited"));
}
