//! Every custom-table route has an authorization test: `route_authorization.json`
//! names, per route of the OpenAPI document, the test that shows who is refused on
//! it. A new route without an entry, an entry without a route, or an entry naming a
//! test that does not exist fails here.

use super::fixture::{BASE, Tables};
use crate::coverage::table_route;
use reqwest::Method;
use serde_json::Value;
use std::collections::BTreeSet;

const ROUTES: &str = include_str!("route_authorization.json");

/// The sources of the custom-table tests, where the named tests must exist.
const SOURCES: [&str; 26] = [
    include_str!("deployment_plans.rs"),
    include_str!("import.rs"),
    include_str!("passphrase.rs"),
    include_str!("tags.rs"),
    include_str!("deployment.rs"),
    include_str!("triggers/mod.rs"),
    include_str!("triggers/firing.rs"),
    include_str!("attachments.rs"),
    include_str!("callback/tokens.rs"),
    include_str!("callback/writes.rs"),
    include_str!("callback/idempotency.rs"),
    include_str!("callback/approvals.rs"),
    include_str!("channels.rs"),
    include_str!("refusals.rs"),
    include_str!("columns.rs"),
    include_str!("commands.rs"),
    include_str!("matrix.rs"),
    include_str!("migrations.rs"),
    include_str!("policies.rs"),
    include_str!("public_read/minting.rs"),
    include_str!("public_read/anonymous.rs"),
    include_str!("public_read/queries.rs"),
    include_str!("records.rs"),
    include_str!("replay.rs"),
    include_str!("scopes.rs"),
    include_str!("types.rs"),
];

#[tokio::test]
async fn every_table_route_has_an_authorization_test() {
    let t = Tables::new().await;
    let (status, doc) = t.call(Method::GET, "/openapi.json", "boss", None).await;
    assert_eq!(status, 200);
    let mut routes = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        if !path.starts_with(BASE) {
            continue;
        }
        for method in item.as_object().unwrap().keys() {
            routes.insert(table_route(&method.to_uppercase(), path));
        }
    }
    let mapping: Value = serde_json::from_str(ROUTES).unwrap();
    let mapping = mapping["routes"].as_object().unwrap();
    let missing: Vec<&String> = routes
        .iter()
        .filter(|r| !mapping.contains_key(*r))
        .collect();
    assert!(
        missing.is_empty(),
        "routes without an authorization test:\n{}",
        missing
            .iter()
            .map(|r| format!("  \"{r}\": \"\","))
            .collect::<Vec<_>>()
            .join("\n")
    );
    for (route, test) in mapping {
        assert!(routes.contains(route), "{route} is not a route any more");
        let test = test.as_str().unwrap();
        let defined = SOURCES
            .iter()
            .any(|source| source.contains(&format!("async fn {test}()")));
        assert!(defined, "{route}: no test named {test}");
    }
}
