//! Every route in `/openapi.json` has authorization data, and no data names a route
//! that is gone:
//! - sandbox routes: a row of the golden matrix (`sandbox/authorization_matrix.json`);
//! - custom-table routes: an entry of `tables/route_authorization.json` naming a test
//!   that exists;
//! - operator routes (below `/root`), review routes (below
//!   `/private/module/review`) and the notification center (below
//!   `/private/module/notifications`) and the chatroom settings (below
//!   `/private/chatrooms`): an entry of `operator_routes.json`, `review_routes.json`,
//!   `notification_routes.json` or `chatroom_routes.json` naming a test that exists;
//! - everything else (health, metrics, public info, public links): an entry of
//!   `public_routes.json` saying why it needs no login, checked here by calling it
//!   without credentials.
//!
//! A new route fails here until someone decides who may call it.

use crate::support::{TestApp, json};
use reqwest::Method;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

const SANDBOX: &str = "/private/module/sandbox";
const TABLES: &str = "/private/module/custom_tables";
const TABLE_ROUTES: &str = include_str!("tables/route_authorization.json");
const PUBLIC_ROUTES: &str = include_str!("public_routes.json");
const OPERATOR_ROUTES: &str = include_str!("operator_routes.json");
const REVIEW_ROUTES: &str = include_str!("review_routes.json");
const NOTIFICATION_ROUTES: &str = include_str!("notification_routes.json");
const CHATROOM_ROUTES: &str = include_str!("chatroom_routes.json");

/// The route key of the custom-tables data: the path after its scope mount
/// (`/tables/...`, `/migrations/...`, `/trigger-runs/...` or `/commands/...`).
pub(crate) fn table_route(method: &str, path: &str) -> String {
    let tail = [
        "/tables",
        "/migrations",
        "/trigger-runs",
        "/commands",
        "/table-tags",
        "/import",
    ]
    .iter()
    .filter_map(|m| path.find(m).map(|i| &path[i..]))
    .min_by_key(|t| std::cmp::Reverse(t.len()))
    .unwrap_or(path);
    format!("{method} {tail}")
}

/// The routes of the document, per service: `sandbox`, `tables`, `operator`,
/// `review`, `notifications`, `chatrooms` or `public`.
fn documented(doc: &Value) -> BTreeMap<&'static str, BTreeSet<String>> {
    let mut services: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in item.as_object().unwrap().keys() {
            let method = method.to_uppercase();
            let (service, route) = if let Some(rest) = path.strip_prefix(SANDBOX) {
                ("sandbox", format!("{method} {rest}"))
            } else if path.starts_with(TABLES) {
                ("tables", table_route(&method, path))
            } else if path.starts_with("/root/") {
                ("operator", format!("{method} {path}"))
            } else if path.starts_with("/private/module/review/") {
                ("review", format!("{method} {path}"))
            } else if path.starts_with("/private/module/notifications") {
                ("notifications", format!("{method} {path}"))
            } else if path.starts_with("/private/chatrooms/") {
                ("chatrooms", format!("{method} {path}"))
            } else {
                ("public", format!("{method} {path}"))
            };
            services.entry(service).or_default().insert(route);
        }
    }
    services
}

/// The routes each data file names.
fn named() -> BTreeMap<&'static str, BTreeSet<String>> {
    let sandbox = crate::sandbox::matrix::golden_rows()
        .iter()
        .map(|row| row["route"].as_str().unwrap().to_string())
        .collect();
    let keys = |text: &str| -> BTreeSet<String> {
        let data: Value = serde_json::from_str(text).unwrap();
        data["routes"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect()
    };
    BTreeMap::from([
        ("sandbox", sandbox),
        ("tables", keys(TABLE_ROUTES)),
        ("public", keys(PUBLIC_ROUTES)),
        ("operator", keys(OPERATOR_ROUTES)),
        ("review", keys(REVIEW_ROUTES)),
        ("notifications", keys(NOTIFICATION_ROUTES)),
        ("chatrooms", keys(CHATROOM_ROUTES)),
    ])
}

/// The sources of every HTTP test, to find the tests the tables data names.
fn test_sources(dir: &Path, into: &mut String) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            test_sources(&path, into);
        } else if path.extension().is_some_and(|e| e == "rs") {
            into.push_str(&std::fs::read_to_string(&path).unwrap());
        }
    }
}

#[tokio::test]
async fn every_route_has_authorization_data() {
    let app = TestApp::spawn().await;
    // The document itself needs no login either.
    let (status, doc) = json(
        app.request(Method::GET, "/openapi.json")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200);
    let documented = documented(&doc);
    let named = named();
    let mut problems = Vec::new();
    for (service, routes) in &documented {
        for route in routes.difference(&named[service]) {
            problems.push(format!(
                "{service} route without authorization data: {route}"
            ));
        }
    }
    for (service, routes) in &named {
        let empty = BTreeSet::new();
        let live = documented.get(service).unwrap_or(&empty);
        for route in routes.difference(live) {
            problems.push(format!(
                "{service} data names a route that is gone: {route}"
            ));
        }
    }
    let mut sources = String::new();
    test_sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/http"),
        &mut sources,
    );
    let data = [
        ("tables", TABLE_ROUTES),
        ("operator", OPERATOR_ROUTES),
        ("review", REVIEW_ROUTES),
        ("notifications", NOTIFICATION_ROUTES),
        ("chatrooms", CHATROOM_ROUTES),
    ];
    for (service, text) in data {
        let data: Value = serde_json::from_str(text).unwrap();
        for (route, test) in data["routes"].as_object().unwrap() {
            let test = test.as_str().unwrap();
            if !sources.contains(&format!("async fn {test}()")) {
                problems.push(format!(
                    "{service} data: {route} names {test}, which is not a test"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[tokio::test]
async fn public_routes_answer_without_login() {
    let app = TestApp::spawn().await;
    let public: Value = serde_json::from_str(PUBLIC_ROUTES).unwrap();
    for route in public["routes"].as_object().unwrap().keys() {
        let (method, path) = route.split_once(' ').unwrap();
        // Path parameters get a value nobody issued: the route must still answer
        // for itself (404), not ask for credentials.
        let path = path.replace("{token}", "not-a-token");
        let response = app
            .request(method.parse().unwrap(), &path)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        assert!(
            ![401, 403, 418].contains(&status),
            "{route} refused a caller without credentials: {status}"
        );
    }
}
