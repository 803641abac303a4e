//! Trigger runs (issue 22 contract): event triggers firing once per write through
//! the log, failing actions and retries, schedule windows. Each pass is the
//! operator's `POST /root/custom-tables/run-due-triggers`, with a clock override
//! where the schedule needs one.

use super::{pass, put, table_id, tasks};
use crate::tables::fixture::{Tables, code};
use reqwest::Method;
use serde_json::{Value, json};

async fn runs(t: &Tables, table: &str) -> Value {
    let (status, runs) = t
        .call(Method::GET, &format!("{table}/trigger-runs"), "boss", None)
        .await;
    assert_eq!(status, 200, "{runs}");
    runs
}

#[tokio::test]
async fn event_triggers_fire_once_per_write_through_the_log() {
    let t = Tables::new().await;
    let table = tasks(&t).await;
    let log = t.table("company", "boss", "log").await;
    t.column(&log, json!({"name": "note", "type": "string"}))
        .await;
    let body = json!({"triggers": [
        {"id": "on-open", "name": "Opened", "on": "created",
         "when": {"column": "Status", "op": "eq", "value": "open"},
         "actions": [{"type": "update_record", "values": {"Amount": 1}},
                     {"type": "create_record", "table_id": table_id(&log), "values": {"note": "$row.Status"}}]},
        {"id": "on-change", "name": "Changed", "on": "updated",
         "actions": [{"type": "create_record", "table_id": table_id(&log), "values": {"note": "changed"}}]}
    ]});
    let (status, saved) = put(&t, &table, "boss", body).await;
    assert_eq!(status, 200, "{saved}");
    let open = t.record(&table, json!({"Status": "open"})).await;
    let closed = t.record(&table, json!({"Status": "closed"})).await;
    pass(&t, None).await;
    pass(&t, None).await;

    let page = runs(&t, &table).await;
    assert_eq!(
        page["total"], 1,
        "only the open record matched, once: {page}"
    );
    let run = &page["runs"][0];
    assert_eq!(run["trigger_id"], "on-open");
    assert_eq!(run["status"], "succeeded", "{run}");
    assert_eq!(run["record_id"], open["id"]);
    let (_, record) = t
        .call(
            Method::GET,
            &format!("{table}/records/{}", open["id"].as_str().unwrap()),
            "boss",
            None,
        )
        .await;
    assert_eq!(
        record["data"]["Amount"], 1,
        "the trigger's own update fires nothing: {record}"
    );
    let notes = t.records(&log, "boss").await;
    assert_eq!(notes["total"], 1);
    assert_eq!(notes["records"][0]["data"]["note"], "open");

    // A REST update fires the update trigger; reading the log again from the start
    // (as after a crash before the cursor was saved) creates nothing more.
    let path = format!("{table}/records/{}", closed["id"].as_str().unwrap());
    let (status, body) = t
        .call(
            Method::PUT,
            &path,
            "boss",
            Some(json!({"data": {"Status": "reopened"}})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    pass(&t, None).await;
    sqlx::query("UPDATE custom_table_trigger_dispatch SET position = 0")
        .execute(&t.app.state.pool)
        .await
        .unwrap();
    pass(&t, None).await;
    let page = runs(&t, &table).await;
    assert_eq!(page["total"], 2, "{page}");
    assert_eq!(page["runs"][0]["trigger_id"], "on-change");
    assert_eq!(t.records(&log, "boss").await["total"], 2);
    assert_eq!(
        t.call(
            Method::GET,
            &format!("{table}/trigger-runs"),
            "member",
            None
        )
        .await
        .0,
        403
    );
}

#[tokio::test]
async fn a_refused_action_fails_its_run_and_new_triggers_skip_older_writes() {
    let t = Tables::new().await;
    let table = tasks(&t).await;
    let earlier = t.record(&table, json!({"Status": "before"})).await;
    let body = json!({"triggers": [
        {"id": "bad", "name": "Bad", "on": "created",
         "actions": [{"type": "update_record", "values": {"Amount": "not a number"}},
                     {"type": "update_record", "values": {"Status": "never"}}]}
    ]});
    let (status, saved) = put(&t, &table, "boss", body).await;
    assert_eq!(status, 200, "{saved}");
    let later = t.record(&table, json!({"Status": "after"})).await;
    pass(&t, None).await;
    let page = runs(&t, &table).await;
    assert_eq!(
        page["total"], 1,
        "the write before the trigger fires nothing: {page}"
    );
    let run = &page["runs"][0];
    assert_eq!(run["record_id"], later["id"]);
    assert_eq!(run["status"], "failed");
    let error = run["error"].as_str().unwrap();
    assert!(
        error.starts_with("action 1: invalid_record_value"),
        "{error}"
    );
    let (_, record) = t
        .call(
            Method::GET,
            &format!("{table}/records/{}", later["id"].as_str().unwrap()),
            "boss",
            None,
        )
        .await;
    assert_eq!(
        record["data"]["Status"], "after",
        "later actions did not run"
    );
    assert_ne!(earlier["id"], later["id"]);

    // A retry runs the frozen definition again, even after the trigger changed.
    let mount = table.split("/tables/").next().unwrap().to_string();
    let retry = format!("{mount}/trigger-runs/{}/retry", run["id"].as_str().unwrap());
    let fixed = json!({"triggers": [{"id": "bad", "name": "Fixed", "on": "created",
        "actions": [{"type": "update_record", "values": {"Amount": 2}}]}]});
    assert_eq!(put(&t, &table, "boss", fixed).await.0, 200);
    let (status, again) = t.call(Method::POST, &retry, "boss", Some(json!({}))).await;
    assert_eq!(status, 201, "{again}");
    assert_eq!(again["status"], "pending");
    assert_eq!(again["record_id"], later["id"]);
    assert_ne!(again["id"], run["id"]);
    let busy = t.call(Method::POST, &retry, "boss", Some(json!({}))).await;
    assert_eq!(busy.0, 409, "{}", busy.1);
    assert_eq!(code(&busy), "trigger_run_active");
    pass(&t, None).await;
    let page = runs(&t, &table).await;
    assert_eq!(page["runs"][0]["id"], again["id"]);
    assert_eq!(
        page["runs"][0]["status"], "failed",
        "the frozen definition ran"
    );
    // Retries sent at once take turns: one runs, the others find it active.
    let at_once = (0..5).map(|_| t.call(Method::POST, &retry, "boss", Some(json!({}))));
    let answers = futures::future::join_all(at_once).await;
    let mut statuses: Vec<u16> = answers.iter().map(|(status, _)| *status).collect();
    statuses.sort();
    assert_eq!(statuses, [201, 409, 409, 409, 409], "{answers:?}");
    pass(&t, None).await;
    assert_eq!(
        t.call(Method::POST, &retry, "member", Some(json!({})))
            .await
            .0,
        403
    );
    let unknown = format!("{mount}/trigger-runs/{}/retry", uuid::Uuid::new_v4());
    assert_eq!(
        t.call(Method::POST, &unknown, "boss", Some(json!({})))
            .await
            .0,
        404
    );
}

#[tokio::test]
async fn schedule_triggers_serve_the_latest_due_window_once() {
    let t = Tables::new().await;
    let table = tasks(&t).await;
    let log = t.table("company", "boss", "log").await;
    t.column(&log, json!({"name": "note", "type": "string"}))
        .await;
    let gone = t.table("company", "boss", "gone").await;
    let body = json!({"triggers": [
        {"id": "hourly", "name": "Hourly", "schedule": {"type": "interval", "every_seconds": 3600, "anchor_at": "2026-01-01T00:00:00Z"},
         "actions": [{"type": "create_record", "table_id": table_id(&log), "values": {"note": "tick"}}]},
        {"id": "broken", "name": "Broken", "schedule": {"type": "interval", "every_seconds": 3600, "anchor_at": "2026-01-01T00:00:00Z"},
         "actions": [{"type": "create_record", "table_id": table_id(&gone), "values": {}}]}
    ]});
    let (status, saved) = put(&t, &table, "boss", body).await;
    assert_eq!(status, 200, "{saved}");
    let (status, _) = t.call(Method::DELETE, &gone, "boss", None).await;
    assert_eq!(status, 200);
    let hour = chrono::Duration::hours(1);
    let now = chrono::Utc::now();
    // Downtime of several windows: one run, for the latest of them.
    let later = now + hour * 3 + chrono::Duration::minutes(1);
    pass(&t, Some(later)).await;
    pass(&t, Some(later)).await;
    let page = runs(&t, &table).await;
    assert_eq!(page["total"], 2, "{page}");
    let hourly: Vec<&Value> = page["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["trigger_id"] == "hourly")
        .collect();
    assert_eq!(hourly.len(), 1);
    let window: chrono::DateTime<chrono::Utc> =
        hourly[0]["window_start"].as_str().unwrap().parse().unwrap();
    assert!(window <= later && later - window < hour, "{window}");
    assert_eq!(hourly[0]["status"], "succeeded", "{}", hourly[0]);
    assert_eq!(t.records(&log, "boss").await["total"], 1);
    let broken = page["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["trigger_id"] == "broken")
        .unwrap();
    assert_eq!(broken["status"], "failed", "{broken}");

    // The next window: one more run each (a failed run consumed its window).
    pass(&t, Some(later + hour)).await;
    let page = runs(&t, &table).await;
    assert_eq!(page["total"], 4, "{page}");
    assert_eq!(t.records(&log, "boss").await["total"], 2);
    // A disabled trigger serves nothing.
    let body = json!({"triggers": [
        {"id": "hourly", "name": "Hourly", "enabled": false, "schedule": {"type": "interval", "every_seconds": 3600, "anchor_at": "2026-01-01T00:00:00Z"},
         "actions": [{"type": "create_record", "table_id": table_id(&log), "values": {"note": "tick"}}]}
    ]});
    assert_eq!(put(&t, &table, "boss", body).await.0, 200);
    pass(&t, Some(later + hour * 2)).await;
    assert_eq!(runs(&t, &table).await["total"], 4);
}

/// A trigger's actions act as the user who wrote its definition. A moderator who
/// saves the set again (here the company manager adding a trigger of their own)
/// becomes the author of what they add or change, not of the triggers they leave
/// as they were: otherwise a member's trigger, refused as them, would run with
/// the manager's rights from then on.
#[tokio::test]
async fn an_unchanged_trigger_keeps_its_author_when_another_moderator_saves_the_set() {
    let t = Tables::new().await;
    let log = t.table("company", "boss", "log").await;
    t.column(&log, json!({"name": "note", "type": "string"}))
        .await;
    let readers = json!({"can_read": "all", "can_insert": false, "can_edit": "none"});
    let path = format!("{log}/default-permissions");
    let (status, body) = t.call(Method::PATCH, &path, "boss", Some(readers)).await;
    assert_eq!(status, 200, "{body}");
    let (status, refused) = t.insert(&log, "member", json!({"note": "x"})).await;
    assert_eq!(status, 403, "the member cannot write the log: {refused}");
    let mine = t.table("chatroom:lab", "member", "mine").await;
    let (status, column) = t
        .add_column(&mine, "member", json!({"name": "Status", "type": "string"}))
        .await;
    assert_eq!(status, 200, "{column}");
    let copy = json!({"id": "copy", "name": "Copy", "on": "created",
        "actions": [{"type": "create_record", "table_id": table_id(&log), "values": {"note": "$row.Status"}}]});
    let (status, saved) = put(&t, &mine, "member", json!({"triggers": [copy]})).await;
    assert_eq!(status, 200, "{saved}");
    let theirs = json!({"id": "count", "name": "Count", "on": "updated",
        "actions": [{"type": "update_record", "values": {"Status": "seen"}}]});
    let (status, saved) = put(&t, &mine, "boss", json!({"triggers": [copy, theirs]})).await;
    assert_eq!(status, 200, "{saved}");

    let (status, record) = t.insert(&mine, "member", json!({"Status": "leak"})).await;
    assert_eq!(status, 201, "{record}");
    pass(&t, None).await;
    let page = runs(&t, &mine).await;
    assert_eq!(page["total"], 1, "{page}");
    assert_eq!(page["runs"][0]["trigger_id"], "copy");
    assert_eq!(
        page["runs"][0]["status"], "failed",
        "it ran as the member, who may not write the log: {page}"
    );
    assert_eq!(t.records(&log, "boss").await["total"], 0);
}
