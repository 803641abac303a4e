//! ColumnCreate rules, the column routes and their error rows (spec sections 2, 4,
//! 7 and 8).

use super::fixture::{Tables, code};
use crate::support::assert_validation;
use reqwest::Method;
use serde_json::{Value, json};

async fn refused(t: &Tables, table: &str, column: Value, expected_code: &str) {
    let got = t.add_column(table, "boss", column.clone()).await;
    assert_eq!(got.0, 400, "{column} was accepted: {}", got.1);
    assert_eq!(code(&got), expected_code, "{column}: {}", got.1);
}

#[tokio::test]
async fn column_create_rules() {
    let t = Tables::new().await;
    let table = t.table("company", "boss", "rules").await;
    let invalid = "column_config_invalid";
    refused(
        &t,
        &table,
        json!({"name": "f", "type": "formula", "required": true}),
        invalid,
    )
    .await;
    refused(
        &t,
        &table,
        json!({"name": "f", "type": "formula", "default_value": 1}),
        invalid,
    )
    .await;
    refused(
        &t,
        &table,
        json!({"name": "l", "type": "link", "required": false}),
        invalid,
    )
    .await;
    refused(
        &t,
        &table,
        json!({"name": "f", "type": "formula", "expression": "1 +"}),
        invalid,
    )
    .await;
    refused(
        &t,
        &table,
        json!({"name": "r", "type": "rollup", "aggregation": "count"}),
        invalid,
    )
    .await;
    refused(
        &t,
        &table,
        json!({"name": "x", "type": "integer", "max_length": 5}),
        invalid,
    )
    .await;
    refused(
        &t,
        &table,
        json!({"name": "x", "type": "string", "max_length": 0}),
        invalid,
    )
    .await;
    refused(
        &t,
        &table,
        json!({"name": "x", "type": "string", "options": ["a"]}),
        invalid,
    )
    .await;
    refused(&t, &table, json!({"name": "x", "type": "select"}), invalid).await;
    refused(
        &t,
        &table,
        json!({"name": "x", "type": "select", "options": []}),
        invalid,
    )
    .await;
    let fifty_one: Vec<String> = (0..51).map(|i| format!("o{i}")).collect();
    refused(
        &t,
        &table,
        json!({"name": "x", "type": "multi_select", "options": fifty_one}),
        invalid,
    )
    .await;
    refused(
        &t,
        &table,
        json!({"name": "x", "type": "select", "options": ["a", "a"]}),
        invalid,
    )
    .await;
    refused(
        &t,
        &table,
        json!({"name": "x", "type": "select", "options": ["x".repeat(65)]}),
        invalid,
    )
    .await;
    refused(
        &t,
        &table,
        json!({"name": "x", "type": "select", "options": [""]}),
        invalid,
    )
    .await;
    refused(
        &t,
        &table,
        json!({"name": "x", "type": "string", "max_count": 1}),
        invalid,
    )
    .await;
    refused(
        &t,
        &table,
        json!({"name": "x", "type": "attachment", "max_file_bytes": 5_368_709_121i64}),
        invalid,
    )
    .await;
    refused(
        &t,
        &table,
        json!({"name": "x", "type": "string", "target_table_id": uuid::Uuid::new_v4()}),
        invalid,
    )
    .await;
    refused(&t, &table, json!({"name": "x", "type": "link"}), invalid).await;
    refused(
        &t,
        &table,
        json!({"name": "x", "type": "integer", "default_value": "seven"}),
        invalid,
    )
    .await;
    refused(
        &t,
        &table,
        json!({"name": "x", "type": "select", "options": ["a"], "default_value": "b"}),
        invalid,
    )
    .await;
    refused(
        &t,
        &table,
        json!({"name": "created_at", "type": "string"}),
        "column_name_reserved",
    )
    .await;
    refused(
        &t,
        &table,
        json!({"name": "col_abc", "type": "string"}),
        "column_name_reserved",
    )
    .await;
    refused(&t, &table, json!({"name": " ", "type": "string"}), invalid).await;
    t.column(&table, json!({"name": "Größe 大きさ", "type": "float"}))
        .await;
    refused(
        &t,
        &table,
        json!({"name": "größe 大きさ", "type": "text"}),
        "column_name_taken",
    )
    .await;
    t.column(&table, json!({"name": "max", "type": "attachment", "max_file_bytes": 5_368_709_120i64, "max_count": 1})).await;
    let got = t
        .add_column(&table, "boss", json!({"name": "x", "type": "currency"}))
        .await;
    assert_eq!(got.0, 422, "unknown type: {}", got.1);
    let got = t
        .add_column(
            &table,
            "boss",
            json!({"name": "x", "type": "string", "colour": "red"}),
        )
        .await;
    assert_validation(&got, "extra_forbidden", &["body", "colour"]);
}

#[tokio::test]
async fn link_targets_follow_the_scope_ladder() {
    let t = Tables::new().await;
    let table_id = |path: &str| path.rsplit('/').next().unwrap().to_string();
    let lab = t.table("chatroom:lab", "dm", "lab").await;
    let ops_room = t.table("chatroom:ops-room", "boss", "ops room").await;
    let rnd = t.table("department:rnd", "dm", "rnd").await;
    let ops = t.table("department:ops", "boss", "ops").await;
    let company = t.table("company", "boss", "company").await;
    let globex = t.table_as_ceo().await;
    let rows = [
        (&lab, &lab, true),
        (&lab, &rnd, true),
        (&lab, &company, true),
        (&lab, &ops_room, false),
        (&lab, &ops, false),
        (&rnd, &rnd, true),
        (&rnd, &company, true),
        (&rnd, &lab, false),
        (&rnd, &ops, false),
        (&company, &company, true),
        (&company, &rnd, false),
        (&company, &lab, false),
        (&company, &globex, false),
    ];
    for (source, target, allowed) in rows {
        let column = json!({"name": format!("to {}", table_id(target)), "type": "link", "target_table_id": table_id(target)});
        let got = t.add_column(source, "boss", column).await;
        let expected = if allowed { 200 } else { 400 };
        assert_eq!(got.0, expected, "{source} -> {target}: {}", got.1);
    }
}

#[tokio::test]
async fn defaults_fill_existing_rows_and_required_needs_one() {
    let t = Tables::new().await;
    let table = t.table("company", "boss", "fill").await;
    t.record(&table, json!({})).await;
    t.record(&table, json!({})).await;
    let got = t
        .add_column(
            &table,
            "boss",
            json!({"name": "must", "type": "integer", "required": true}),
        )
        .await;
    assert_eq!(got.0, 400, "{}", got.1);
    assert_eq!(code(&got), "column_default_required");
    let (status, body) = t
        .add_column(
            &table,
            "boss",
            json!({"name": "must", "type": "integer", "required": true, "default_value": 7}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let info = &body["migration_info"];
    assert_eq!(info["background_migration"], false);
    assert_eq!(info["records_migrated"], 2);
    assert_eq!(info["default_value_applied"], true);
    assert!(info["migration_id"].is_string());
    let (_, found) = t
        .search(
            &table,
            json!({"filter": {"column": "must", "op": "eq", "value": 7}}),
        )
        .await;
    assert_eq!(found["total"], 2);
    let (status, body) = t
        .add_column(&table, "boss", json!({"name": "free", "type": "string"}))
        .await;
    assert_eq!(status, 200);
    assert_eq!(body["migration_info"]["records_migrated"], 0);
    assert!(body["migration_info"]["migration_id"].is_null());
    let got = t.insert(&table, "boss", json!({"must": null})).await;
    assert_eq!(got.0, 400, "required: {}", got.1);
    let record = t.record(&table, json!({"free": "x"})).await;
    assert_eq!(record["data"]["must"], 7, "new records get the default");
}

#[tokio::test]
async fn preview_validates_samples_and_writes_nothing() {
    let t = Tables::new().await;
    let target = t.table("company", "boss", "target").await;
    let table = t.table("company", "boss", "preview").await;
    for _ in 0..6 {
        t.record(&table, json!({})).await;
    }
    let before = t.app.event_count().await;
    let preview = format!("{table}/columns/preview");
    let (status, body) = t
        .call(
            Method::POST,
            &preview,
            "boss",
            Some(json!({"name": "score", "type": "integer", "default_value": 3})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["valid"], true);
    assert_eq!(body["normalized"]["type"], "integer");
    assert_eq!(
        body["sample"].as_array().unwrap().len(),
        5,
        "first 5 records"
    );
    assert_eq!(body["sample"][0]["value"], 3);
    let (_, body) = t
        .call(Method::POST, &preview, "boss", Some(json!({"name": "to", "type": "link", "target_table_id": target.rsplit('/').next().unwrap()})))
        .await;
    assert_eq!(body["normalized"]["target_table"]["name"], "target");
    assert_eq!(body["normalized"]["cardinality"], "many");
    let (status, body) = t
        .call(
            Method::POST,
            &preview,
            "boss",
            Some(json!({"name": "x", "type": "select", "options": []})),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(body["valid"], false);
    assert_eq!(body["errors"][0]["code"], "column_config_invalid");
    let (_, body) = t
        .call(
            Method::POST,
            &preview,
            "boss",
            Some(json!({"name": "must", "type": "date", "required": true})),
        )
        .await;
    assert_eq!(body["valid"], false);
    assert!(body["hint"].is_string());
    let got = t
        .call(
            Method::POST,
            &preview,
            "member",
            Some(json!({"name": "x", "type": "date"})),
        )
        .await;
    assert_eq!(got.0, 403);
    assert_eq!(t.app.event_count().await, before, "preview writes nothing");
}

#[tokio::test]
async fn update_and_delete_columns() {
    let t = Tables::new().await;
    let table = t.table("company", "boss", "edit").await;
    let status_col = t
        .column(
            &table,
            json!({"name": "status", "type": "select", "options": ["open", "done", "gone"]}),
        )
        .await;
    let tags = t
        .column(
            &table,
            json!({"name": "tags", "type": "multi_select", "options": ["a", "b", "c"]}),
        )
        .await;
    let r1 = t
        .record(&table, json!({"status": "open", "tags": ["a", "b"]}))
        .await;
    t.record(&table, json!({"status": "done", "tags": ["b"]}))
        .await;
    let column = format!("{table}/columns/{status_col}");
    let note = t
        .column(&table, json!({"name": "note", "type": "string"}))
        .await;
    let note_path = format!("{table}/columns/{note}");
    let got = t
        .call(
            Method::PATCH,
            &note_path,
            "boss",
            Some(json!({"required": true, "max_length": 20})),
        )
        .await;
    assert_eq!(
        (got.0, code(&got)),
        (400, "column_required_has_empty_cells"),
        "{}",
        got.1
    );
    let (status, changed) = t
        .call(
            Method::PATCH,
            &note_path,
            "boss",
            Some(json!({"max_length": 20, "default_value": "n/a"})),
        )
        .await;
    assert_eq!(status, 200, "{changed}");
    assert_eq!(changed["column"]["max_length"], 20);
    assert_eq!(changed["column"]["default_value"], "n/a");
    let got = t
        .call(
            Method::PATCH,
            &column,
            "boss",
            Some(json!({"options": ["open"]})),
        )
        .await;
    assert_eq!(got.0, 409, "{}", got.1);
    assert_eq!(code(&got), "option_in_use");
    assert_eq!(got.1["detail"]["usage_count"], 1);
    let (status, body) = t
        .call(
            Method::PATCH,
            &column,
            "boss",
            Some(json!({"options": ["open", "done"]})),
        )
        .await;
    assert_eq!(status, 200, "an unused option may go: {body}");
    assert!(body.get("migration_info").is_none(), "no data moved");
    let got = t
        .call(
            Method::PATCH,
            &column,
            "boss",
            Some(json!({"options": ["x"], "option_renames": {"open": "todo"}})),
        )
        .await;
    assert_eq!(got.0, 400, "{}", got.1);
    let (status, body) = t
        .call(Method::PATCH, &column, "boss", Some(json!({"option_renames": {"open": "todo"}, "name": "state", "description": "where"})))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["column"]["options"], json!(["todo", "done"]));
    assert_eq!(body["column"]["name"], "state");
    assert_eq!(body["migration_info"]["records_migrated"], 1);
    let (_, read) = t
        .call(
            Method::GET,
            &format!("{table}/records/{}", r1["id"].as_str().unwrap()),
            "boss",
            None,
        )
        .await;
    assert_eq!(read["data"]["state"], "todo");
    let (_, body) = t
        .call(
            Method::PATCH,
            &format!("{table}/columns/{tags}"),
            "boss",
            Some(json!({"option_renames": {"a": "b"}})),
        )
        .await;
    assert_eq!(body["column"]["options"], json!(["b", "c"]));
    let (_, read) = t
        .call(
            Method::GET,
            &format!("{table}/records/{}", r1["id"].as_str().unwrap()),
            "boss",
            None,
        )
        .await;
    assert_eq!(
        read["data"]["tags"],
        json!(["b"]),
        "merged options collapse"
    );
    let (status, _) = t
        .call(
            Method::PUT,
            &column,
            "boss",
            Some(json!({"description": "legacy"})),
        )
        .await;
    assert_eq!(status, 200, "the deprecated company PUT");
    let dept = t.table("department:rnd", "dm", "d").await;
    let key = t
        .column(&dept, json!({"name": "n", "type": "integer"}))
        .await;
    let (status, _) = t
        .call(
            Method::PUT,
            &format!("{dept}/columns/{key}"),
            "boss",
            Some(json!({})),
        )
        .await;
    assert_eq!(status, 405, "PUT is company-only");
    let got = t
        .call(
            Method::PATCH,
            &format!("{table}/columns/col_ffff"),
            "boss",
            Some(json!({"name": "z"})),
        )
        .await;
    assert_eq!(got.0, 404);
    let (status, _) = t.call(Method::DELETE, &column, "boss", None).await;
    assert_eq!(status, 200);
    let (_, read) = t
        .call(
            Method::GET,
            &format!("{table}/records/{}", r1["id"].as_str().unwrap()),
            "boss",
            None,
        )
        .await;
    assert!(read["data"].get("state").is_none(), "values are gone");
    let (status, _) = t.call(Method::DELETE, &column, "boss", None).await;
    assert_eq!(status, 404);
}
