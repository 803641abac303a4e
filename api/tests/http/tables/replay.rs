//! A replay of the log rebuilds the custom-table read models identically: registry
//! rows and every physical table, after type changes, option renames, default fills,
//! a background migration, column and record deletions.

use super::fixture::Tables;
use domain::principal::{Actor, EventMetadata};
use domain::tables::column::{ColumnChanges, ColumnType};
use domain::tables::record::{Record, RecordCommand};
use domain::tables::table::{CustomTable, TableCommand};
use projections::read_models::tables::rewrite;
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

async fn dump(pool: &PgPool) -> Value {
    let mut out = serde_json::Map::new();
    for (name, order) in [
        ("custom_tables", "id"),
        ("custom_table_columns", "table_id, key"),
        ("custom_table_views", "table_id, id"),
        ("custom_table_migrations", "id"),
    ] {
        let rows: Option<Value> = sqlx::query_scalar(&format!(
            "SELECT jsonb_agg(to_jsonb(x) ORDER BY {order}) FROM {name} x"
        ))
        .fetch_one(pool)
        .await
        .unwrap();
        out.insert(name.into(), rows.unwrap_or(Value::Null));
    }
    let ids: Vec<Uuid> = sqlx::query_scalar("SELECT id FROM custom_tables ORDER BY id")
        .fetch_all(pool)
        .await
        .unwrap();
    for id in ids {
        let name = projections::read_models::tables::table_name(id);
        let rows: Option<Value> = sqlx::query_scalar(&format!(
            "SELECT jsonb_agg(to_jsonb(x) ORDER BY id) FROM {name} x"
        ))
        .persistent(false)
        .fetch_one(pool)
        .await
        .unwrap();
        let types: Value = sqlx::query_scalar(
            "SELECT jsonb_object_agg(column_name, data_type) FROM information_schema.columns WHERE table_name = $1",
        )
        .bind(&name)
        .fetch_one(pool)
        .await
        .unwrap();
        out.insert(name.clone(), json!({"rows": rows, "types": types}));
    }
    Value::Object(out)
}

/// Changes one cell through the bus, as a write racing a migration would.
async fn update_cell(t: &Tables, record: Uuid, table_id: &str, key: &str, value: Value) {
    let metadata = EventMetadata {
        actor: Actor::System("test"),
        company_id: None,
        request_id: "t".into(),
        time: chrono::Utc::now(),
    };
    t.app
        .state
        .bus
        .execute::<Record>(
            &record.to_string(),
            RecordCommand::Update {
                table_id: Uuid::parse_str(table_id).unwrap(),
                changes: serde_json::from_value(json!({key: value})).unwrap(),
            },
            &metadata,
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn replaying_the_log_rebuilds_the_records_read_model() {
    let t = Tables::new().await;
    let target = t.table("company", "boss", "target").await;
    let target_record = t.record(&target, json!({})).await["id"].clone();
    let table = t.table("department:rnd", "dm", "replayed").await;
    let n = t
        .column(&table, json!({"name": "n", "type": "integer"}))
        .await;
    let s = t
        .column(
            &table,
            json!({"name": "s", "type": "select", "options": ["a", "b"]}),
        )
        .await;
    let gone = t
        .column(&table, json!({"name": "gone", "type": "text"}))
        .await;
    t.column(&table, json!({"name": "when", "type": "datetime"}))
        .await;
    t.column(&table, json!({"name": "to", "type": "link", "target_table_id": target.rsplit('/').next().unwrap()})).await;
    let member = t.seed.user("acme", "member");
    t.column(&table, json!({"name": "who", "type": "principal"}))
        .await;
    let mut ids = Vec::new();
    for i in 0..6 {
        let record = t
            .record(&table, json!({"n": i, "s": if i % 2 == 0 { "a" } else { "b" }, "gone": "x", "when": "2026-01-02T03:04:05.678Z",
                                   "to": [target_record], "who": format!("user:{member}")}))
            .await;
        ids.push(record["id"].as_str().unwrap().to_string());
    }
    t.call(
        Method::PUT,
        &format!("{table}/records/{}", ids[0]),
        "boss",
        Some(json!({"data": {"n": 100}})),
    )
    .await;
    t.call(
        Method::DELETE,
        &format!("{table}/records/{}", ids[1]),
        "boss",
        None,
    )
    .await;
    t.column(
        &table,
        json!({"name": "filled", "type": "float", "default_value": 2.5}),
    )
    .await;
    t.call(
        Method::PATCH,
        &format!("{table}/columns/{s}"),
        "boss",
        Some(json!({"option_renames": {"a": "alpha"}})),
    )
    .await;
    t.call(
        Method::PATCH,
        &format!("{table}/columns/{n}"),
        "boss",
        Some(json!({"type": "string"})),
    )
    .await;
    t.call(
        Method::DELETE,
        &format!("{table}/columns/{gone}"),
        "boss",
        None,
    )
    .await;
    t.call(
        Method::POST,
        &format!("{table}/views"),
        "boss",
        Some(json!({"name": "v", "sort": [{"column": "n"}]})),
    )
    .await;
    let table_id = table.rsplit('/').next().unwrap();
    let metadata = EventMetadata {
        actor: Actor::System("test"),
        company_id: None,
        request_id: "t".into(),
        time: chrono::Utc::now(),
    };
    let committed = t
        .app
        .state
        .bus
        .execute::<CustomTable>(
            table_id,
            TableCommand::UpdateColumn {
                key: n.clone(),
                changes: ColumnChanges {
                    column_type: Some(ColumnType::Integer),
                    ..Default::default()
                },
                live_records: domain::tables::BACKGROUND_THRESHOLD + 1,
                option_usage: 0,
                empty_cells: 0,
                migration_id: Uuid::new_v4(),
            },
            &metadata,
        )
        .await
        .unwrap();
    let migration_id = committed.state.migration.unwrap();
    // The server's path: the shadow column is filled outside the pump; records
    // written meanwhile (straight through the bus, past the API's 423) are kept
    // current by the pump. The replay below takes the other path: its swap fills the
    // shadow itself. Both must end alike.
    let written_before_fill = Uuid::parse_str(&ids[2]).unwrap();
    update_cell(&t, written_before_fill, table_id, &n, json!("55")).await;
    let filled = rewrite::fill(&t.app.db.pool, migration_id, || false)
        .await
        .unwrap()
        .expect("a rewrite to fill");
    assert_eq!(filled.rows, 5, "every live record");
    update_cell(
        &t,
        Uuid::parse_str(&ids[3]).unwrap(),
        table_id,
        &n,
        json!("66"),
    )
    .await;
    let created = Uuid::new_v4();
    t.app
        .state
        .bus
        .execute::<Record>(
            &created.to_string(),
            RecordCommand::Create {
                record_id: created,
                table_id: Uuid::parse_str(table_id).unwrap(),
                company_id: t.seed.company("acme"),
                created_by: "user:test".into(),
                data: serde_json::from_value(json!({n.as_str(): "77"})).unwrap(),
            },
            &metadata,
        )
        .await
        .unwrap();
    t.app
        .state
        .bus
        .execute::<CustomTable>(
            table_id,
            TableCommand::CompleteMigration { migration_id },
            &metadata,
        )
        .await
        .unwrap();
    let (_, found) = t
        .search(
            &table,
            json!({"sort": [{"column": "n", "order": "desc"}], "limit": 3}),
        )
        .await;
    let top: Vec<Value> = found["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["data"]["n"].clone())
        .collect();
    assert_eq!(
        top,
        vec![json!(100), json!(77), json!(66)],
        "rows written during the migration are converted too"
    );
    t.record(&table, json!({"n": 7})).await;
    let deleted = t.table("company", "boss", "deleted").await;
    t.record(&deleted, json!({})).await;
    t.call(Method::DELETE, &deleted, "boss", None).await;

    let pool = &t.app.db.pool;
    let before = dump(pool).await;
    assert_eq!(before["custom_tables"].as_array().unwrap().len(), 2);
    let mut tx = pool.begin().await.unwrap();
    let tables: Vec<Uuid> = sqlx::query_scalar("SELECT id FROM custom_tables")
        .fetch_all(&mut *tx)
        .await
        .unwrap();
    for id in tables {
        sqlx::query(&format!(
            "DROP TABLE {}",
            projections::read_models::tables::table_name(id)
        ))
        .execute(&mut *tx)
        .await
        .unwrap();
    }
    sqlx::query(
        "TRUNCATE custom_tables, custom_table_columns, custom_table_views, custom_table_migrations",
    )
    .execute(&mut *tx)
    .await
    .unwrap();
    sqlx::query("UPDATE projection_checkpoints SET position = 0 WHERE name = 'custom_tables'")
        .execute(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    for _ in 0..100 {
        t.app.state.bus.pump().drain().await;
        let behind: bool = sqlx::query_scalar(
            "SELECT position < (SELECT max(position) FROM events) FROM projection_checkpoints WHERE name = 'custom_tables'",
        )
        .fetch_one(pool)
        .await
        .unwrap();
        if !behind {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let after = dump(pool).await;
    assert_eq!(before, after, "the rebuilt read model differs");
    let (_, found) = t.search(&table, json!({"sort": [{"column": "n"}]})).await;
    assert_eq!(found["total"], 7);
    assert_eq!(found["records"][0]["data"]["s"], "alpha");
    assert_eq!(found["records"][0]["data"]["filled"], 2.5);
}
