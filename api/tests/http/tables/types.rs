//! Every stored column type round-trips through create, read, search, sort and
//! export; invalid values answer 400.

use super::fixture::{Tables, code};
use reqwest::Method;
use serde_json::{Value, json};

struct Typed {
    name: &'static str,
    config: Value,
    low: Value,
    high: Value,
    /// The read form of `low` when it differs from the written one.
    low_read: Option<Value>,
    sortable: bool,
    invalid: Value,
}

fn cases(t: &Tables, link_low: &str, link_high: &str) -> Vec<Typed> {
    let member = t.seed.user("acme", "member").to_string();
    let boss = t.seed.user("acme", "boss").to_string();
    let line = t.seed.0.companies["acme"].social_clients["line1"]
        .id
        .to_string();
    let lab = t.seed.room("acme", "lab");
    let case = |name, config: Value, low: Value, high: Value, sortable, invalid: Value| Typed {
        name,
        config,
        low,
        high,
        low_read: None,
        sortable,
        invalid,
    };
    let (low_user, high_user) = if member < boss {
        (&member, &boss)
    } else {
        (&boss, &member)
    };
    vec![
        case(
            "s",
            json!({"type": "string", "max_length": 10}),
            json!("alpha"),
            json!("beta"),
            true,
            json!("far too long a value"),
        ),
        case(
            "i",
            json!({"type": "integer"}),
            json!(5),
            json!(42),
            true,
            json!(1.5),
        ),
        case(
            "f",
            json!({"type": "float"}),
            json!(1.5),
            json!(2.25),
            true,
            json!("x"),
        ),
        case(
            "b",
            json!({"type": "boolean"}),
            json!(false),
            json!(true),
            true,
            json!("yes"),
        ),
        case(
            "d",
            json!({"type": "date"}),
            json!("2024-02-29"),
            json!("2026-01-02"),
            true,
            json!("2023-02-29"),
        ),
        Typed {
            low_read: Some(json!("2026-01-02T08:00:00Z")),
            ..case(
                "dt",
                json!({"type": "datetime"}),
                json!("2026-01-02T10:00:00+02:00"),
                json!("2026-03-04T05:06:07.5Z"),
                true,
                json!("yesterday"),
            )
        },
        case(
            "t",
            json!({"type": "text"}),
            json!("long a"),
            json!("long b"),
            true,
            json!(7),
        ),
        case(
            "sel",
            json!({"type": "select", "options": ["a", "b"]}),
            json!("a"),
            json!("b"),
            true,
            json!("c"),
        ),
        case(
            "ms",
            json!({"type": "multi_select", "options": ["a", "b"]}),
            json!(["a"]),
            json!(["a", "b"]),
            false,
            json!(["a", "z"]),
        ),
        case(
            "att",
            json!({"type": "attachment", "allowed_mime_types": ["image/*"], "max_count": 2, "max_file_bytes": 100}),
            json!([{"name": "x.png", "mime_type": "image/png", "size": 3}]),
            json!([{"name": "y.png", "mime_type": "image/png", "size": 4}]),
            false,
            json!([{"name": "x.pdf", "mime_type": "application/pdf", "size": 3}]),
        ),
        case(
            "j",
            json!({"type": "json"}),
            json!({"k": 1}),
            json!([1, 2]),
            false,
            json!(null),
        ),
        case(
            "u",
            json!({"type": "user"}),
            json!(low_user),
            json!(high_user),
            true,
            json!(uuid::Uuid::new_v4().to_string()),
        ),
        case(
            "sc",
            json!({"type": "social_client"}),
            json!(line),
            json!(null),
            true,
            json!(member),
        ),
        Typed {
            low_read: Some(
                json!({"ref": format!("user:{member}"), "kind": "user", "id": member, "name": "member"}),
            ),
            ..case(
                "p",
                json!({"type": "principal"}),
                json!(format!("user:{member}")),
                json!(format!("room:{lab}")),
                false,
                json!(member),
            )
        },
        Typed {
            low_read: Some(json!("PT1H")),
            ..case(
                "iv",
                json!({"type": "interval"}),
                json!("PT60M"),
                json!("P1D"),
                true,
                json!("1 day"),
            )
        },
        case(
            "l",
            json!({"type": "link"}),
            json!([link_low]),
            json!([link_high]),
            false,
            json!([uuid::Uuid::new_v4().to_string()]),
        ),
    ]
}

#[tokio::test]
async fn every_stored_type_round_trips() {
    let t = Tables::new().await;
    let target = t.table("company", "boss", "targets").await;
    let target_id = target.rsplit('/').next().unwrap();
    let link_low = t.record(&target, json!({})).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let link_high = t.record(&target, json!({})).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let table = t.table("company", "boss", "all types").await;
    let cases = cases(&t, &link_low, &link_high);
    for case in &cases {
        let mut config = case.config.clone();
        config["name"] = json!(case.name);
        if case.name == "l" {
            config["target_table_id"] = json!(target_id);
        }
        t.column(&table, config).await;
    }
    let low: Value = cases
        .iter()
        .map(|c| (c.name.to_string(), c.low.clone()))
        .collect::<serde_json::Map<_, _>>()
        .into();
    let high: Value = cases
        .iter()
        .map(|c| (c.name.to_string(), c.high.clone()))
        .collect::<serde_json::Map<_, _>>()
        .into();
    let r1 = t.record(&table, low).await;
    let r2 = t.record(&table, high).await;
    let (id1, id2) = (r1["id"].as_str().unwrap(), r2["id"].as_str().unwrap());
    let (status, read) = t
        .call(Method::GET, &format!("{table}/records/{id1}"), "boss", None)
        .await;
    assert_eq!(status, 200);
    for case in &cases {
        let expected = case.low_read.clone().unwrap_or_else(|| case.low.clone());
        let expected = if case.name == "f" {
            json!(1.5)
        } else {
            expected
        };
        assert_eq!(read["data"][case.name], expected, "read of {}", case.name);
    }
    assert_eq!(read["can_edit"], true);
    for case in &cases {
        let filter = match case.name {
            "ms" | "l" => {
                json!({"column": case.name, "op": "contains", "value": case.high.as_array().unwrap().last().unwrap()})
            }
            "att" | "j" => json!({"column": case.name, "op": "is_not_null"}),
            _ => json!({"column": case.name, "op": "eq", "value": case.low}),
        };
        let (status, found) = t.search(&table, json!({"filter": filter})).await;
        assert_eq!(status, 200, "search {}: {found}", case.name);
        let ids: Vec<&str> = found["records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap())
            .collect();
        let expected: Vec<&str> = match case.name {
            "ms" | "l" => vec![id2],
            "att" | "j" => vec![id1, id2],
            _ => vec![id1],
        };
        assert_eq!(ids, expected, "search {}", case.name);
        let (status, sorted) = t
            .search(
                &table,
                json!({"sort": [{"column": case.name, "order": "desc"}]}),
            )
            .await;
        if case.sortable {
            assert_eq!(status, 200, "sort {}: {sorted}", case.name);
            let first = sorted["records"][0]["id"].as_str().unwrap();
            let expected = if case.high.is_null() { id1 } else { id2 };
            assert_eq!(first, expected, "sort desc by {}", case.name);
        } else {
            assert_eq!(status, 400, "{} is not sortable: {sorted}", case.name);
        }
    }
    let csv = t
        .export_csv(&table, json!({"format": "csv", "sort": [{"column": "i"}]}))
        .await;
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(
        &header[..4],
        &["id", "created_at", "updated_at", "created_by"]
    );
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 2);
    let cell = |row: usize, name: &str| {
        rows[row][header.iter().position(|h| h == name).unwrap()].to_string()
    };
    assert_eq!(cell(0, "id"), id1);
    assert_eq!(cell(0, "s"), "alpha");
    assert_eq!(cell(0, "i"), "5");
    assert_eq!(cell(0, "dt"), "2026-01-02T08:00:00Z");
    assert_eq!(cell(0, "ms"), r#"["a"]"#);
    assert_eq!(cell(1, "p"), format!("room:{}", t.seed.room("acme", "lab")));
    assert_eq!(cell(1, "sc"), "");
    assert_eq!(cell(0, "iv"), "PT1H");
    let sheet = t.export_xlsx_sheet(&table).await;
    for value in ["alpha", "PT1H", id1] {
        assert!(sheet.contains(value), "the sheet holds {value}");
    }
    for case in &cases {
        if case.invalid.is_null() {
            continue;
        }
        let got = t
            .insert(&table, "boss", json!({case.name: case.invalid}))
            .await;
        assert_eq!(
            got.0, 400,
            "{} accepted {}: {}",
            case.name, case.invalid, got.1
        );
        assert_eq!(code(&got), "invalid_record_value");
    }
}

/// A negative duration reads back with its sign (the projection's converter once
/// stored it empty), and one past the interval range is refused instead of wrapping.
#[tokio::test]
async fn durations_keep_their_sign_and_range() {
    let t = Tables::new().await;
    let table = t.table("company", "boss", "durations").await;
    t.column(&table, json!({"name": "iv", "type": "interval"}))
        .await;
    let record = t.record(&table, json!({"iv": -5})).await;
    let id = record["id"].as_str().unwrap();
    let (status, read) = t
        .call(Method::GET, &format!("{table}/records/{id}"), "boss", None)
        .await;
    assert_eq!(status, 200);
    assert_eq!(read["data"]["iv"], "-PT5S");
    for huge in ["P999999999W", "P999999999D"] {
        let got = t.insert(&table, "boss", json!({"iv": huge})).await;
        assert_eq!(got.0, 400, "{huge}: {}", got.1);
        assert_eq!(code(&got), "invalid_record_value");
    }
}

#[tokio::test]
async fn principal_cells_follow_their_rules() {
    let t = Tables::new().await;
    let applied = t
        .app
        .apply(json!({"companies": [{"ref": "acme", "name": "Acme",
            "chatrooms": [{"ref": "old", "name": "old", "archived": true}]}]}))
        .await;
    let archived = applied.companies["acme"].chatrooms["old"];
    let table = t.table("company", "boss", "people").await;
    t.column(&table, json!({"name": "who", "type": "principal"}))
        .await;
    t.column(&table, json!({"name": "n", "type": "integer"}))
        .await;
    let member = t.seed.user("acme", "member");
    let ceo = t.seed.user("globex", "ceo");
    let ops = t.seed.room("acme", "ops-room");
    for bad in [
        json!(member.to_string()),
        json!(format!("user:{ceo}")),
        json!(format!("room:{archived}")),
        json!([format!("user:{member}")]),
        json!(format!("group:{member}")),
    ] {
        let got = t.insert(&table, "boss", json!({"who": bad})).await;
        assert_eq!(got.0, 400, "{bad}: {}", got.1);
    }
    t.record(&table, json!({"who": format!("room:{ops}"), "n": 1}))
        .await;
    t.record(&table, json!({"who": format!("user:{member}"), "n": 2}))
        .await;
    t.record(&table, json!({"who": format!("user:{member}"), "n": 3}))
        .await;
    let (status, body) = t
        .search(
            &table,
            json!({"filter": {"column": "who", "op": "eq", "value": member.to_string()}}),
        )
        .await;
    assert_eq!(status, 400, "untagged operand: {body}");
    for op in ["name_eq", "name_contains"] {
        let (status, _) = t
            .search(
                &table,
                json!({"filter": {"column": "who", "op": op, "value": "member"}}),
            )
            .await;
        assert_eq!(status, 400, "{op}");
    }
    let (status, _) = t.search(&table, json!({"sort": [{"column": "who"}]})).await;
    assert_eq!(status, 400, "principal columns are not sortable");
    let (status, found) = t
        .search(
            &table,
            json!({"filter": {"column": "who", "op": "eq", "value": format!("user:{member}")}}),
        )
        .await;
    assert_eq!((status, found["total"].clone()), (200, json!(2)));
    assert_eq!(found["records"][0]["data"]["who"]["name"], "member");
    let (status, groups) = t
        .call(Method::POST, &format!("{table}/records/aggregate"), "boss",
              Some(json!({"group_by": ["who"], "aggregations": [{"op": "count"}, {"op": "sum", "column": "n"}]})))
        .await;
    assert_eq!(status, 200, "{groups}");
    let groups = groups["groups"].as_array().unwrap();
    let member_group = groups
        .iter()
        .find(|g| g["key"]["who"] == json!(format!("user:{member}")))
        .unwrap();
    assert_eq!(member_group["values"]["count"], 2);
    assert_eq!(member_group["values"]["sum_n"], 5);
}

#[tokio::test]
async fn links_check_existence_and_cardinality() {
    let t = Tables::new().await;
    let target = t.table("company", "boss", "target").await;
    let target_id = target.rsplit('/').next().unwrap();
    let a = t.record(&target, json!({})).await["id"].clone();
    let b = t.record(&target, json!({})).await["id"].clone();
    let table = t.table("company", "boss", "source").await;
    let one = t.column(&table, json!({"name": "one", "type": "link", "target_table_id": target_id, "cardinality": "one"})).await;
    let many = t
        .column(
            &table,
            json!({"name": "many", "type": "link", "target_table_id": target_id}),
        )
        .await;
    let (_, columns) = t
        .call(Method::GET, &format!("{table}/columns"), "boss", None)
        .await;
    assert_eq!(columns[1]["cardinality"], "many", "default cardinality");
    let got = t.insert(&table, "boss", json!({"one": [a, b]})).await;
    assert_eq!(got.0, 400, "cardinality one: {}", got.1);
    let got = t
        .insert(
            &table,
            "boss",
            json!({"many": [a, uuid::Uuid::new_v4().to_string()]}),
        )
        .await;
    assert_eq!(got.0, 400, "missing target record: {}", got.1);
    let record = t
        .record(&table, json!({one.as_str(): a, many.as_str(): [a, b]}))
        .await;
    assert_eq!(record["data"]["one"], json!([a]));
    assert_eq!(record["data"]["many"], json!([a, b]));
    let got = t
        .call(
            Method::PATCH,
            &format!("{table}/columns/{one}"),
            "boss",
            Some(json!({"cardinality": "many"})),
        )
        .await;
    assert_eq!(got.0, 422, "cardinality is immutable: {}", got.1);
}

#[tokio::test]
async fn an_xlsx_export_cuts_a_text_past_excel_s_cell_limit_and_finishes() {
    let t = Tables::new().await;
    let table = t.table("company", "boss", "long").await;
    t.column(&table, json!({"name": "body", "type": "text"}))
        .await;
    t.record(&table, json!({"body": "x".repeat(40_000)})).await;
    t.record(&table, json!({"body": "after"})).await;
    let sheet = t.export_xlsx_sheet(&table).await;
    let cut = format!("{}…", "x".repeat(32_766));
    assert!(sheet.contains(&cut) && !sheet.contains(&"x".repeat(32_767)));
    assert!(sheet.contains("after"), "the rows after it are written");
}
