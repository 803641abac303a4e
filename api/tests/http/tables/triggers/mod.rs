//! Table trigger definitions (issue 22 contract): the declarative trigger set, its
//! refusals, the columns it protects and the schedule preview; [`firing`],
//! [`dates`] and [`sandbox_runs`]: runs; [`operator`]: the operator's pass.

mod dates;
mod firing;
mod operator;
mod sandbox_runs;

use super::fixture::{Tables, code};
use crate::support::json;
use chrono::{DateTime, Utc};
use reqwest::Method;
use serde_json::{Value, json};

/// An operator token of the test server.
pub(super) fn operator_token(t: &Tables) -> String {
    t.app
        .state
        .jwt
        .mint_operator(chrono::Duration::hours(1))
        .unwrap()
}

/// `POST /root/custom-tables/run-due-triggers` with `body` and `token`.
pub(super) async fn run_due(t: &Tables, token: Option<&str>, body: Option<Value>) -> (u16, Value) {
    let mut request = t
        .app
        .request(Method::POST, "/root/custom-tables/run-due-triggers");
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    json(request.send().await.unwrap()).await
}

/// One trigger pass through the operator route, as of `now` (the real clock when
/// absent); answers `{created, runs}`.
pub(super) async fn pass(t: &Tables, now: Option<DateTime<Utc>>) -> Value {
    let body = now.map(|now| json!({"now": now}));
    let (status, created) = run_due(t, Some(&operator_token(t)), body).await;
    assert_eq!(status, 200, "{created}");
    created
}

/// A company table `tasks` (Status, Due, Amount) and its path.
pub(super) async fn tasks(t: &Tables) -> String {
    let table = t.table("company", "boss", "tasks").await;
    for (name, kind) in [("Status", "string"), ("Due", "date"), ("Amount", "integer")] {
        t.column(&table, json!({"name": name, "type": kind})).await;
    }
    table
}

pub(super) fn table_id(table: &str) -> &str {
    table.rsplit('/').next().unwrap()
}

fn set(table: &str) -> Value {
    json!({"triggers": [
        {"id": "on-open", "name": "Opened", "on": "created",
         "when": {"column": "Status", "op": "eq", "value": "open"},
         "actions": [{"type": "update_record", "values": {"Amount": 1}}]},
        {"id": "nightly", "name": "Nightly", "schedule": {"type": "cron", "expression": "0 2 * * *", "timezone": "Europe/Berlin"},
         "actions": [{"type": "create_record", "table_id": table_id(table), "values": {"Status": "summary"}}]},
        {"id": "due", "name": "Due", "schedule": {"type": "date_column_reached", "column": "Due", "offset_seconds": -3600},
         "actions": [{"type": "update_record", "values": {"Status": "$row.Status"}}]}
    ]})
}

pub(super) async fn put(t: &Tables, table: &str, user: &str, body: Value) -> (u16, Value) {
    t.call(Method::PUT, &format!("{table}/triggers"), user, Some(body))
        .await
}

#[tokio::test]
async fn trigger_sets_are_replaced_whole_and_read_back() {
    let t = Tables::new().await;
    let table = tasks(&t).await;
    let (status, saved) = put(&t, &table, "boss", set(&table)).await;
    assert_eq!(status, 200, "{saved}");
    let triggers = saved["triggers"].as_array().unwrap();
    assert_eq!(triggers.len(), 3);
    let status_key = t.column_key(&table, "Status").await;
    let due_key = t.column_key(&table, "Due").await;
    assert_eq!(triggers[0]["when"]["column"], status_key, "stored by key");
    assert_eq!(triggers[0]["enabled"], true);
    assert_eq!(triggers[0]["next_fire_at"], Value::Null);
    assert!(triggers[1]["next_fire_at"].is_string(), "{}", triggers[1]);
    assert_eq!(triggers[2]["schedule"]["column"], due_key);
    assert_eq!(
        triggers[2]["actions"][0]["values"]["Status"],
        format!("$row.{status_key}")
    );
    let (status, read) = t
        .call(Method::GET, &format!("{table}/triggers"), "boss", None)
        .await;
    assert_eq!(status, 200);
    assert_eq!(read, saved);

    // A trigger missing from the next set is deleted; an unchanged one keeps its times.
    let mut next = set(&table);
    next["triggers"].as_array_mut().unwrap().remove(1);
    next["triggers"][1]["name"] = json!("Due soon");
    let (status, again) = put(&t, &table, "boss", next).await;
    assert_eq!(status, 200, "{again}");
    let ids: Vec<&str> = again["triggers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["on-open", "due"]);
    assert_eq!(
        again["triggers"][0]["updated_at"],
        saved["triggers"][0]["updated_at"]
    );
    assert_eq!(
        again["triggers"][1]["created_at"],
        saved["triggers"][2]["created_at"]
    );
    assert_ne!(
        again["triggers"][1]["updated_at"],
        saved["triggers"][2]["updated_at"]
    );

    // The columns triggers read cannot be deleted.
    let got = t
        .call(
            Method::DELETE,
            &format!("{table}/columns/{status_key}"),
            "boss",
            None,
        )
        .await;
    assert_eq!(got.0, 409, "{}", got.1);
    assert_eq!(code(&got), "column_used_by_trigger");
    // Moderators only; other companies see nothing.
    for (user, expected) in [("member", 403), ("ceo", 404)] {
        let (status, _) = t
            .call(Method::GET, &format!("{table}/triggers"), user, None)
            .await;
        assert_eq!(status, expected, "{user} reads");
        let (status, _) = put(&t, &table, user, json!({"triggers": []})).await;
        assert_eq!(status, expected, "{user} writes");
    }
    // An empty set deletes every trigger.
    let (status, empty) = put(&t, &table, "boss", json!({"triggers": []})).await;
    assert_eq!(status, 200);
    assert_eq!(empty["triggers"], json!([]));
}

#[tokio::test]
async fn bad_trigger_sets_are_refused_and_change_nothing() {
    let t = Tables::new().await;
    let table = tasks(&t).await;
    let (status, body) = put(&t, &table, "boss", set(&table)).await;
    assert_eq!(status, 200, "{body}");
    let before = t.app.event_count().await;
    let action = json!([{"type": "create_record", "table_id": table_id(&table), "values": {}}]);
    let cases = [
        (
            json!({"id": "c", "name": "x", "schedule": {"type": "cron", "expression": "0 9 * * MON", "timezone": "UTC"}, "actions": action}),
            400,
            "invalid_cron_expression",
        ),
        (
            json!({"id": "c", "name": "x", "schedule": {"type": "cron", "expression": "0 0 9 * * *", "timezone": "UTC"}, "actions": action}),
            400,
            "invalid_cron_expression",
        ),
        (
            json!({"id": "nightly", "name": "x", "schedule": {"type": "daily", "at": "02:00", "timezone": "UTC"}, "actions": action}),
            400,
            "schedule_kind_change_requires_new_trigger_id",
        ),
        (
            json!({"id": "c", "name": "x", "actions": action}),
            400,
            "trigger_config_invalid",
        ),
        (
            json!({"id": "C!", "name": "x", "on": "created", "actions": action}),
            400,
            "trigger_config_invalid",
        ),
        (
            json!({"id": "c", "name": "x", "on": "created", "when": {"column": "Nope", "op": "is_null"}, "actions": action}),
            400,
            "trigger_config_invalid",
        ),
        (
            json!({"id": "c", "name": "x", "schedule": {"type": "interval", "every_seconds": 30}, "actions": action}),
            400,
            "trigger_config_invalid",
        ),
        (
            json!({"id": "c", "name": "x", "on": "created", "actions": [{"type": "execute_command", "command_id": "x"}]}),
            422,
            "commands_not_available",
        ),
        (
            json!({"id": "c", "name": "x", "on": "created", "actions": action, "extra": 1}),
            422,
            "",
        ),
        // `update_record` changes the triggering record; a table it names is refused.
        (
            json!({"id": "c", "name": "x", "on": "created", "actions": [
                {"type": "update_record", "table_id": table_id(&table), "values": {}}]}),
            422,
            "",
        ),
    ];
    for (trigger, status, expected) in cases {
        let mut body = set(&table);
        // The trigger takes the place of `nightly` in the saved set.
        body["triggers"][1] = trigger.clone();
        let got = put(&t, &table, "boss", body).await;
        assert_eq!(got.0, status, "{trigger}: {}", got.1);
        if !expected.is_empty() {
            assert_eq!(code(&got), expected, "{trigger}: {}", got.1);
        }
    }
    let mut twice = set(&table);
    let first = twice["triggers"][0].clone();
    twice["triggers"].as_array_mut().unwrap().push(first);
    assert_eq!(put(&t, &table, "boss", twice).await.0, 400, "an id twice");
    assert_eq!(t.app.event_count().await, before, "refusals change nothing");
}

#[tokio::test]
async fn the_schedule_preview_lists_the_next_fires() {
    let t = Tables::new().await;
    let table = tasks(&t).await;
    let (status, body) = put(&t, &table, "boss", set(&table)).await;
    assert_eq!(status, 200, "{body}");
    let preview = |query: &str, user: &'static str| {
        let path = format!("{table}/triggers/schedule-preview?{query}");
        let t = &t;
        async move { t.call(Method::GET, &path, user, None).await }
    };
    // Weekdays at 09:00 in New York (UTC-5 in winter), from Friday 2026-11-27.
    let (status, got) = preview(
        "type=cron&expression=0%209%20*%20*%201-5&timezone=America/New_York&from=2026-11-27T00:00:00Z&count=3",
        "boss",
    )
    .await;
    assert_eq!(status, 200, "{got}");
    assert_eq!(
        got["fires"],
        json!([
            "2026-11-27T14:00:00Z",
            "2026-11-30T14:00:00Z",
            "2026-12-01T14:00:00Z"
        ])
    );
    // The saved nightly trigger: 02:00 in Berlin (UTC+1 in winter).
    let (status, got) = preview(
        "trigger_id=nightly&from=2026-11-27T12:00:00Z&count=2",
        "boss",
    )
    .await;
    assert_eq!(status, 200, "{got}");
    assert_eq!(
        got["fires"],
        json!(["2026-11-28T01:00:00Z", "2026-11-29T01:00:00Z"])
    );
    let (status, got) = preview(
        "type=interval&every_seconds=900&anchor_at=2026-01-01T00:05:00Z&from=2026-11-27T10:00:00Z&count=2",
        "boss",
    )
    .await;
    assert_eq!(status, 200, "{got}");
    assert_eq!(
        got["fires"],
        json!(["2026-11-27T10:05:00Z", "2026-11-27T10:20:00Z"])
    );
    let (status, got) = preview(
        "type=daily&at=07:30&timezone=Asia/Tokyo&from=2026-11-27T00:00:00Z&count=1",
        "boss",
    )
    .await;
    assert_eq!(status, 200, "{got}");
    assert_eq!(got["fires"], json!(["2026-11-27T22:30:00Z"]));

    for (query, status, expected) in [
        (
            "type=cron&expression=0%209%20L%20*%20*&timezone=UTC",
            400,
            "invalid_cron_expression",
        ),
        (
            "type=daily&at=7:30&timezone=UTC",
            400,
            "trigger_config_invalid",
        ),
        (
            "type=interval&every_seconds=60&count=51",
            400,
            "trigger_config_invalid",
        ),
        (
            "type=interval&every_seconds=60&count=0",
            400,
            "trigger_config_invalid",
        ),
        ("trigger_id=on-open", 400, "trigger_config_invalid"),
        ("trigger_id=due", 400, "trigger_config_invalid"),
        ("trigger_id=nope", 404, ""),
    ] {
        let got = preview(query, "boss").await;
        assert_eq!(got.0, status, "{query}: {}", got.1);
        if !expected.is_empty() {
            assert_eq!(code(&got), expected, "{query}: {}", got.1);
        }
    }
    assert_eq!(preview("trigger_id=nightly", "member").await.0, 403);
}
