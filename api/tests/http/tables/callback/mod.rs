//! Callback tokens and external writes (spec `custom-tables.md` sections 4, 5, 7,
//! 8): minting by moderators (the secret once), listing and revoking; writes by
//! Bearer secret or by an HMAC signature computed by an independent client
//! (Python's `hmac`); the byte-identical 404; the body limit, the minute window,
//! the migration lock; idempotency keys, also under 50 concurrent requests. This
//! file holds the shared fixture and request helpers.

mod approvals;
mod idempotency;
mod tokens;
mod writes;

use super::fixture::Tables;
use reqwest::Method;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};

/// A chatroom table of `lab` (moderated by dm) with `name` (string), `qty`
/// (integer) and `notes` (text); returns (table path, keys by name).
pub async fn intake_table(t: &Tables) -> (String, Value) {
    let table = t.table("chatroom:lab", "dm", "intake").await;
    let name = column(t, &table, json!({"name": "name", "type": "string"})).await;
    let qty = column(t, &table, json!({"name": "qty", "type": "integer"})).await;
    let notes = column(t, &table, json!({"name": "notes", "type": "text"})).await;
    (table, json!({"name": name, "qty": qty, "notes": notes}))
}

/// Adds a column as dm; returns its key.
pub async fn column(t: &Tables, table: &str, body: Value) -> String {
    let (status, added) = t.add_column(table, "dm", body).await;
    assert_eq!(status, 200, "add column: {added}");
    added["column"]["id"].as_str().unwrap().to_string()
}

pub fn tokens_path(table: &str) -> String {
    format!("{table}/callback-tokens")
}

/// Mints a token as dm; returns (token id, secret).
pub async fn mint(t: &Tables, table: &str, allowed_ops: &str) -> (String, String) {
    let body = json!({"name": "crm", "allowed_ops": allowed_ops});
    let (status, minted) = t
        .call(Method::POST, &tokens_path(table), "dm", Some(body))
        .await;
    assert_eq!(status, 201, "{minted}");
    (
        minted["token_id"].as_str().unwrap().to_string(),
        minted["secret"].as_str().unwrap().to_string(),
    )
}

/// A raw request to the callback surface: (status, headers, body text).
pub async fn send(
    t: &Tables,
    method: Method,
    path: &str,
    headers: &[(&str, String)],
    body: Option<String>,
) -> (u16, HeaderMap, String) {
    let mut request = t.app.request(
        method,
        &format!("/public/module/custom_tables/callback/{path}"),
    );
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, headers, response.text().await.unwrap())
}

/// A write with the Bearer secret: (status, JSON body).
pub async fn write(t: &Tables, token: &str, secret: &str, body: Value) -> (u16, Value) {
    let bearer = [("authorization", format!("Bearer {secret}"))];
    let (status, _, text) = send(t, Method::POST, token, &bearer, Some(body.to_string())).await;
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// Signs and sends a request with Python's `hashlib`/`hmac`/`urllib` (an
/// implementation independent of the server's), the timestamp `skew` seconds off.
const PYTHON_CLIENT: &str = r#"
import hashlib, hmac, sys, time, urllib.request, urllib.error
url, secret, method, body, skew = sys.argv[1:6]
key = hashlib.sha256(secret.encode()).digest()
ts = str(int(time.time()) + int(skew))
payload = body.encode()
sig = hmac.new(key, ts.encode() + b"." + payload, hashlib.sha256).hexdigest()
headers = {"X-Callback-Timestamp": ts, "X-Callback-Signature": sig}
data = None
if method == "POST":
    headers["Content-Type"] = "application/json"
    data = payload
request = urllib.request.Request(url, data=data, method=method, headers=headers)
try:
    with urllib.request.urlopen(request) as response:
        print(response.status)
        print(response.read().decode())
except urllib.error.HTTPError as error:
    print(error.code)
    print(error.read().decode())
"#;

/// A request signed by [`PYTHON_CLIENT`]: (status, JSON body).
pub async fn signed(
    t: &Tables,
    method: &str,
    path: &str,
    secret: &str,
    body: &str,
    skew: i64,
) -> (u16, Value) {
    let url = format!("{}/public/module/custom_tables/callback/{path}", t.app.base);
    let output = tokio::process::Command::new("python3")
        .args(["-c", PYTHON_CLIENT, &url, secret, method, body])
        .arg(skew.to_string())
        .output()
        .await
        .expect("python3 runs");
    let text = String::from_utf8(output.stdout).unwrap();
    let (status, body) = text.split_once('\n').expect("a status line");
    (
        status.trim().parse().expect("a status"),
        serde_json::from_str(body.trim()).unwrap_or(Value::String(body.into())),
    )
}

/// The records of the table as dm reads them, by `name`.
pub async fn names(t: &Tables, table: &str) -> Vec<String> {
    let body = json!({"sort": [{"column": "name"}], "limit": 100});
    let search = format!("{table}/records/search");
    let (status, page) = t.call(Method::POST, &search, "dm", Some(body)).await;
    assert_eq!(status, 200, "{page}");
    page["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["data"]["name"].as_str().unwrap_or_default().to_string())
        .collect()
}
