//! Property: a batch of records written by the projection (cells converted to
//! typed arrays on the Rust side where that is certain, the rest by the SQL
//! converters) stores exactly what the lenient SQL converters (`ct_as_*`) give for
//! every cell, for creations and for updates, over random JSON cells of every
//! stored column type: well- and ill-formed dates, instants with fractions and
//! offsets, UUIDs in every case, principals, boolean words, numbers at the edges
//! of `bigint` and `double precision`, lists, quotes and backslashes.

use chrono::Utc;
use domain::tables::column::ColumnType;
use domain::tables::record::{Cells, RecordEvent};
use projections::read_models::tables::records::{Pending, flush};
use projections::read_models::tables::table_name;
use projections::testing::TestDatabase;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};
use uuid::Uuid;

const TABLE: Uuid = Uuid::from_u128(0x200);

/// Every stored type, its column key, SQL type and converter.
const COLUMNS: [(ColumnType, &str, &str, &str); 16] = [
    (ColumnType::String, "col_a0", "text", "ct_as_text"),
    (ColumnType::Integer, "col_a1", "bigint", "ct_as_bigint"),
    (
        ColumnType::Float,
        "col_a2",
        "double precision",
        "ct_as_float8",
    ),
    (ColumnType::Boolean, "col_a3", "boolean", "ct_as_boolean"),
    (ColumnType::Date, "col_a4", "date", "ct_as_date"),
    (
        ColumnType::Datetime,
        "col_a5",
        "timestamptz",
        "ct_as_timestamptz",
    ),
    (ColumnType::Text, "col_a6", "text", "ct_as_text"),
    (ColumnType::Select, "col_a7", "text", "ct_as_text"),
    (
        ColumnType::MultiSelect,
        "col_a8",
        "text[]",
        "ct_as_text_array",
    ),
    (ColumnType::Link, "col_a9", "uuid[]", "ct_as_uuid_array"),
    (ColumnType::Attachment, "col_aa", "jsonb", "ct_as_jsonb"),
    (ColumnType::Json, "col_ab", "jsonb", "ct_as_jsonb"),
    (ColumnType::User, "col_ac", "text", "ct_as_id_text"),
    (ColumnType::SocialClient, "col_ad", "text", "ct_as_id_text"),
    (ColumnType::Principal, "col_ae", "text", "ct_as_principal"),
    (ColumnType::Interval, "col_af", "interval", "ct_as_interval"),
];

const UUID: &str = "0f8fad5b-d9cb-469f-a165-70867728950e";

/// Strings near the edges of what the converters accept.
fn strings() -> Vec<String> {
    let upper = UUID.to_uppercase();
    [
        "",
        " ",
        "plain",
        "ünïcode",
        "a\"b\\c",
        "a, b,,c",
        " , ",
        "x,",
        "{a,b}",
        "NULL",
        " Yes ",
        "TRUE",
        "t",
        "no",
        "N",
        "1",
        "0",
        "maybe",
        "İ",
        " 42 ",
        "-7",
        "+3.5",
        "1e3",
        "99999999999999999999",
        "12.",
        "2024-02-29",
        "2023-02-29",
        "0000-01-01",
        "0001-01-01",
        "2026-13-01",
        "2026-04-31",
        "2026-01-01T",
        "2026-01-01 10:00:00Z",
        "2026-1-01",
        "2026-01-01T10:00:00Z",
        "2026-01-01T23:59:59.5Z",
        "2026-01-01T10:00:00.123456+05:30",
        "2026-01-01T10:00:00.1234567Z",
        "2026-01-01T10:00:00.123456789-23:59",
        "2026-01-01T10:00:00+14:00",
        "2026-01-01T10:00:00+15:00",
        "2026-01-01T10:00:00z",
        "2026-01-01T24:00:00Z",
        "2026-01-01T10:60:00Z",
        "2026-01-01T10:00:00",
        "0001-01-01T00:30:00+01:00",
        "9999-12-31T23:59:59-14:00",
        "P1D",
        "PT1H30M",
        "P2W",
        "PT0.5S",
        "P",
        "PT",
        "-PT5S",
        "P999999999W",
        "P999999999D",
        "PT999999999H",
        "P3DT4H5M6.789S",
        &upper,
        UUID,
        &format!("{{{UUID}}}"),
        &UUID.replace('-', ""),
        &format!("{UUID}, {upper}"),
        &format!("{UUID},nope"),
        &format!("user:{UUID}"),
        &format!("USER:{upper}"),
        &format!("room:{UUID}"),
        &format!("smc:{UUID}"),
        &format!("group:{UUID}"),
        &format!("user:{UUID}x"),
        "user:",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// A number near an edge of `bigint` or `double precision`.
fn numbers() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(|i| json!(i)),
        (-5i64..5).prop_map(|i| json!(i)),
        any::<u64>().prop_map(|u| json!(u)),
        prop::sample::select(vec![
            0.0,
            -0.0,
            0.1,
            -2.5,
            1.0,
            1e15,
            9.007_199_254_740_993e15,
            1e299,
            1e300,
            1e-300,
            1e-310,
            5e-324,
            9.2e18,
            9.3e18,
            -9.3e18,
            1e12,
            3.5e-7,
        ])
        .prop_map(|f| json!(f)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        prop::sample::select(vec![i64::MAX as u64 + 1, 1 << 53, (1 << 53) + 1, u64::MAX])
            .prop_map(|u| json!(u)),
    ]
}

/// A cell: a scalar, a list of scalars, an object or null.
fn cell() -> impl Strategy<Value = Value> {
    let string = prop::sample::select(strings()).prop_map(Value::String);
    let scalar = prop_oneof![
        4 => string,
        2 => numbers(),
        1 => any::<bool>().prop_map(Value::Bool),
        1 => Just(Value::Null),
    ];
    prop_oneof![
        6 => scalar.clone(),
        2 => prop::collection::vec(scalar, 0..4).prop_map(Value::Array),
        1 => Just(json!({"name": "a.txt", "size": 3})),
    ]
}

/// A row: each column's cell, or none (absent from the record or change).
fn row() -> impl Strategy<Value = Vec<Option<Value>>> {
    prop::collection::vec(prop::option::weighted(0.9, cell()), COLUMNS.len())
}

fn cells_of(row: &[Option<Value>]) -> Cells {
    COLUMNS
        .iter()
        .zip(row)
        .filter_map(|((_, key, _, _), cell)| Some((key.to_string(), cell.clone()?)))
        .collect()
}

/// Rows whose stored cells differ from the converters' results over `expected`
/// (each record's full cells as JSON), as text for the failure message.
async fn differences(db: &TestDatabase, expected: &[(Uuid, Cells)]) -> Vec<String> {
    let rows: Vec<Value> = expected
        .iter()
        .map(|(id, cells)| json!({"id": id, "cells": cells}))
        .collect();
    let checks: Vec<String> = COLUMNS
        .iter()
        .map(|(_, key, _, conv)| {
            format!(
                "CASE WHEN t.{key} IS DISTINCT FROM {conv}(e->'cells'->'{key}')
                 THEN '{key}: stored ' || coalesce(t.{key}::text, 'NULL') || ', expected '
                      || coalesce({conv}(e->'cells'->'{key}')::text, 'NULL')
                      || ' from ' || coalesce(e->'cells'->>'{key}', 'absent') END"
            )
        })
        .collect();
    let sql = format!(
        "SELECT d FROM {} AS t JOIN jsonb_array_elements($1::jsonb) AS e ON t.id = (e->>'id')::uuid,
         unnest(ARRAY[{}]) AS d WHERE d IS NOT NULL",
        table_name(TABLE),
        checks.join(", ")
    );
    sqlx::query_scalar(&sql)
        .bind(Value::Array(rows))
        .fetch_all(&db.pool)
        .await
        .unwrap()
}

fn layout() -> Vec<(String, ColumnType)> {
    COLUMNS
        .iter()
        .map(|(t, key, _, _)| (key.to_string(), *t))
        .collect()
}

#[test]
fn projected_cells_equal_the_sql_converters() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let db = runtime.block_on(TestDatabase::fresh());
    let definitions: Vec<String> = COLUMNS
        .iter()
        .map(|(_, key, sql_type, _)| format!("{key} {sql_type}"))
        .collect();
    runtime.block_on(async {
        sqlx::query(&format!(
            "CREATE TABLE {} (id uuid PRIMARY KEY, created_at timestamptz NOT NULL,
             updated_at timestamptz NOT NULL, created_by text NOT NULL, {})",
            table_name(TABLE),
            definitions.join(", ")
        ))
        .execute(&db.pool)
        .await
        .unwrap();
    });
    let mut runner = TestRunner::new(Config {
        cases: 64,
        ..Config::default()
    });
    let batches = prop::collection::vec((row(), row()), 1..40);
    runner
        .run(&batches, |batch| {
            let mut created = Pending::default();
            let mut updated = Pending::default();
            let mut expected = Vec::new();
            for (first, change) in &batch {
                let id = Uuid::new_v4();
                let data = cells_of(first);
                let changes = cells_of(change);
                created.fold(
                    id,
                    RecordEvent::RecordCreated {
                        record_id: id,
                        table_id: TABLE,
                        company_id: Uuid::nil(),
                        created_by: "user:x".into(),
                        data: data.clone(),
                    },
                    Utc::now(),
                );
                updated.fold(
                    id,
                    RecordEvent::RecordUpdated {
                        table_id: TABLE,
                        changes: changes.clone(),
                    },
                    Utc::now(),
                );
                let mut merged = data;
                merged.extend(changes);
                expected.push((id, merged));
            }
            let created_only: Vec<(Uuid, Cells)> = batch
                .iter()
                .zip(&expected)
                .map(|((first, _), (id, _))| (*id, cells_of(first)))
                .collect();
            runtime.block_on(async {
                let mut conn = db.pool.acquire().await.unwrap();
                flush(&mut conn, TABLE, created, &layout()).await.unwrap();
                let after_create = differences(&db, &created_only).await;
                prop_assert!(after_create.is_empty(), "after creation: {after_create:#?}");
                flush(&mut conn, TABLE, updated, &layout()).await.unwrap();
                let after_update = differences(&db, &expected).await;
                prop_assert!(after_update.is_empty(), "after update: {after_update:#?}");
                Ok(())
            })
        })
        .unwrap();
}
