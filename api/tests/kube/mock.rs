//! A mock Kubernetes API server: it answers a recorded exchange
//! (`exchanges/<name>.json`: each request's method and path with its query, and the
//! response the API server gives) in order, and keeps the body of every request the
//! client made, so a test checks both the client's calls and what it sent.

use axum::body::Bytes;
use axum::http::{Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

#[derive(Debug, Deserialize)]
struct Exchange {
    request: Expected,
    response: Answer,
}

#[derive(Debug, Deserialize)]
struct Expected {
    method: String,
    path: String,
}

#[derive(Debug, Deserialize)]
struct Answer {
    status: u16,
    #[serde(default)]
    body: Value,
    /// A plain-text body (pod logs) instead of JSON.
    #[serde(default)]
    text: Option<String>,
}

#[derive(Default)]
struct Script {
    expected: VecDeque<Exchange>,
    /// The body of every request (`null` when it had none).
    seen: Vec<Value>,
    mismatches: Vec<String>,
}

/// The running mock.
pub struct Mock {
    url: String,
    script: Arc<Mutex<Script>>,
}

impl Mock {
    /// Serves `exchanges/<name>.json`.
    pub async fn start(name: &str) -> Self {
        let file = format!(
            "{}/tests/kube/exchanges/{name}.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
        let expected: VecDeque<Exchange> = serde_json::from_str(&text).unwrap();
        let script = Arc::new(Mutex::new(Script {
            expected,
            ..Default::default()
        }));
        let shared = Arc::clone(&script);
        let app = axum::Router::new().fallback(move |method: Method, uri: Uri, body: Bytes| {
            let script = Arc::clone(&shared);
            async move { answer(&script, method, uri, body) }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self { url, script }
    }

    /// A client of the mock.
    pub fn client(&self) -> kube::Client {
        let config = kube::Config::new(self.url.parse().unwrap());
        kube::Client::try_from(config).unwrap()
    }

    /// Checks that every exchange happened as recorded; answers the requests'
    /// bodies.
    pub fn finish(&self) -> Vec<Value> {
        let script = self.script.lock().unwrap();
        assert!(script.mismatches.is_empty(), "{:#?}", script.mismatches);
        let left: Vec<_> = script.expected.iter().map(|e| &e.request).collect();
        assert!(left.is_empty(), "exchanges that did not happen: {left:#?}");
        script.seen.clone()
    }
}

fn answer(script: &Mutex<Script>, method: Method, uri: Uri, body: Bytes) -> Response {
    let mut script = script.lock().unwrap();
    let path = uri
        .path_and_query()
        .map(|p| p.to_string())
        .unwrap_or_default();
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    script.seen.push(body);
    let Some(next) = script.expected.pop_front() else {
        script
            .mismatches
            .push(format!("{method} {path}: no exchange left"));
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    if next.request.method != method.as_str() || next.request.path != path {
        eprintln!(
            "mock: {method} {path}, expected {} {}",
            next.request.method, next.request.path
        );
        script.mismatches.push(format!(
            "{method} {path}: expected {} {}",
            next.request.method, next.request.path
        ));
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    }
    let status = StatusCode::from_u16(next.response.status).unwrap();
    match next.response.text {
        Some(text) => (status, [(header::CONTENT_TYPE, "text/plain")], text).into_response(),
        None => (status, axum::Json(next.response.body)).into_response(),
    }
}
