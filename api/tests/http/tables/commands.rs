//! Commands: defined and redefined by a table's moderators, executed and queried by
//! those who see the table, with inputs checked against their schema, the
//! author's or the caller's authority, idempotent creations and typed results.

use crate::support::{As, assert_code, assert_validation, json};
use crate::tables::fixture::Tables;
use reqwest::Method;
use serde_json::{Value, json};

const INPUTS: &str = r#"{"type": "object", "properties": {"name": {"type": "string"},
    "qty": {"type": "integer"}, "min": {"type": "integer"}}, "required": []}"#;

fn upsert(table_id: &str) -> Value {
    json!({"table_id": table_id, "name": "record a lead", "kind": "write",
           "authority": "definition",
           "inputs": serde_json::from_str::<Value>(INPUTS).unwrap(),
           "write": {"op": "upsert", "values": {"name": "$input.name", "qty": "$input.qty"},
                     "match": {"name": "$input.name"}}})
}

async fn execute(t: &Tables, command: &str, user: &str, key: &str, inputs: Value) -> (u16, Value) {
    let mut request = t
        .app
        .request(Method::POST, &format!("{command}/execute"))
        .bearer_token(&t.token(user))
        .json(&json!({"inputs": inputs}));
    if !key.is_empty() {
        request = request.header("idempotency-key", key);
    }
    json(request.send().await.unwrap()).await
}

#[tokio::test]
async fn commands_run_their_declared_effect_with_checked_inputs() {
    let t = Tables::new().await;
    let table = t.table("company", "boss", "leads").await;
    t.column(&table, json!({"name": "name", "type": "string"}))
        .await;
    t.column(&table, json!({"name": "qty", "type": "integer"}))
        .await;
    let table_id = table.rsplit('/').next().unwrap().to_string();
    // Members read the table and write nothing themselves.
    let readers = json!({"can_read": "all", "can_insert": false, "can_edit": "none"});
    let (status, _) = t
        .call(
            Method::PATCH,
            &format!("{table}/default-permissions"),
            "boss",
            Some(readers),
        )
        .await;
    assert_eq!(status, 200);
    let commands = format!("{}/commands", t.mount("company"));

    // Definitions: moderators only, every rule checked.
    let (status, _) = t
        .call(Method::POST, &commands, "member", Some(upsert(&table_id)))
        .await;
    assert_eq!(status, 403, "members do not define Commands");
    let mut bad = upsert(&table_id);
    bad["delivery_reconciliation_ttl_seconds"] = json!(59);
    assert_validation(
        &t.call(Method::POST, &commands, "boss", Some(bad)).await,
        "greater_than_equal",
        &["body", "delivery_reconciliation_ttl_seconds"],
    );
    let mut bad = upsert(&table_id);
    bad["write"]["values"]["qty"] = json!("$input.nope");
    let (status, body) = t.call(Method::POST, &commands, "boss", Some(bad)).await;
    assert_eq!(status, 422, "{body}");
    assert!(body.to_string().contains("$input.nope"), "{body}");
    let (status, defined) = t
        .call(Method::POST, &commands, "boss", Some(upsert(&table_id)))
        .await;
    assert_eq!(status, 201, "{defined}");
    assert_eq!(defined["version"], 1);
    assert_eq!(defined["authority"], "definition");
    assert_eq!(defined["delivery_reconciliation_ttl_seconds"], 900);
    let command = format!("{commands}/{}", defined["id"].as_str().unwrap());

    // A member runs it with the author's rights: created, then updated (upsert).
    let (status, created) =
        execute(&t, &command, "member", "", json!({"name": "ada", "qty": 2})).await;
    assert_eq!(status, 200, "{created}");
    assert_eq!(created["op"], "created");
    assert_eq!(created["replayed"], false);
    assert_eq!(
        created["values"],
        json!([{"column": "name", "key": created["values"][0]["key"], "value": "ada", "value_type": "string"},
               {"column": "qty", "key": created["values"][1]["key"], "value": 2, "value_type": "integer"}])
    );
    let record = format!("{table}/records/{}", created["record_id"].as_str().unwrap());
    let (_, stored) = t.call(Method::GET, &record, "boss", None).await;
    assert_eq!(
        stored["created_by"],
        format!("user:{}", t.user("boss")),
        "the author wrote it"
    );
    let (status, updated) =
        execute(&t, &command, "member", "", json!({"name": "ada", "qty": 5})).await;
    assert_eq!(status, 200, "{updated}");
    assert_eq!(
        (updated["op"].clone(), updated["record_id"].clone()),
        (json!("updated"), created["record_id"].clone())
    );
    // The answer names the cells the Command declares, not the rest of the
    // record the author reads.
    t.column(&table, json!({"name": "margin", "type": "integer"}))
        .await;
    let margin = json!({"data": {"margin": 40}});
    let (status, _) = t.call(Method::PUT, &record, "boss", Some(margin)).await;
    assert_eq!(status, 200);
    let (_, updated) = execute(&t, &command, "member", "", json!({"name": "ada", "qty": 6})).await;
    let columns: Vec<&str> = updated["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["column"].as_str().unwrap())
        .collect();
    assert_eq!(columns, ["name", "qty"], "{updated}");
    // Inputs outside the schema are refused and write nothing.
    assert_code(
        &execute(
            &t,
            &command,
            "member",
            "",
            json!({"name": "bob", "qty": "many"}),
        )
        .await,
        422,
        "input_schema_violation",
    );
    // An Idempotency-Key makes a creation happen once.
    let first = execute(
        &t,
        &command,
        "member",
        "k-1",
        json!({"name": "cy", "qty": 1}),
    )
    .await;
    let again = execute(
        &t,
        &command,
        "member",
        "k-1",
        json!({"name": "cy", "qty": 1}),
    )
    .await;
    assert_eq!((first.0, again.0), (200, 200), "{first:?} {again:?}");
    assert_eq!(again.1["record_id"], first.1["record_id"]);
    assert_eq!(
        (first.1["replayed"].clone(), again.1["replayed"].clone()),
        (json!(false), json!(true))
    );
    let (_, page) = t
        .call(Method::GET, &format!("{table}/records"), "boss", None)
        .await;
    assert_eq!(page["total"], 2, "ada and cy: {page}");

    // Two records the match finds: refused.
    t.insert(&table, "boss", json!({"name": "cy", "qty": 9}))
        .await;
    assert_code(
        &execute(&t, &command, "member", "", json!({"name": "cy", "qty": 3})).await,
        409,
        "command_match_ambiguous",
    );

    // A caller-authority Command runs with the caller's rights.
    let mut own = upsert(&table_id);
    own["authority"] = json!("caller");
    own["write"] = json!({"op": "create", "values": {"name": "$input.name"}});
    let (status, own) = t.call(Method::POST, &commands, "boss", Some(own)).await;
    assert_eq!(status, 201, "{own}");
    let own = format!("{commands}/{}", own["id"].as_str().unwrap());
    let (status, _) = execute(&t, &own, "member", "", json!({"name": "dan"})).await;
    assert_eq!(status, 403, "the member may not create records");
    let (status, _) = execute(&t, &own, "boss", "", json!({"name": "dan"})).await;
    assert_eq!(status, 200);

    // A query Command: typed predicates from inputs, sort, selected columns.
    let query = json!({"table_id": table_id, "name": "big leads", "kind": "query",
        "inputs": serde_json::from_str::<Value>(INPUTS).unwrap(),
        "query": {"filter": {"column": "qty", "op": "gte", "value": "$input.min"},
                  "sort": [{"column": "qty", "order": "desc"}], "columns": ["name", "qty"]}});
    let (status, query) = t.call(Method::POST, &commands, "boss", Some(query)).await;
    assert_eq!(status, 201, "{query}");
    let query = format!("{commands}/{}", query["id"].as_str().unwrap());
    let (status, found) = t
        .call(
            Method::POST,
            &format!("{query}/query"),
            "member",
            Some(json!({"inputs": {"min": 2}})),
        )
        .await;
    assert_eq!(status, 200, "{found}");
    assert_eq!(found["total"], 2);
    let names: Vec<&str> = found["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["data"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["cy", "ada"]);
    let (status, _) = t
        .call(
            Method::POST,
            &format!("{query}/execute"),
            "member",
            Some(json!({"inputs": {}})),
        )
        .await;
    assert_eq!(status, 422, "a query Command does not execute");
    let (status, _) = t
        .call(
            Method::POST,
            &format!("{command}/query"),
            "member",
            Some(json!({"inputs": {}})),
        )
        .await;
    assert_eq!(status, 422, "a write Command does not query");

    // Redefinition: the next version, by moderators, on the same table.
    let mut next = upsert(&table_id);
    next["name"] = json!("record a lead (v2)");
    let (status, _) = t
        .call(Method::PUT, &command, "member", Some(next.clone()))
        .await;
    assert_eq!(status, 403);
    let (status, redefined) = t
        .call(Method::PUT, &command, "boss", Some(next.clone()))
        .await;
    assert_eq!(status, 200, "{redefined}");
    assert_eq!(redefined["version"], 2);
    let (status, got) = t.call(Method::GET, &command, "member", None).await;
    assert_eq!(
        (status, got["name"].clone()),
        (200, json!("record a lead (v2)"))
    );
    next["table_id"] = json!(uuid::Uuid::new_v4());
    let (status, _) = t.call(Method::PUT, &command, "boss", Some(next)).await;
    assert_eq!(status, 422, "a Command stays on its table");

    // Another scope's mount or another company sees no Command.
    let elsewhere = format!(
        "{}/commands/{}",
        t.mount("chatroom:lab"),
        command.rsplit('/').next().unwrap()
    );
    assert_eq!(t.call(Method::GET, &elsewhere, "boss", None).await.0, 404);
    assert_eq!(t.call(Method::GET, &command, "ceo", None).await.0, 404);
}

#[tokio::test]
async fn command_writes_wait_for_the_table_s_approval_rules() {
    let t = Tables::new().await;
    let table = t.table("company", "boss", "payouts").await;
    t.column(&table, json!({"name": "name", "type": "string"}))
        .await;
    let table_id = table.rsplit('/').next().unwrap().to_string();
    let review = "/private/module/review";
    let group = json!({"name": "Finance", "member_ids": [t.user("member")]});
    let (status, group) = t
        .call(
            Method::POST,
            &format!("{review}/groups"),
            "boss",
            Some(group),
        )
        .await;
    assert_eq!(status, 201, "{group}");
    let gates = json!([{"name": "Finance", "condition":
        {"type": "group", "group_id": group["id"], "mode": "any"}}]);
    let template = json!({"name": "Payouts", "gates": gates, "require_signature": false});
    let (status, template) = t
        .call(
            Method::POST,
            &format!("{review}/templates"),
            "boss",
            Some(template),
        )
        .await;
    assert_eq!(status, 201, "{template}");
    let rules = json!({"rules": [{"id": "payouts", "label": "Payouts need finance",
        "type": "require_approval", "events": ["created"], "template_id": template["id"]}]});
    let (status, body) = t
        .call(Method::PUT, &format!("{table}/rules"), "boss", Some(rules))
        .await;
    assert_eq!(status, 200, "{body}");
    let commands = format!("{}/commands", t.mount("company"));
    let mut definition = upsert(&table_id);
    definition["write"] = json!({"op": "create", "values": {"name": "$input.name"}});
    let (status, command) = t
        .call(Method::POST, &commands, "boss", Some(definition))
        .await;
    assert_eq!(status, 201, "{command}");
    let command = format!("{commands}/{}", command["id"].as_str().unwrap());

    let (status, held) = execute(&t, &command, "member", "k1", json!({"name": "big"})).await;
    assert_eq!(status, 200, "{held}");
    assert_eq!(held["status"], "held_for_approval");
    assert_eq!(held["rule_label"], "Payouts need finance");
    assert_eq!(held["values"], json!([]));
    // A resend with the key answers the same hold; nothing more waits.
    let (status, again) = execute(&t, &command, "member", "k1", json!({"name": "big"})).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["staged_change_id"], held["staged_change_id"]);
    assert_eq!(again["replayed"], true);
    let (_, page) = t
        .call(Method::GET, &format!("{table}/records"), "boss", None)
        .await;
    assert_eq!(page["total"], 0, "nothing written before the approval");

    let process = held["process_id"].as_str().unwrap();
    let (status, decided) = t
        .call(
            Method::POST,
            &format!("{review}/processes/{process}/approve"),
            "member",
            Some(json!({})),
        )
        .await;
    assert_eq!(status, 200, "{decided}");
    let record = format!("{table}/records/{}", held["record_id"].as_str().unwrap());
    let (status, stored) = t.call(Method::GET, &record, "boss", None).await;
    assert_eq!(status, 200, "{stored}");
    assert_eq!(stored["data"]["name"], "big");
    assert_eq!(stored["created_by"], format!("user:{}", t.user("boss")));
}
