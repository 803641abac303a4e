//! `settings.agent_writes_via_commands_only` (spec `custom-tables.md` 5.8.4): a
//! table's managers set it; raw agent writes (a social media client's) are then
//! refused with 403 `table_governed_by_commands`, while people write as before and
//! the agent writes through Commands.

use crate::support::assert_code;
use crate::tables::fixture::Tables;
use reqwest::Method;
use serde_json::json;

#[tokio::test]
async fn a_commands_only_table_refuses_raw_agent_writes() {
    let t = Tables::with_cast().await;
    let table = t.table("chatroom:lab", "member", "lab data").await;
    t.column(&table, json!({"name": "label", "type": "string"}))
        .await;
    let (status, by_client) = t.insert(&table, "line1", json!({"label": "agent"})).await;
    assert_eq!(status, 201, "{by_client}");
    let record = format!("{table}/records/{}", by_client["id"].as_str().unwrap());
    let (_, detail) = t.call(Method::GET, &table, "member", None).await;
    assert_eq!(
        detail["settings"],
        json!({"agent_writes_via_commands_only": false})
    );

    let governed = json!({"settings": {"agent_writes_via_commands_only": true}});
    let (status, _) = t
        .call(Method::PATCH, &table, "line1", Some(governed.clone()))
        .await;
    assert_eq!(status, 403, "clients do not manage tables");
    let (status, detail) = t
        .call(Method::PATCH, &table, "member", Some(governed))
        .await;
    assert_eq!(status, 200, "{detail}");
    assert_eq!(
        detail["settings"],
        json!({"agent_writes_via_commands_only": true})
    );
    let unknown = json!({"settings": {"agent_writes_only": true}});
    let (status, _) = t.call(Method::PATCH, &table, "member", Some(unknown)).await;
    assert_eq!(status, 422, "unknown settings are refused");

    assert_code(
        &t.insert(&table, "line1", json!({"label": "again"})).await,
        403,
        "table_governed_by_commands",
    );
    assert_code(
        &t.call(
            Method::PUT,
            &record,
            "line1",
            Some(json!({"data": {"label": "x"}})),
        )
        .await,
        403,
        "table_governed_by_commands",
    );
    assert_code(
        &t.call(Method::DELETE, &record, "line1", None).await,
        403,
        "table_governed_by_commands",
    );
    let (status, _) = t.insert(&table, "member", json!({"label": "person"})).await;
    assert_eq!(status, 201, "people write as before");
    let (_, page) = t
        .call(Method::GET, &format!("{table}/records"), "member", None)
        .await;
    assert_eq!(page["total"], 2, "nothing refused was written: {page}");

    // A Command's write is not a raw one: the agent's caller-authority Command
    // writes as the agent.
    let table_id = table.rsplit('/').next().unwrap();
    let definition = json!({"table_id": table_id, "name": "label it", "kind": "write",
        "authority": "caller",
        "inputs": {"type": "object", "properties": {"label": {"type": "string"}}, "required": ["label"]},
        "write": {"op": "create", "values": {"label": "$input.label"}}});
    let commands = format!("{}/commands", t.mount("chatroom:lab"));
    let (status, defined) = t
        .call(Method::POST, &commands, "member", Some(definition))
        .await;
    assert_eq!(status, 201, "{defined}");
    let execute = format!("{commands}/{}/execute", defined["id"].as_str().unwrap());
    let body = json!({"inputs": {"label": "through the Command"}});
    let (status, executed) = t.call(Method::POST, &execute, "line1", Some(body)).await;
    assert_eq!(status, 200, "{executed}");
    assert_eq!(executed["op"], "created");
    let (_, kept) = t.call(Method::GET, &record, "member", None).await;
    assert_eq!(kept["data"]["label"], "agent");
}
