//! Authentication (spec section 5).

use crate::support::{As, TestApp, json};
use reqwest::Method;

const SETTINGS: &str = "/private/module/sandbox/settings";

#[tokio::test]
async fn no_credentials_answer_418_with_www_authenticate() {
    let app = TestApp::spawn().await;
    let response = app.request(Method::GET, SETTINGS).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 418);
    assert_eq!(response.headers()["www-authenticate"], "Bearer");
}

#[tokio::test]
async fn invalid_credentials_answer_418() {
    let app = TestApp::spawn().await;
    let seed = app.seed().await;
    let forged = app
        .request(Method::GET, SETTINGS)
        .bearer_token("not.a.jwt")
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status().as_u16(), 418);
    let unknown_key = app
        .request(Method::GET, SETTINGS)
        .api_key("sbx_unknown")
        .send()
        .await
        .unwrap();
    assert_eq!(unknown_key.status().as_u16(), 418);
    let other_secret = api::auth::jwt::JwtKeys::new(b"another-secret-another-secret-000000")
        .mint(
            seed.user("acme", "boss"),
            seed.company("acme"),
            chrono::Duration::hours(1),
        )
        .unwrap();
    let wrong_signature = app
        .request(Method::GET, SETTINGS)
        .bearer_token(&other_secret)
        .send()
        .await
        .unwrap();
    assert_eq!(wrong_signature.status().as_u16(), 418);
    let expired = app
        .state
        .jwt
        .mint(
            seed.user("acme", "boss"),
            seed.company("acme"),
            chrono::Duration::seconds(-5),
        )
        .unwrap();
    let expired = app
        .request(Method::GET, SETTINGS)
        .bearer_token(&expired)
        .send()
        .await
        .unwrap();
    assert_eq!(expired.status().as_u16(), 418);
    let basic = app
        .request(Method::GET, SETTINGS)
        .header("authorization", "Basic abc")
        .send()
        .await
        .unwrap();
    assert_eq!(basic.status().as_u16(), 418);
}

#[tokio::test]
async fn a_token_for_a_user_of_another_company_is_refused() {
    let app = TestApp::spawn().await;
    let seed = app.seed().await;
    let token = app
        .state
        .jwt
        .mint(
            seed.user("acme", "boss"),
            seed.company("globex"),
            chrono::Duration::hours(1),
        )
        .unwrap();
    let response = app
        .request(Method::GET, SETTINGS)
        .bearer_token(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 418);
}

#[tokio::test]
async fn jwt_and_full_api_key_both_authenticate_the_manager() {
    let app = TestApp::spawn().await;
    let seed = app.seed().await;
    let by_token = app
        .request(Method::GET, SETTINGS)
        .bearer_token(&seed.token("acme", "boss"))
        .send()
        .await
        .unwrap();
    assert_eq!(by_token.status().as_u16(), 200);
    let by_key = app
        .request(Method::GET, SETTINGS)
        .api_key(&seed.key("acme", "full"))
        .send()
        .await
        .unwrap();
    assert_eq!(by_key.status().as_u16(), 200);
}

#[tokio::test]
async fn an_api_key_with_domains_checks_the_origin() {
    let app = TestApp::spawn().await;
    let seed = app.seed().await;
    let key = seed.key("acme", "web");
    let allowed = app
        .request(Method::GET, SETTINGS)
        .api_key(&key)
        .header("origin", "https://app.acme.test")
        .send();
    assert_eq!(allowed.await.unwrap().status().as_u16(), 200);
    let (status, body) = json(
        app.request(Method::GET, SETTINGS)
            .api_key(&key)
            .header("origin", "https://evil.test")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 403);
    assert!(body["detail"].is_string());
    let no_origin = app
        .request(Method::GET, SETTINGS)
        .api_key(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(no_origin.status().as_u16(), 403);
}

/// Events record who caused them: principal type, id and auth method, company,
/// request id and time.
#[tokio::test]
async fn events_record_the_principal_and_request() {
    let app = TestApp::spawn().await;
    let seed = app.seed().await;
    let response = app
        .request(Method::GET, SETTINGS)
        .api_key(&seed.key("acme", "full"))
        .header("x-request-id", "req-123")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(response.headers()["x-request-id"], "req-123");
    let metadata: serde_json::Value = sqlx::query_scalar(
        "SELECT metadata::jsonb FROM events WHERE aggregate_type = 'company_settings' ORDER BY sequence LIMIT 1",
    )
    .fetch_one(&app.db.pool)
    .await
    .unwrap();
    assert_eq!(metadata["principal_type"], "user");
    assert_eq!(
        metadata["principal_id"],
        seed.user("acme", "boss").to_string()
    );
    assert_eq!(metadata["auth_method"], "api_key");
    assert_eq!(metadata["company_id"], seed.company("acme").to_string());
    assert_eq!(metadata["request_id"], "req-123");
    assert!(chrono::DateTime::parse_from_rfc3339(metadata["time"].as_str().unwrap()).is_ok());
}

#[tokio::test]
async fn a_social_media_client_key_resolves_to_that_principal_type() {
    let app = TestApp::spawn().await;
    let seed = app.seed().await;
    let headers = axum::http::HeaderMap::from_iter([(
        axum::http::HeaderName::from_static("x-api-key"),
        seed.key("acme", "line").parse().unwrap(),
    )]);
    let principal = api::auth::resolve(&app.state, &headers).await.unwrap();
    assert_eq!(
        principal.principal_type,
        domain::principal::PrincipalType::SocialMediaClient
    );
    assert_eq!(principal.company_id, seed.company("acme"));
    assert_eq!(principal.auth_method, domain::principal::AuthMethod::ApiKey);
    assert!(!principal.is_company_manager());
    let bot = axum::http::HeaderMap::from_iter([(
        axum::http::HeaderName::from_static("x-api-key"),
        seed.key("acme", "bot").parse().unwrap(),
    )]);
    let restricted = api::auth::resolve(&app.state, &bot).await.unwrap();
    assert!(restricted.is_restricted());
    assert_eq!(
        restricted.allowed_chatroom_ids,
        Some(vec![seed.room("acme", "lab")])
    );
}
