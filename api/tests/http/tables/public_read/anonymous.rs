//! The uniform 404: every kind of bad token answers the same bytes.

use super::{mint, public, published_table, read, tokens_path};
use crate::tables::fixture::Tables;
use reqwest::Method;
use reqwest::header::HeaderMap;
use serde_json::json;

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
