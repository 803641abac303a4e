//! Agent delivery reconciliation: a social media client's keyed deliveries of a
//! write Command are reconciled by their markers (16 valid per Command and agent),
//! and the operator's hotfix routes list and acknowledge markers.

use super::fixture::Tables;
use crate::support::{As, json};
use reqwest::Method;
use serde_json::{Value, json};

/// The client `line1` delivers the Command (under `key`, when not empty).
async fn deliver(t: &Tables, command: &str, key: &str, name: &str) -> Value {
    let mut request = t
        .app
        .request(Method::POST, &format!("{command}/execute"))
        .api_key(&t.seed.key("acme", "line"))
        .json(&json!({"inputs": {"name": name}}));
    if !key.is_empty() {
        request = request.header("idempotency-key", key);
    }
    let (status, body) = json(request.send().await.unwrap()).await;
    assert_eq!(status, 200, "{body}");
    body
}

async fn root(
    t: &Tables,
    method: Method,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = t.app.request(method, path);
    if !token.is_empty() {
        request = request.bearer_token(token);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    json(request.send().await.unwrap()).await
}

const LIST: &str = "/root/hotfix/custom-table-agent-deliveries";
const ACK: &str = "/root/hotfix/custom-table-agent-deliveries/acknowledge";

#[tokio::test]
async fn agent_deliveries_are_reconciled_and_operators_acknowledge_markers() {
    let t = Tables::new().await;
    let table = t.table("chatroom:lab", "dm", "intake").await;
    t.column(&table, json!({"name": "name", "type": "string"}))
        .await;
    let table_id = table.rsplit('/').next().unwrap();
    let commands = format!("{}/commands", t.mount("chatroom:lab"));
    let definition = json!({"table_id": table_id, "name": "intake", "kind": "write",
        "authority": "definition", "delivery_reconciliation_ttl_seconds": 600,
        "inputs": {"type": "object", "properties": {"name": {"type": "string"}}},
        "write": {"op": "create", "values": {"name": "$input.name"}}});
    let (status, command) = t
        .call(Method::POST, &commands, "dm", Some(definition))
        .await;
    assert_eq!(status, 201, "{command}");
    let command_id = command["id"].as_str().unwrap().to_string();
    let command = format!("{commands}/{command_id}");

    // A re-delivery under the same key is reconciled to the first record.
    let first = deliver(&t, &command, "d1", "one").await;
    assert_eq!(first["replayed"], false);
    let again = deliver(&t, &command, "d1", "one").await;
    assert_eq!(
        (again["replayed"].clone(), again["record_id"].clone()),
        (json!(true), first["record_id"].clone())
    );
    let unkeyed = deliver(&t, &command, "", "two").await;
    assert_ne!(unkeyed["record_id"], first["record_id"]);

    // 16 valid markers per reconciliation: the 17th retires the oldest.
    for n in 2..=17 {
        deliver(&t, &command, &format!("d{n}"), "more").await;
    }
    let operator = t
        .app
        .state
        .jwt
        .mint_operator(chrono::Duration::hours(1))
        .unwrap();
    let list = format!("{LIST}?command_id={command_id}");
    assert_eq!(root(&t, Method::GET, &list, "", None).await.0, 418);
    assert_eq!(
        root(&t, Method::GET, &list, &t.token("boss"), None).await.0,
        403
    );
    let (status, open) = root(&t, Method::GET, &list, &operator, None).await;
    assert_eq!(status, 200, "{open}");
    assert_eq!(open["total"], 16, "{open}");
    let keys: Vec<&str> = open["markers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["key"].as_str().unwrap())
        .collect();
    assert!(!keys.contains(&"d1") && keys.contains(&"d17"), "{keys:?}");
    assert!(
        open["markers"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["valid"] == true)
    );
    let retired = deliver(&t, &command, "d1", "one again").await;
    assert_eq!(
        retired["replayed"], false,
        "a retired marker reconciles nothing"
    );

    // Acknowledging: a preview by default; valid markers only with force.
    let selector = json!({"command_id": command_id});
    let (status, preview) = root(&t, Method::POST, ACK, &operator, Some(selector.clone())).await;
    assert_eq!(status, 200, "{preview}");
    assert_eq!(preview["executed"], false);
    assert_eq!(preview["acknowledged"], json!([]));
    assert_eq!(preview["skipped_valid"].as_array().unwrap().len(), 16);
    let d5 = open["markers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["key"] == "d5")
        .unwrap()["id"]
        .clone();
    let forced = json!({"marker_ids": [d5], "execute": true, "force": true});
    let (status, done) = root(&t, Method::POST, ACK, &operator, Some(forced)).await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(
        (done["executed"].clone(), done["acknowledged"].clone()),
        (json!(true), json!([d5]))
    );
    let (_, open) = root(&t, Method::GET, &list, &operator, None).await;
    assert_eq!(open["total"], 15);
    let redelivered = deliver(&t, &command, "d5", "five again").await;
    assert_eq!(
        redelivered["replayed"], false,
        "an acknowledged marker reconciles nothing"
    );
    let unforced = json!({"command_id": command_id, "execute": true});
    let (_, kept) = root(&t, Method::POST, ACK, &operator, Some(unforced)).await;
    assert_eq!(
        kept["acknowledged"],
        json!([]),
        "valid markers need force: {kept}"
    );
}
