//! Plans and refused applies of a deployment over HTTP (docs/deployment.md): a
//! plan lists its changes with the data they drop and writes nothing, errors stop
//! an apply before anything is written, and a failed apply leaves the log and the
//! read models unchanged.

use super::deployment::{deploy, lines};
use super::fixture::Tables;
use crate::support::assert_code;
use reqwest::Method;
use serde_json::{Value, json};

#[tokio::test]
async fn a_plan_lists_changes_with_the_data_they_drop_and_writes_nothing() {
    let t = Tables::new().await;
    let first = [
        json!({"kind": "table", "ref": "notes", "system": "crm", "name": "Notes"}),
        json!({"kind": "column", "ref": "notes.title", "system": "crm", "table": "notes", "key": "col_a1", "name": "Title", "type": "string"}),
        json!({"kind": "column", "ref": "notes.size", "system": "crm", "table": "notes", "key": "col_a2", "name": "Size", "type": "string"}),
        json!({"kind": "column", "ref": "notes.body", "system": "crm", "table": "notes", "key": "col_a3", "name": "Body", "type": "text"}),
    ];
    let document = lines(&first);
    let (s, applied) = deploy(&t, "company", "apply", "boss", &document).await;
    assert_eq!(s, 200, "{applied}");
    let table_id = applied["state"]["rows"].as_array().unwrap()[0]["table_id"]
        .as_str()
        .unwrap()
        .to_string();
    let table = format!("{}/tables/{table_id}", t.mount("company"));
    for n in ["1", "2", "x"] {
        t.record(&table, json!({"Title": "t", "Size": n, "Body": "b"}))
            .await;
    }
    let second = [
        json!({"kind": "table", "ref": "notes", "system": "crm", "name": "Notebook"}),
        json!({"kind": "column", "ref": "notes.title", "system": "crm", "table": "notes", "key": "col_a1", "name": "Headline", "type": "string"}),
        json!({"kind": "column", "ref": "notes.size", "system": "crm", "table": "notes", "key": "col_a2", "name": "Size", "type": "integer"}),
        json!({"kind": "column", "ref": "notes.done", "system": "crm", "table": "notes", "key": "col_a4", "name": "Done", "type": "boolean"}),
    ];
    let document = lines(&second);
    let before = t.app.event_count().await;
    let (s, plan) = deploy(&t, "company", "plan", "boss", &document).await;
    assert_eq!(s, 200, "{plan}");
    assert_eq!(plan["errors"], json!([]));
    assert_eq!(t.app.event_count().await, before, "a plan writes nothing");
    let changes = plan["changes"].as_array().unwrap();
    let find = |reference: &str| {
        changes
            .iter()
            .find(|c| c["ref"] == reference)
            .unwrap_or_else(|| panic!("{reference}: {plan}"))
    };
    assert_eq!(find("notes")["action"], "update");
    assert_eq!(find("notes")["fields"], json!(["name"]));
    assert_eq!(find("notes.body")["action"], "delete");
    assert_eq!(find("notes.body")["loses"]["records"], 3);
    assert_eq!(find("notes.size")["action"], "update");
    assert_eq!(find("notes.size")["fields"], json!(["type"]));
    assert_eq!(find("notes.size")["loses"]["records"], 3);
    assert_eq!(find("notes.title")["fields"], json!(["name"]));
    assert!(find("notes.title")["loses"].is_null());
    assert_eq!(find("notes.done")["action"], "create");
    assert_eq!(
        plan["summary"],
        json!({"create": 1, "update": 3, "replace": 0, "delete": 1})
    );
    let order: Vec<&str> = changes.iter().map(|c| c["ref"].as_str().unwrap()).collect();
    assert!(
        order.iter().position(|r| *r == "notes.body")
            < order.iter().position(|r| *r == "notes.done")
    );

    let (s, applied) = deploy(&t, "company", "apply", "boss", &document).await;
    assert_eq!(s, 200, "{applied}");
    let (_, columns) = t
        .call(Method::GET, &format!("{table}/columns"), "boss", None)
        .await;
    let names: Vec<&str> = columns
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Headline", "Size", "Done"]);
    let page = t.records(&table, "boss").await;
    let sizes: Vec<Value> = page["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["data"]["Size"].clone())
        .collect();
    assert!(
        sizes.contains(&json!(1)) && sizes.contains(&json!(2)) && sizes.contains(&Value::Null),
        "{page}"
    );

    // Replacing a column drops its cells; deleting the table drops its records.
    let third = [json!({"kind": "table", "ref": "other", "system": "crm", "name": "Other"})];
    let (s, plan) = deploy(&t, "company", "plan", "boss", &lines(&third)).await;
    assert_eq!(s, 200);
    let gone = plan["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["ref"] == "notes")
        .unwrap()
        .clone();
    assert_eq!(gone["action"], "delete");
    assert_eq!(gone["loses"]["records"], 3);
}

/// A digest of every custom-table read model and physical table.
async fn read_models(t: &Tables) -> Vec<(String, String)> {
    let pool = &t.app.db.pool;
    let mut names: Vec<String> = sqlx::query_scalar(
        "SELECT table_name::text FROM information_schema.tables
          WHERE table_schema = 'public' AND (table_name LIKE 'custom\\_table%' OR table_name LIKE 'ct\\_%')",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    names.sort();
    let mut out = Vec::new();
    for name in names {
        let digest: String = sqlx::query_scalar(&format!(
            "SELECT md5(coalesce(string_agg(t::text, ',' ORDER BY t::text), '')) FROM {name} t"
        ))
        .fetch_one(pool)
        .await
        .unwrap();
        out.push((name, digest));
    }
    out
}

#[tokio::test]
async fn plan_errors_stop_the_apply_and_nothing_is_written() {
    let t = Tables::new().await;
    let existing = t.table("company", "boss", "Kept").await;
    let document = [
        r#"{"kind": "table", "ref": "a", "system": "crm", "name": "A"}"#.to_string(),
        "not json".to_string(),
        r#"{"kind": "table", "ref": "a", "system": "crm", "name": "Twice"}"#.to_string(),
        r#"{"kind": "column", "ref": "a.who", "system": "crm", "table": "a", "key": "col_b1", "name": "Who", "type": "principal", "default_value": "$dept:R&D"}"#.to_string(),
        r#"{"kind": "column", "ref": "a.nobody", "system": "crm", "table": "a", "key": "col_b2", "name": "Nobody", "type": "principal", "default_value": "$user:nobody"}"#.to_string(),
        r#"{"kind": "column", "ref": "a.orphan", "system": "crm", "table": "missing", "key": "col_b3", "name": "X", "type": "string"}"#.to_string(),
        r#"{"kind": "column", "ref": "a.link", "system": "crm", "table": "a", "key": "col_b4", "name": "L", "type": "link", "target_table": "$table:elsewhere"}"#.to_string(),
        r#"{"kind": "grant", "ref": "a.g", "system": "crm", "table": "a", "subject": "$user:ghost", "can_read": "all", "can_insert": false, "can_edit": "none"}"#.to_string(),
        r#"{"kind": "trigger", "ref": "a.t", "system": "crm", "table": "a", "id": "t", "name": "T", "on": "created", "actions": [{"type": "create_record", "table_id": "$table:a", "values": {}}]}"#.to_string(),
        format!(r#"{{"kind": "approval_rule", "ref": "a.r", "system": "crm", "table": "a", "id": "r", "label": "R", "type": "require_approval", "events": ["created"], "template_id": "{}"}}"#, uuid::Uuid::new_v4()),
        r#"{"kind": "table", "ref": "b", "system": "other", "name": "B"}"#.to_string(),
        r#"{"kind": "column", "ref": "a.bad", "system": "crm", "table": "a", "key": "col_b5", "name": "Bad", "type": "select", "options": []}"#.to_string(),
        format!(r#"{{"kind": "command", "ref": "a.c", "system": "crm", "table": "a", "name": "C", "command_kind": "query", "inputs": {{"type": "object"}}, "authority": "caller", "tag_id": "{}", "query": {{}}}}"#, uuid::Uuid::new_v4()),
        r#"{"kind": "public_read_token", "ref": "a.tok", "system": "crm", "table": "a", "view": "a.nope"}"#.to_string(),
    ]
    .join("\n");
    let before = t.app.event_count().await;
    let models = read_models(&t).await;
    let (s, plan) = deploy(&t, "company", "plan", "boss", &document).await;
    assert_eq!(s, 200, "{plan}");
    let errors = plan["errors"].as_array().unwrap();
    let at = |line: u64| {
        errors
            .iter()
            .find(|e| e["line"] == line)
            .unwrap_or_else(|| panic!("line {line}: {plan}"))["message"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(at(2).contains("not JSON"));
    assert!(at(3).contains("twice"));
    assert!(at(4).contains("$dept: names grants only"));
    assert!(at(5).contains("names no user"));
    assert!(at(6).contains("not a table row"));
    assert!(at(7).contains("names no table of this document"));
    assert!(at(8).contains("names no user"));
    assert!(at(9).contains("only materialize_slots"));
    assert!(at(10).contains("review template"));
    assert!(at(11).contains("system 'other'"));
    assert!(!at(12).is_empty());
    assert!(at(13).contains("not a table tag of this scope"));
    assert!(at(14).contains("is not a view row of this table"));

    let got = deploy(&t, "company", "apply", "boss", &document).await;
    let detail = assert_code(&got, 422, "deployment_plan_invalid");
    assert_eq!(detail["errors"].as_array().unwrap().len(), errors.len());
    assert_eq!(t.app.event_count().await, before);
    assert_eq!(
        read_models(&t).await,
        models,
        "the read models are unchanged"
    );
    let (s, _) = t.call(Method::GET, &existing, "boss", None).await;
    assert_eq!(s, 200);
}

#[tokio::test]
async fn a_failed_apply_leaves_the_log_and_the_read_models_unchanged() {
    let t = Tables::new().await;
    // Two tables are fine; the third one's computed column reads a column that
    // does not exist, which only the Table aggregate finds, after the others.
    let document = lines(&[
        json!({"kind": "table", "ref": "one", "system": "crm", "name": "One"}),
        json!({"kind": "column", "ref": "one.n", "system": "crm", "table": "one", "key": "col_c1", "name": "N", "type": "integer"}),
        json!({"kind": "table", "ref": "two", "system": "crm", "name": "Two"}),
        json!({"kind": "column", "ref": "two.n", "system": "crm", "table": "two", "key": "col_c2", "name": "N", "type": "integer"}),
        json!({"kind": "table", "ref": "three", "system": "crm", "name": "Three"}),
        json!({"kind": "column", "ref": "three.f", "system": "crm", "table": "three", "key": "col_c3", "name": "F", "type": "formula", "expression": "[Missing] + 1"}),
    ]);
    let before = t.app.event_count().await;
    let models = read_models(&t).await;
    let got = deploy(&t, "company", "apply", "boss", &document).await;
    let detail = assert_code(&got, 422, "deployment_plan_invalid");
    assert_eq!(detail["errors"][0]["ref"], "three.f", "{detail}");
    assert_eq!(detail["changes"].as_array().unwrap().len(), 5, "{detail}");
    assert_eq!(t.app.event_count().await, before);
    assert_eq!(read_models(&t).await, models);
    let (_, listed) = t
        .call(
            Method::GET,
            &format!("{}/tables", t.mount("company")),
            "boss",
            None,
        )
        .await;
    assert_eq!(listed["total"], 0, "{listed}");
}

#[tokio::test]
async fn a_document_above_one_mebibyte_is_refused_unread() {
    let t = Tables::new().await;
    let row = json!({"kind": "table", "ref": "x", "system": "crm", "name": "X"}).to_string();
    let mut document = String::new();
    while document.len() <= 1024 * 1024 {
        document.push_str(&row);
        document.push('\n');
    }
    let before = t.app.event_count().await;
    for step in ["plan", "apply"] {
        let got = deploy(&t, "company", step, "boss", &document).await;
        assert_code(&got, 413, "request_too_large");
    }
    assert_eq!(t.app.event_count().await, before);
}

#[tokio::test]
async fn a_token_on_a_table_the_document_governs_is_a_plan_error() {
    let t = Tables::new().await;
    let document = [
        r#"{"kind": "table", "ref": "g", "system": "crm", "name": "G", "channel_scope_column": "col_a1"}"#,
        r#"{"kind": "column", "ref": "g.region", "system": "crm", "table": "g", "key": "col_a1", "name": "Region", "type": "string"}"#,
        r#"{"kind": "view", "ref": "g.all", "system": "crm", "table": "g", "name": "All"}"#,
        r#"{"kind": "public_read_token", "ref": "g.tok", "system": "crm", "table": "g", "view": "g.all"}"#,
    ]
    .join("\n");
    let (s, plan) = deploy(&t, "department:rnd", "plan", "boss", &document).await;
    assert_eq!(s, 200, "{plan}");
    let errors = plan["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{plan}");
    assert_eq!(errors[0]["line"], 4, "{plan}");
    assert!(
        errors[0]["message"]
            .as_str()
            .unwrap()
            .contains("scoped channel policy"),
        "{plan}"
    );
}
