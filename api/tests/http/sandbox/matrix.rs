//! The golden sandbox authorization matrix, checked over HTTP: every sandbox route
//! (one row per route, plus rows for the resources a rule tells apart) × every
//! caller standing. `authorization_matrix.json` holds today's answer of each cell;
//! a refactor of the authorization code must leave every cell as it is.
//!
//! A cell is `allowed` when the answer is not an authorization refusal (2xx, or a
//! business 4xx such as 409 or 422 after the route let the caller in), else the
//! refusal's status: `403`, `404`, `405` or `418`. Within a row the callers expected
//! to be refused go first, so an allowed caller that consumes the resource (archive,
//! revoke, publish) cannot change what the refused ones see.

use super::fixture::World;
use super::requests::{Payload, request};
use super::world::{CALLERS, Credential, credential};
use crate::environments::SANDBOX;
use crate::support::TestApp;
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

/// The golden file.
pub const GOLDEN: &str = include_str!("authorization_matrix.json");

/// The statuses that are authorization refusals (everything else is `allowed`).
const REFUSALS: [u16; 4] = [403, 404, 405, 418];

/// A cell's outcome.
fn outcome(status: u16) -> String {
    match status {
        s if REFUSALS.contains(&s) => s.to_string(),
        200..=299 | 400..=499 => "allowed".into(),
        s => format!("unexpected {s}"),
    }
}

/// The golden rows, checked for shape: every row names a route and a full set of
/// callers, and lets at least one caller in (else its ids or body prove nothing).
pub fn golden_rows() -> Vec<Map<String, Value>> {
    let golden: Value = serde_json::from_str(GOLDEN).expect("the golden file is JSON");
    let rows = golden["rows"].as_array().expect("rows");
    let columns: BTreeSet<&str> = CALLERS.into_iter().collect();
    let mut seen = BTreeSet::new();
    for row in rows {
        let label = label(row);
        assert!(seen.insert(label.clone()), "{label} is listed twice");
        let expect = row["expect"].as_object().expect("expect");
        let named: BTreeSet<&str> = expect.keys().map(String::as_str).collect();
        assert_eq!(named, columns, "{label}: the callers of a row");
        assert!(
            expect.values().any(|v| v == "allowed"),
            "{label}: no caller is allowed"
        );
    }
    rows.iter()
        .map(|row| row.as_object().unwrap().clone())
        .collect()
}

/// `METHOD /path` and the row's case, if any.
fn label(row: &Value) -> String {
    match row["case"].as_str() {
        Some(case) => format!("{} [{case}]", row["route"].as_str().unwrap()),
        None => row["route"].as_str().unwrap().to_string(),
    }
}

/// Sends a row's request as one caller; returns the status and the body's start.
async fn send(
    app: &TestApp,
    credential: &Credential,
    request: &super::requests::Request,
    idempotency: &str,
) -> (u16, String) {
    let url = format!("{SANDBOX}{}", request.path);
    let mut builder = credential.apply(app.request(request.method.clone(), &url));
    if request.keyed {
        builder = builder.header("idempotency-key", idempotency);
    }
    builder = match &request.body {
        Payload::Empty => builder,
        Payload::Json(value) => builder.json(value),
        Payload::Raw {
            content_type,
            bytes,
            header,
        } => {
            let builder = builder
                .header("content-type", content_type)
                .body(bytes.clone());
            match header {
                Some((name, value)) => builder.header(*name, *value),
                None => builder,
            }
        }
    };
    let response = builder.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap_or_default();
    (status, text.chars().take(160).collect())
}

#[tokio::test]
async fn sandbox_matrix_matches_the_golden_file() {
    let rows = golden_rows();
    let app = TestApp::spawn().await;
    let (seed, world) = World::build(&app).await;
    let credentials: Vec<(&str, Credential)> = CALLERS
        .iter()
        .map(|caller| (*caller, credential(&seed, caller)))
        .collect();
    let mut mismatches = Vec::new();
    let mut observed_rows = Vec::new();
    for (index, row) in rows.iter().enumerate() {
        let label = label(&Value::Object(row.clone()));
        let route = row["route"].as_str().unwrap();
        let request = request(&world, route, row.get("case").and_then(Value::as_str));
        let expect = row["expect"].as_object().unwrap();
        // Refusals first: an allowed caller may consume the resource.
        let mut order: Vec<&(&str, Credential)> = credentials.iter().collect();
        order.sort_by_key(|(caller, _)| expect[*caller] == "allowed");
        let mut observed = Map::new();
        let mut statuses = Vec::new();
        for (caller, credential) in order {
            let key = format!("matrix-{index}-{caller}");
            let (status, body) = send(&app, credential, &request, &key).await;
            let got = outcome(status);
            let expected = expect[*caller].as_str().unwrap_or("?");
            if expected != got {
                mismatches.push(format!(
                    "{label} as {caller}: expected {expected}, got {status} {body}"
                ));
            }
            statuses.push(format!("{caller}={status}"));
            observed.insert(caller.to_string(), Value::String(got));
        }
        println!("{label}: {}", statuses.join(" "));
        observed_rows.push(golden_line(row, &observed));
    }
    if !mismatches.is_empty() {
        eprintln!("observed rows, as the golden file writes them:");
        eprintln!("{}", observed_rows.join(",\n"));
    }
    assert!(
        mismatches.is_empty(),
        "{} cells differ from authorization_matrix.json:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

/// A row as one line of the golden file, callers in column order.
fn golden_line(row: &Map<String, Value>, observed: &Map<String, Value>) -> String {
    let cells: Vec<String> = CALLERS
        .iter()
        .map(|caller| format!("{}: {}", json!(caller), observed[*caller]))
        .collect();
    let case = row
        .get("case")
        .map(|case| format!(", \"case\": {case}"))
        .unwrap_or_default();
    format!(
        "    {{\"route\": {}{case},\n     \"expect\": {{{}}}}}",
        row["route"],
        cells.join(", ")
    )
}
