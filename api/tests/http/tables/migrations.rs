//! Type changes and their conversion rules, background migrations, the status route
//! and the 423 lock.

use super::fixture::{Tables, code};
use cqrs_es::persist::SerializedEvent;
use cqrs_es::{Aggregate, DomainEvent};
use domain::principal::{Actor, EventMetadata};
use domain::tables::column::{ColumnChanges, ColumnType};
use domain::tables::record::{Record, RecordEvent};
use domain::tables::table::{CustomTable, TableCommand};
use projections::store::LogRepository;
use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

fn table_id(path: &str) -> Uuid {
    Uuid::parse_str(path.rsplit('/').next().unwrap()).unwrap()
}

async fn change_type(t: &Tables, table: &str, key: &str, body: Value) -> (u16, Value) {
    t.call(
        Method::PATCH,
        &format!("{table}/columns/{key}"),
        "boss",
        Some(body),
    )
    .await
}

async fn values(t: &Tables, table: &str, name: &str) -> Vec<Value> {
    let (status, found) = t
        .search(table, json!({"sort": [{"column": "n"}], "limit": 100}))
        .await;
    assert_eq!(status, 200, "{found}");
    found["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["data"][name].clone())
        .collect()
}

#[tokio::test]
async fn type_changes_convert_every_row() {
    let t = Tables::new().await;
    let table = t.table("company", "boss", "convert").await;
    t.column(&table, json!({"name": "n", "type": "integer"}))
        .await;
    let member = t.seed.user("acme", "member").to_string();
    let rows = [
        json!({"n": 1, "s": "12", "i": 0, "d": "2026-01-02", "u": member, "sel": "a", "secs": 3600}),
        json!({"n": 2, "s": "abc", "i": 3, "d": null, "u": null, "sel": "b", "secs": 90}),
        json!({"n": 3, "s": "12.6", "i": null, "d": null, "u": null, "sel": null, "secs": null}),
    ];
    let mut keys = Vec::new();
    for column in [
        json!({"name": "s", "type": "string"}),
        json!({"name": "i", "type": "integer"}),
        json!({"name": "d", "type": "date"}),
        json!({"name": "u", "type": "user"}),
        json!({"name": "sel", "type": "select", "options": ["a", "b"]}),
        json!({"name": "secs", "type": "integer"}),
    ] {
        keys.push(t.column(&table, column).await);
    }
    for row in rows {
        t.record(&table, row).await;
    }
    let (status, body) = change_type(&t, &table, &keys[0], json!({"type": "integer"})).await;
    assert_eq!(status, 200, "{body}");
    let info = &body["migration_info"];
    assert_eq!(
        (
            info["background_migration"].clone(),
            info["records_migrated"].clone()
        ),
        (json!(false), json!(3))
    );
    assert!(info["note"].as_str().unwrap().contains("string to integer"));
    assert_eq!(
        values(&t, &table, "s").await,
        vec![json!(12), Value::Null, json!(13)]
    );
    change_type(&t, &table, &keys[0], json!({"type": "string"})).await;
    assert_eq!(
        values(&t, &table, "s").await,
        vec![json!("12"), Value::Null, json!("13")]
    );
    change_type(&t, &table, &keys[1], json!({"type": "boolean"})).await;
    assert_eq!(
        values(&t, &table, "i").await,
        vec![json!(false), json!(true), Value::Null]
    );
    change_type(&t, &table, &keys[2], json!({"type": "datetime"})).await;
    assert_eq!(
        values(&t, &table, "d").await[0],
        json!("2026-01-02T00:00:00Z")
    );
    change_type(&t, &table, &keys[3], json!({"type": "principal"})).await;
    assert_eq!(
        values(&t, &table, "u").await[0]["ref"],
        json!(format!("user:{member}"))
    );
    let got = change_type(&t, &table, &keys[4], json!({"type": "multi_select"})).await;
    assert_eq!(got.0, 200, "options carry over: {}", got.1);
    assert_eq!(
        values(&t, &table, "sel").await,
        vec![json!(["a"]), json!(["b"]), Value::Null]
    );
    let got = change_type(
        &t,
        &table,
        &keys[4],
        json!({"type": "select", "options": ["b"]}),
    )
    .await;
    assert_eq!(got.0, 200, "{}", got.1);
    assert_eq!(
        values(&t, &table, "sel").await,
        vec![Value::Null, json!("b"), Value::Null]
    );
    change_type(&t, &table, &keys[5], json!({"type": "interval"})).await;
    assert_eq!(
        values(&t, &table, "secs").await,
        vec![json!("PT1H"), json!("PT1M30S"), Value::Null]
    );
    change_type(&t, &table, &keys[5], json!({"type": "float"})).await;
    assert_eq!(
        values(&t, &table, "secs").await,
        vec![json!(3600.0), json!(90.0), Value::Null]
    );
    let got = change_type(&t, &table, &keys[0], json!({"type": "select"})).await;
    assert_eq!(
        (got.0, code(&got)),
        (400, "column_config_invalid"),
        "select needs options"
    );
    let got = change_type(&t, &table, &keys[0], json!({"type": "link"})).await;
    assert_eq!(got.0, 400, "nothing becomes a link");
    let got = change_type(&t, &table, &keys[0], json!({"type": "lookup"})).await;
    assert_eq!(got.0, 400, "nothing becomes computed");
    for principal in ["user", "social_client", "principal"] {
        let got = change_type(&t, &table, &keys[0], json!({"type": principal})).await;
        assert_eq!(
            (got.0, code(&got)),
            (400, "column_config_invalid"),
            "text never becomes an unchecked {principal} id"
        );
    }
}

fn system() -> EventMetadata {
    EventMetadata {
        actor: Actor::System("test"),
        company_id: None,
        request_id: "test".into(),
        time: chrono::Utc::now(),
    }
}

#[tokio::test]
async fn a_background_migration_holds_the_table_until_it_completes() {
    let t = Tables::new().await;
    let table = t.table("company", "boss", "locked").await;
    let key = t
        .column(&table, json!({"name": "n", "type": "integer"}))
        .await;
    t.record(&table, json!({"n": 41})).await;
    // The table claims more live records than the threshold: the command plans a
    // background migration and no worker completes it, so the lock can be observed.
    let command = TableCommand::UpdateColumn {
        key: key.clone(),
        changes: ColumnChanges {
            column_type: Some(ColumnType::String),
            ..Default::default()
        },
        live_records: domain::tables::BACKGROUND_THRESHOLD + 1,
        option_usage: 0,
        empty_cells: 0,
        migration_id: Uuid::new_v4(),
    };
    let committed = t
        .app
        .state
        .bus
        .execute::<CustomTable>(&table_id(&table).to_string(), command, &system())
        .await
        .unwrap();
    let migration_id = committed.state.migration.unwrap();
    let got = t
        .add_column(&table, "boss", json!({"name": "other", "type": "text"}))
        .await;
    assert_eq!((got.0, code(&got)), (423, "table_locked"), "{}", got.1);
    assert_eq!(got.1["detail"]["migration_id"], migration_id.to_string());
    let got = change_type(&t, &table, &key, json!({"name": "m"})).await;
    assert_eq!(got.0, 423);
    let (status, _) = t
        .call(
            Method::DELETE,
            &format!("{table}/columns/{key}"),
            "boss",
            None,
        )
        .await;
    assert_eq!(status, 423);
    let got = t.insert(&table, "boss", json!({"n": "x"})).await;
    assert_eq!(got.0, 423, "records wait for the rewrite too");
    let status_path =
        format!("/private/module/custom_tables/company/migrations/{migration_id}/status");
    let (status, body) = t.call(Method::GET, &status_path, "member", None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (body["state"].clone(), body["background"].clone()),
        (json!("running"), json!(true))
    );
    assert!(body["records_migrated"].is_null());
    assert_eq!(
        values(&t, &table, "n").await,
        vec![json!(41)],
        "the rows keep their type while it runs"
    );
    let wrong_scope =
        format!("/private/module/custom_tables/chatroom/migrations/{migration_id}/status");
    assert_eq!(t.call(Method::GET, &wrong_scope, "boss", None).await.0, 404);
    assert_eq!(t.call(Method::GET, &status_path, "ceo", None).await.0, 404);
    t.app
        .state
        .bus
        .execute::<CustomTable>(
            &table_id(&table).to_string(),
            TableCommand::CompleteMigration { migration_id },
            &system(),
        )
        .await
        .unwrap();
    let (_, body) = t.call(Method::GET, &status_path, "boss", None).await;
    assert_eq!(
        (body["state"].clone(), body["records_migrated"].clone()),
        (json!("completed"), json!(1))
    );
    assert_eq!(values(&t, &table, "n").await, vec![json!("41")]);
    let got = t
        .add_column(&table, "boss", json!({"name": "other", "type": "text"}))
        .await;
    assert_eq!(got.0, 200, "free again: {}", got.1);
}

/// Appends `n` record creations straight to the log (one statement) and waits for
/// the read model.
async fn bulk_records(t: &Tables, table: Uuid, n: usize, cell: impl Fn(usize) -> Value) {
    let company = t.seed.company("acme");
    let events: Vec<SerializedEvent> = (0..n)
        .map(|i| {
            let record_id = Uuid::new_v4();
            let event = RecordEvent::RecordCreated {
                record_id,
                table_id: table,
                company_id: company,
                created_by: "user:bulk".into(),
                data: serde_json::from_value(cell(i)).unwrap(),
            };
            SerializedEvent::new(
                record_id.to_string(),
                1,
                Record::TYPE.into(),
                event.event_type(),
                event.event_version(),
                serde_json::to_value(&event).unwrap(),
                json!({"time": "2026-01-01T00:00:00Z", "request_id": "bulk"}),
            )
        })
        .collect();
    LogRepository::new(t.app.db.pool.clone())
        .append(&events)
        .await
        .unwrap();
    for _ in 0..600 {
        let count: i64 = sqlx::query_scalar("SELECT record_count FROM custom_tables WHERE id = $1")
            .bind(table)
            .fetch_one(&t.app.db.pool)
            .await
            .unwrap();
        if count == n as i64 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("bulk records were not projected");
}

#[tokio::test]
async fn large_tables_migrate_in_the_background() {
    let t = Tables::new().await;
    let table = t.table("company", "boss", "large").await;
    let key = t
        .column(&table, json!({"name": "n", "type": "integer"}))
        .await;
    let rows = domain::tables::BACKGROUND_THRESHOLD as usize + 1;
    bulk_records(&t, table_id(&table), rows, |i| json!({key.as_str(): i})).await;
    let (status, body) = change_type(&t, &table, &key, json!({"type": "string"})).await;
    assert_eq!(status, 200, "{body}");
    let info = &body["migration_info"];
    assert_eq!(info["background_migration"], true);
    assert_eq!(info["estimated_records"], rows);
    let migration_id = info["migration_id"].as_str().unwrap().to_string();
    let status_path =
        format!("/private/module/custom_tables/company/migrations/{migration_id}/status");
    let mut last = Value::Null;
    for _ in 0..300 {
        last = t.call(Method::GET, &status_path, "boss", None).await.1;
        if last["state"] == "completed" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(last["state"], "completed", "{last}");
    assert_eq!(last["records_migrated"], rows);
    let (_, found) = t
        .search(
            &table,
            json!({"filter": {"column": "n", "op": "eq", "value": "10000"}}),
        )
        .await;
    assert_eq!(found["total"], 1, "converted: {found}");
    let physical = format!("ct_{}", table_id(&table).simple());
    assert_eq!(
        indexes(&t, &physical).await,
        vec![
            format!("{physical}_{key}"),
            format!("{physical}_{key}_q"),
            format!("{physical}_created"),
            format!("{physical}_pkey"),
        ],
        "the converted column has its ordinary and search indexes, the shadow's are gone"
    );
}

/// The indexes of a physical table, by name.
async fn indexes(t: &Tables, physical: &str) -> Vec<String> {
    sqlx::query_scalar("SELECT indexname::text FROM pg_indexes WHERE tablename = $1 ORDER BY indexname COLLATE \"C\"")
        .bind(physical)
        .fetch_all(&t.app.db.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn string_and_text_columns_have_a_search_index_other_types_do_not() {
    let t = Tables::new().await;
    let table = t.table("company", "boss", "searched").await;
    let key = t
        .column(&table, json!({"name": "title", "type": "string"}))
        .await;
    let physical = format!("ct_{}", table_id(&table).simple());
    let search = format!("{physical}_{key}_q");
    assert!(indexes(&t, &physical).await.contains(&search));
    let (status, body) = change_type(&t, &table, &key, json!({"type": "integer"})).await;
    assert_eq!(status, 200, "{body}");
    assert!(
        !indexes(&t, &physical).await.contains(&search),
        "integers are not searched"
    );
    let (status, body) = change_type(&t, &table, &key, json!({"type": "text"})).await;
    assert_eq!(status, 200, "{body}");
    assert!(indexes(&t, &physical).await.contains(&search));
}
