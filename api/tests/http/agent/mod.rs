//! The agent tools over MCP (`POST /mcp`, JSON-RPC 2.0): the tool gate, the five
//! tools, proposals confirmed in a later human turn with signed receipts, and an
//! independent MCP client (Python's `mcp`).

mod client;
mod gate;
mod proposals;
mod tools;

use crate::environments::Caller;
use crate::runs::runnable;
use crate::support::{As, TestApp, json};
use api::agent::turn::TurnClaims;
use domain::principal::PrincipalType;
use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

/// Where the MCP server answers.
pub const MCP: &str = "/mcp";

/// How a request authenticates.
#[derive(Clone, Copy)]
pub enum Credential<'a> {
    /// A user's JWT.
    Jwt(&'a str),
    /// An API key.
    Key(&'a str),
}

/// A signed turn of `principal` in `room` at message `seq`.
pub fn turn(
    app: &TestApp,
    room: Uuid,
    seq: i64,
    principal: (PrincipalType, Uuid),
    human: bool,
) -> String {
    let now = chrono::Utc::now().timestamp();
    let claims = TurnClaims {
        chatroom_id: room,
        message_id: format!("msg-{seq}"),
        message_seq: seq,
        principal_type: principal.0,
        principal_id: principal.1,
        human,
        iat: now,
        exp: now + 600,
    };
    app.state.turn.mint(claims).unwrap()
}

/// One JSON-RPC request to `/mcp`: (HTTP status, body).
pub async fn rpc(
    app: &TestApp,
    credential: Option<Credential<'_>>,
    turn: Option<&str>,
    method: &str,
    params: Value,
) -> (u16, Value) {
    rpc_at(&app.client, &app.base, credential, turn, method, params).await
}

/// [`rpc`] to the server at `base`.
pub async fn rpc_at(
    client: &reqwest::Client,
    base: &str,
    credential: Option<Credential<'_>>,
    turn: Option<&str>,
    method: &str,
    params: Value,
) -> (u16, Value) {
    let mut request = client
        .request(Method::POST, format!("{base}{MCP}"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}));
    request = match credential {
        Some(Credential::Jwt(token)) => request.bearer_token(token),
        Some(Credential::Key(key)) => request.api_key(key),
        None => request,
    };
    if let Some(turn) = turn {
        request = request.header("x-sandbox-turn", turn);
    }
    json(request.send().await.unwrap()).await
}

/// The names `tools/list` shows.
pub async fn listed(app: &TestApp, credential: Credential<'_>, turn: Option<&str>) -> Vec<String> {
    let (status, body) = rpc(app, Some(credential), turn, "tools/list", json!({})).await;
    assert_eq!(status, 200, "{body}");
    body["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{body}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

/// Calls a tool and returns its object, after checking the result's shape: the
/// object is `structuredContent`, its JSON text is `content[0].text`, and `isError`
/// is set exactly for the error shape.
pub async fn call(
    app: &TestApp,
    credential: Credential<'_>,
    turn: &str,
    name: &str,
    arguments: Value,
) -> Value {
    call_at(&app.client, &app.base, credential, turn, name, arguments).await
}

/// [`call`] on the server at `base`.
pub async fn call_at(
    client: &reqwest::Client,
    base: &str,
    credential: Credential<'_>,
    turn: &str,
    name: &str,
    arguments: Value,
) -> Value {
    let params = json!({"name": name, "arguments": arguments});
    let (status, body) = rpc_at(
        client,
        base,
        Some(credential),
        Some(turn),
        "tools/call",
        params,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let result = &body["result"];
    let object = result["structuredContent"].clone();
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, object);
    assert_eq!(result["isError"], object["status"] == "error", "{body}");
    object
}

/// Asserts a tool answered the error shape with `code`.
pub fn refused(answer: &Value, code: &str) {
    assert_eq!(answer["status"], "error", "{answer}");
    assert_eq!(answer["error"], code, "{answer}");
    assert!(answer["message"].is_string(), "{answer}");
}

/// A published version shared to the company, enabled in `room` by `manager`:
/// (task id, version id).
pub async fn enabled(
    boss: &Caller<'_>,
    manager: &Caller<'_>,
    room: &str,
    ready: &str,
    work: &str,
    extra: Value,
) -> (String, String) {
    let (task, version) = runnable(boss, ready, work, extra).await;
    let path = format!("/chatrooms/{room}/granted-jobs/{task}/enable");
    let (status, body) = manager
        .post(&path, json!({"task_version_id": version}))
        .await;
    assert_eq!(status, 200, "{body}");
    (task, version)
}
