//! Public catalogs and the transit key (no login).

use crate::support::{Options, TestApp, json};
use domain::catalog::Provider;
use reqwest::Method;
use rsa::pkcs8::DecodePublicKey;
use rsa::traits::PublicKeyParts;
use serde_json::json;

#[tokio::test]
async fn onprem_region_catalog_is_exactly_onprem_at_tier_3() {
    let app = TestApp::spawn().await;
    let got = json(
        app.request(Method::GET, "/public/info/sandbox/regions")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        got,
        (
            200,
            json!({"items": [{"code": "onprem", "display_name": "On-premises",
        "location": "Operator data centre", "tier": 3}]})
        )
    );
}

#[tokio::test]
async fn managed_region_catalog_shows_the_cloud_regions() {
    let app = TestApp::spawn_with(Options {
        provider: Provider::Managed,
        ..Options::default()
    })
    .await;
    let (status, body) = json(
        app.request(Method::GET, "/public/info/sandbox/regions")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200);
    let codes: Vec<&str> = body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes.len(), 10);
    assert!(!codes.contains(&"onprem"));
    assert!(codes.contains(&"asia-east1"));
    assert!(
        body["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["tier"] == 1 || r["tier"] == 2)
    );
}

#[tokio::test]
async fn profile_table_matches_the_spec() {
    let app = TestApp::spawn().await;
    let (status, body) = json(
        app.request(Method::GET, "/public/info/sandbox/profiles")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200);
    let rows: Vec<(String, u64, u64, u64, bool, bool)> = body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["id"].as_str().unwrap().to_string(),
                p["vcpu"].as_u64().unwrap(),
                p["customer_memory_mib"].as_u64().unwrap(),
                p["workspace_mib"].as_u64().unwrap(),
                p["tenant_selectable"].as_bool().unwrap(),
                p["is_default"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            ("standard".into(), 1, 1280, 512, true, true),
            ("performance".into(), 2, 2560, 1024, true, false),
            ("large".into(), 4, 5120, 2048, true, false),
            ("xlarge".into(), 8, 10240, 4096, false, false),
        ]
    );
    assert!(body["items"][0]["provider_memory_mib"].as_u64().unwrap() >= 1280);
}

#[tokio::test]
async fn public_key_is_an_rsa_key_of_at_least_3072_bits() {
    let app = TestApp::spawn().await;
    let (status, body) = json(
        app.request(Method::GET, "/public/info/model_key/public_key")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200);
    let key =
        rsa::PublicKey::from_public_key_pem(body["public_key_pem"].as_str().unwrap()).unwrap();
    assert!(key.size() * 8 >= 3072);
    assert_eq!(body["algorithm"], "RSA-OAEP-SHA256+AES-256-GCM");
}

#[tokio::test]
async fn public_key_is_503_without_a_key_pair() {
    let app = TestApp::spawn_with(Options {
        transit_key: false,
        ..Options::default()
    })
    .await;
    let got = json(
        app.request(Method::GET, "/public/info/model_key/public_key")
            .send()
            .await
            .unwrap(),
    )
    .await;
    crate::support::assert_code(&got, 503, "sandbox_transit_keypair_missing");
}
