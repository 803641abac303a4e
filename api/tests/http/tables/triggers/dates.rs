//! `date_column_reached` triggers: once per (trigger, record, value), a new value
//! re-arms, an old value never fires again (not after its runs are gone either),
//! values reached before the trigger existed never fire, `when` is checked when
//! the value is reached.

use super::{pass, put, tasks};
use crate::tables::fixture::Tables;
use chrono::{DateTime, Utc};
use reqwest::Method;
use serde_json::{Value, json};

fn at(time: &str) -> Option<DateTime<Utc>> {
    Some(time.parse().unwrap())
}

/// The (trigger, record) pairs a pass created, sorted.
fn fired(answer: &Value) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = answer["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            assert_eq!(r["status"], "succeeded", "{r}");
            let record = r["record_id"].as_str().unwrap().to_string();
            (r["trigger_id"].as_str().unwrap().to_string(), record)
        })
        .collect();
    pairs.sort();
    pairs
}

fn pair(trigger: &str, record: &Value) -> (String, String) {
    (trigger.into(), record["id"].as_str().unwrap().into())
}

#[tokio::test]
async fn date_triggers_fire_once_per_record_and_value() {
    let t = Tables::new().await;
    let table = tasks(&t).await;
    t.column(&table, json!({"name": "At", "type": "datetime"}))
        .await;
    let body = json!({"triggers": [
        {"id": "due", "name": "A day before Due", "schedule": {"type": "date_column_reached", "column": "Due", "offset_seconds": -86400},
         "actions": [{"type": "update_record", "values": {"Amount": 1}}]},
        {"id": "at", "name": "At", "schedule": {"type": "date_column_reached", "column": "At"},
         "when": {"column": "Status", "op": "eq", "value": "go"},
         "actions": [{"type": "update_record", "values": {"Status": "went"}}]}
    ]});
    let (status, saved) = put(&t, &table, "boss", body).await;
    assert_eq!(status, 200, "{saved}");
    let soon = t
        .record(&table, json!({"Status": "a", "Due": "2030-01-10"}))
        .await;
    let later = t
        .record(&table, json!({"Status": "b", "Due": "2030-02-01"}))
        .await;
    let _past = t
        .record(&table, json!({"Status": "c", "Due": "2020-01-01"}))
        .await;
    let go = t
        .record(
            &table,
            json!({"Status": "go", "At": "2030-01-05T10:00:00Z"}),
        )
        .await;
    let stop = t
        .record(
            &table,
            json!({"Status": "stop", "At": "2030-01-05T10:00:00Z"}),
        )
        .await;

    let answer = pass(&t, at("2030-01-05T09:59:59Z")).await;
    assert_eq!(answer["created"], 0, "not reached yet: {answer}");
    let answer = pass(&t, at("2030-01-08T23:59:59Z")).await;
    assert_eq!(
        fired(&answer),
        vec![pair("at", &go)],
        "`when` is checked as the value is reached; the due date is a day away"
    );
    let answer = pass(&t, at("2030-01-09T00:00:00Z")).await;
    assert_eq!(fired(&answer), vec![pair("due", &soon)], "offset -1 day");
    assert_eq!(pass(&t, at("2030-01-09T00:00:00Z")).await["created"], 0);

    // The passed-over record now matches `when`: its value does not fire again.
    let stop_path = format!("{table}/records/{}", stop["id"].as_str().unwrap());
    let change = |path: String, data: Value| {
        let t = &t;
        async move {
            let (status, body) = t
                .call(Method::PUT, &path, "boss", Some(json!({"data": data})))
                .await;
            assert_eq!(status, 200, "{body}");
        }
    };
    change(stop_path.clone(), json!({"Status": "go"})).await;
    let answer = pass(&t, at("2030-03-01T00:00:00Z")).await;
    assert_eq!(fired(&answer), vec![pair("due", &later)]);

    // A new value re-arms; the old value again does not fire, not even once the
    // runs are gone from the read model.
    let soon_path = format!("{table}/records/{}", soon["id"].as_str().unwrap());
    change(soon_path.clone(), json!({"Due": "2030-02-15"})).await;
    change(stop_path, json!({"At": "2030-02-20T08:30:00Z"})).await;
    let mut again = fired(&pass(&t, at("2030-03-01T00:00:00Z")).await);
    again.sort();
    let mut expected = vec![pair("due", &soon), pair("at", &stop)];
    expected.sort();
    assert_eq!(again, expected);
    change(soon_path, json!({"Due": "2030-01-10"})).await;
    sqlx::query("DELETE FROM custom_table_trigger_runs")
        .execute(&t.app.state.pool)
        .await
        .unwrap();
    assert_eq!(pass(&t, at("2030-06-01T00:00:00Z")).await["created"], 0);
    let (_, record) = t
        .call(
            Method::GET,
            &format!("{table}/records/{}", go["id"].as_str().unwrap()),
            "boss",
            None,
        )
        .await;
    assert_eq!(record["data"]["Status"], "went", "{record}");
}
