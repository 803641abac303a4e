//! Declarative deployment over HTTP (`{scope_mount}/tables/iac/export`, `plan`,
//! `apply`, `state`; docs/deployment.md): a scope built by REST exports as a
//! document that applies unchanged to itself and to an empty scope, only the
//! scope's managers deploy, the row schemas are published, and the system tag
//! marks the document's tables. Plans and refused applies: `deployment_plans.rs`.

use super::fixture::Tables;
use crate::support::{As, assert_code};
use reqwest::Method;
use serde_json::{Value, json};

/// Sends a document to `plan` or `apply` of a scope.
pub async fn deploy(
    t: &Tables,
    scope: &str,
    step: &str,
    user: &str,
    document: &str,
) -> (u16, Value) {
    let path = format!("{}/tables/iac/{step}?system=crm", t.mount(scope));
    let response = t
        .app
        .request(Method::POST, &path)
        .bearer_token(&t.token(user))
        .header("content-type", "application/x-ndjson")
        .body(document.to_string())
        .send()
        .await
        .unwrap();
    crate::support::json(response).await
}

/// The export of a scope as `user` (must answer 200).
pub async fn export(t: &Tables, scope: &str) -> String {
    let path = format!("{}/tables/iac/export?system=crm", t.mount(scope));
    let response = t
        .app
        .request(Method::GET, &path)
        .bearer_token(&t.token("boss"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "application/x-ndjson"
    );
    response.text().await.unwrap()
}

fn rows(document: &str) -> Vec<Value> {
    document
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Builds two company tables by REST: every kind of row a document holds.
async fn build(t: &Tables) -> (String, String) {
    let customers = t.table("company", "boss", "Customers").await;
    t.column(&customers, json!({"name": "Name", "type": "string"}))
        .await;
    let orders = t.table("company", "boss", "Orders").await;
    let status = t
        .column(
            &orders,
            json!({"name": "Status", "type": "select", "options": ["open", "done"]}),
        )
        .await;
    let amount = t
        .column(&orders, json!({"name": "Amount", "type": "integer"}))
        .await;
    let customers_id = customers.rsplit('/').next().unwrap();
    t.column(
        &orders,
        json!({"name": "Customer", "type": "link", "target_table_id": customers_id}),
    )
    .await;
    t.column(
        &orders,
        json!({"name": "Double", "type": "formula", "expression": "[Amount] * 2"}),
    )
    .await;
    let owner = t
        .column(
            &orders,
            json!({"name": "Owner", "type": "principal",
            "default_value": format!("user:{}", t.user("member"))}),
        )
        .await;
    let mine = json!({"name": "Mine", "filter": {"or": [
        {"column": owner, "op": "eq", "value": format!("user:{}", t.user("member"))},
        {"column": owner, "op": "in", "value": [format!("room:{}", t.seed.room("acme", "lab"))]}]}});
    let (s, body) = t
        .call(Method::POST, &format!("{orders}/views"), "boss", Some(mine))
        .await;
    assert_eq!(s, 201, "{body}");
    let view = json!({"name": "Open", "filter": {"column": status, "op": "eq", "value": "open"},
        "sort": [{"column": amount, "order": "desc"}]});
    let (s, body) = t
        .call(Method::POST, &format!("{orders}/views"), "boss", Some(view))
        .await;
    assert_eq!(s, 201, "{body}");
    let token = json!({"view_id": body["id"], "secretless": true, "name": "open board", "rpm": 30});
    let (s, minted) = t
        .call(
            Method::POST,
            &format!("{orders}/public-read-tokens"),
            "boss",
            Some(token),
        )
        .await;
    assert_eq!(s, 200, "{minted}");
    for (kind, id) in [
        ("user", t.user("member")),
        ("department", t.department("rnd")),
        ("chatroom", t.seed.room("acme", "lab")),
    ] {
        let grant = json!({"subject_type": kind, "subject_id": id, "can_read": "all", "can_insert": true, "can_edit": "own"});
        let (s, body) = t
            .call(
                Method::POST,
                &format!("{orders}/permissions"),
                "boss",
                Some(grant),
            )
            .await;
        assert_eq!(s, 200, "{body}");
    }
    let triggers = json!({"triggers": [{"id": "bump", "name": "Bump", "on": "created",
        "actions": [{"type": "update_record", "values": {amount.clone(): 1}}]}]});
    let (s, body) = t
        .call(
            Method::PUT,
            &format!("{orders}/triggers"),
            "boss",
            Some(triggers),
        )
        .await;
    assert_eq!(s, 200, "{body}");
    let orders_id = orders.rsplit('/').next().unwrap();
    let command = json!({"table_id": orders_id, "name": "open orders", "kind": "query",
        "inputs": {"type": "object", "properties": {}},
        "query": {"filter": {"column": status, "op": "eq", "value": "open"}}});
    let (s, body) = t
        .call(
            Method::POST,
            &format!("{}/commands", t.mount("company")),
            "boss",
            Some(command),
        )
        .await;
    assert_eq!(s, 201, "{body}");
    let (s, _) = t
        .call(
            Method::PATCH,
            &format!("{orders}/client-access"),
            "boss",
            Some(json!({"enabled": false})),
        )
        .await;
    assert_eq!(s, 200);
    (customers, orders)
}

#[tokio::test]
async fn an_exported_scope_applies_unchanged_to_itself_and_to_an_empty_scope() {
    let t = Tables::new().await;
    build(&t).await;
    let document = export(&t, "company").await;
    let lines = rows(&document);
    let kinds: Vec<&str> = lines.iter().map(|r| r["kind"].as_str().unwrap()).collect();
    for kind in [
        "table",
        "column",
        "view",
        "grant",
        "trigger",
        "command",
        "public_read_token",
        "client_access",
    ] {
        assert!(kinds.contains(&kind), "{kind} in {document}");
    }
    assert!(lines.iter().all(|r| r["system"] == "crm"));
    let subjects: Vec<&str> = lines
        .iter()
        .filter(|r| r["kind"] == "grant")
        .map(|r| r["subject"].as_str().unwrap())
        .collect();
    assert_eq!(subjects, ["$user:member", "$dept:R&D", "$room:lab"]);
    let column = |name: &str| {
        lines
            .iter()
            .find(|r| r["kind"] == "column" && r["name"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(column("Owner")["default_value"], "$user:member");
    let mine = lines
        .iter()
        .find(|r| r["kind"] == "view" && r["name"] == "Mine")
        .unwrap();
    assert_eq!(mine["filter"]["or"][0]["value"], "$user:member", "{mine}");
    assert_eq!(mine["filter"]["or"][1]["value"], json!(["$room:lab"]));
    assert_eq!(column("Customer")["target_table"], "$table:customers");
    assert_eq!(column("Double")["expression"], "[Amount] * 2");
    assert_eq!(lines[0]["ref"], "customers");

    // The same scope: nothing changes; applying records what the system manages.
    let (s, plan) = deploy(&t, "company", "plan", "boss", &document).await;
    assert_eq!(s, 200, "{plan}");
    assert_eq!(plan["changes"], json!([]), "{plan}");
    assert_eq!(plan["errors"], json!([]));
    let (s, applied) = deploy(&t, "company", "apply", "boss", &document).await;
    assert_eq!(s, 200, "{applied}");
    assert_eq!(applied["changes"], json!([]));
    assert_eq!(applied["state"]["total"], lines.len());
    let (s, state) = t
        .call(
            Method::GET,
            &format!("{}/tables/iac/state?system=crm", t.mount("company")),
            "boss",
            None,
        )
        .await;
    assert_eq!(s, 200);
    assert_eq!(state["total"], lines.len());
    let table_row = state["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["ref"] == "orders")
        .unwrap();
    assert_eq!(table_row["resource_type"], "table");
    assert_eq!(table_row["system"], "crm");
    assert_eq!(table_row["resource_id"], table_row["table_id"]);

    // An empty scope: everything is created, and it exports as the same document.
    let (s, applied) = deploy(&t, "department:rnd", "apply", "boss", &document).await;
    assert_eq!(s, 200, "{applied}");
    assert_eq!(
        applied["summary"]["create"].as_u64().unwrap() as usize,
        lines.len() - 2
    );
    assert_eq!(export(&t, "department:rnd").await, document);
    let (s, plan) = deploy(&t, "department:rnd", "plan", "boss", &document).await;
    assert_eq!(s, 200);
    assert_eq!(plan["changes"], json!([]), "{plan}");
    let before = t.app.event_count().await;
    let (s, applied) = deploy(&t, "department:rnd", "apply", "boss", &document).await;
    assert_eq!(s, 200);
    assert_eq!(applied["changes"], json!([]));
    assert_eq!(
        t.app.event_count().await,
        before,
        "a second apply writes nothing"
    );

    // The deployed tables work: the link and the grants resolve in the new scope.
    let (s, listed) = t
        .call(
            Method::GET,
            &format!("{}/tables", t.mount("department:rnd")),
            "member",
            None,
        )
        .await;
    assert_eq!(s, 200, "{listed}");
}

/// Rows as a document.
pub fn lines(rows: &[Value]) -> String {
    rows.iter().map(|r| format!("{r}\n")).collect()
}

#[tokio::test]
async fn only_the_scope_managers_deploy() {
    let t = Tables::new().await;
    let document = lines(&[json!({"kind": "table", "ref": "x", "system": "crm", "name": "X"})]);
    for (scope, user, status) in [
        ("company", "member", 403),
        ("company", "dm", 403),
        ("department:rnd", "member", 403),
        ("department:rnd", "outsider", 404),
        ("department:rnd", "ceo", 404),
        ("chatroom:lab", "member", 403),
        ("chatroom:lab", "outsider", 404),
    ] {
        for step in ["plan", "apply"] {
            let (s, body) = deploy(&t, scope, step, user, &document).await;
            assert_eq!(s, status, "{user} {step} in {scope}: {body}");
        }
        let (s, _) = t
            .call(
                Method::GET,
                &format!("{}/tables/iac/state?system=crm", t.mount(scope)),
                user,
                None,
            )
            .await;
        assert_eq!(s, status, "{user} state in {scope}");
        let (s, _) = t
            .call(
                Method::GET,
                &format!("{}/tables/iac/export?system=crm", t.mount(scope)),
                user,
                None,
            )
            .await;
        assert_eq!(s, status, "{user} export in {scope}");
    }
    let (s, body) = deploy(&t, "department:rnd", "apply", "dm", &document).await;
    assert_eq!(s, 200, "{body}");
    let (s, body) = deploy(&t, "chatroom:lab", "plan", "dm", &document).await;
    assert_eq!(s, 200, "{body}");
    let got = t
        .call(
            Method::GET,
            &format!("{}/tables/iac/state?system=Bad%20Name", t.mount("company")),
            "boss",
            None,
        )
        .await;
    assert_code(&got, 422, "deployment_plan_invalid");
    let (s, _) = t
        .call(
            Method::GET,
            &format!("{}/tables/iac/state", t.mount("company")),
            "boss",
            None,
        )
        .await;
    assert_eq!(s, 422);
}

/// The published JSON Schema of a document row: `docs/deployment-rows.schema.json`,
/// cut from the OpenAPI document (`DEPLOYMENT_SCHEMA_BLESS=1` rewrites it).
#[tokio::test]
async fn the_row_schemas_are_published_and_every_exported_row_follows_them() {
    let t = Tables::new().await;
    build(&t).await;
    let (s, openapi) = t.call(Method::GET, "/openapi.json", "boss", None).await;
    assert_eq!(s, 200);
    let schemas = &openapi["components"]["schemas"];
    let mut defs = serde_json::Map::new();
    collect(schemas, "DeploymentRow", &mut defs);
    for kind in [
        "DeploymentTable",
        "DeploymentColumn",
        "DeploymentView",
        "DeploymentGrant",
        "DeploymentTrigger",
        "DeploymentApprovalRule",
        "DeploymentClientAccess",
    ] {
        assert!(defs.contains_key(kind), "{kind} is published");
    }
    let text = serde_json::to_string(&json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "A row of a declarative deployment document (docs/deployment.md)",
        "$ref": "#/$defs/DeploymentRow",
        "$defs": defs,
    }))
    .unwrap()
    .replace("#/components/schemas/", "#/$defs/");
    let published: Value = serde_json::from_str(&text).unwrap();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../docs/deployment-rows.schema.json");
    let pretty = serde_json::to_string_pretty(&published).unwrap() + "\n";
    if std::env::var_os("DEPLOYMENT_SCHEMA_BLESS").is_some() {
        std::fs::write(&path, &pretty).unwrap();
    }
    assert_eq!(
        std::fs::read_to_string(&path).unwrap_or_default(),
        pretty,
        "docs/deployment-rows.schema.json is the OpenAPI document's (DEPLOYMENT_SCHEMA_BLESS=1 rewrites it)"
    );
    let validator = jsonschema::draft202012::new(&published).unwrap();
    for row in rows(&export(&t, "company").await) {
        let problems: Vec<String> = validator.iter_errors(&row).map(|e| e.to_string()).collect();
        assert!(problems.is_empty(), "{row}: {problems:?}");
    }
    assert!(!validator.is_valid(&json!({"kind": "table", "ref": "x", "system": "crm"})));
    assert!(
        !validator.is_valid(
            &json!({"kind": "table", "ref": "x", "system": "crm", "name": "X", "extra": 1})
        )
    );
    assert!(
        validator.is_valid(&json!({"kind": "table", "ref": "x", "system": "crm", "name": "X"}))
    );
}

/// A schema and every schema it references, by name.
fn collect(schemas: &Value, name: &str, into: &mut serde_json::Map<String, Value>) {
    if into.contains_key(name) {
        return;
    }
    let schema = schemas[name].clone();
    into.insert(name.to_string(), schema.clone());
    let text = schema.to_string();
    for part in text.split("#/components/schemas/").skip(1) {
        let referenced: String = part.chars().take_while(|c| *c != '"').collect();
        collect(schemas, &referenced, into);
    }
}

#[tokio::test]
async fn the_system_tag_marks_exactly_the_documents_tables() {
    let t = Tables::new().await;
    let tag = json!({"kind": "system_tag", "ref": "crm-tag", "system": "crm", "name": "CRM", "description": null, "color": "#112233"});
    let a = json!({"kind": "table", "ref": "a", "system": "crm", "name": "A"});
    let b = json!({"kind": "table", "ref": "b", "system": "crm", "name": "B"});
    let (s, applied) = deploy(
        &t,
        "company",
        "apply",
        "boss",
        &lines(&[tag.clone(), a.clone(), b.clone()]),
    )
    .await;
    assert_eq!(s, 200, "{applied}");
    let tags = format!("{}/table-tags", t.mount("company"));
    let (_, listed) = t.call(Method::GET, &tags, "boss", None).await;
    assert_eq!(listed["total"], 1, "{listed}");
    assert_eq!(listed["tags"][0]["system"], "crm");
    assert_eq!(listed["tags"][0]["name"], "CRM");
    assert_eq!(listed["tags"][0]["table_ids"].as_array().unwrap().len(), 2);
    let document = export(&t, "company").await;
    assert_eq!(rows(&document)[0], tag, "the system tag leads the export");

    // Another tag of the same name is a plan error; a table left out loses the tag.
    let (s, _) = t
        .call(Method::POST, &tags, "boss", Some(json!({"name": "Other"})))
        .await;
    assert_eq!(s, 201);
    let renamed = json!({"kind": "system_tag", "ref": "crm-tag", "system": "crm", "name": "Other"});
    let (s, plan) = deploy(
        &t,
        "company",
        "plan",
        "boss",
        &lines(&[renamed, a.clone(), b.clone()]),
    )
    .await;
    assert_eq!(s, 200);
    assert!(
        plan["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("another tag named"),
        "{plan}"
    );
    let (s, applied) = deploy(
        &t,
        "company",
        "apply",
        "boss",
        &lines(&[tag.clone(), a.clone()]),
    )
    .await;
    assert_eq!(s, 200, "{applied}");
    let (_, listed) = t.call(Method::GET, &tags, "boss", None).await;
    let carried = listed["tags"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["system"] == "crm")
        .unwrap()["table_ids"]
        .clone();
    assert_eq!(carried.as_array().unwrap().len(), 1, "{listed}");

    // The same document in an empty scope makes its own system tag.
    let (s, applied) = deploy(
        &t,
        "department:rnd",
        "apply",
        "boss",
        &lines(&[tag.clone(), a]),
    )
    .await;
    assert_eq!(s, 200, "{applied}");
    assert_eq!(
        export(&t, "department:rnd").await,
        export(&t, "company").await
    );
}
