//! The operator's trigger pass (`POST /root/custom-tables/run-due-triggers`): its
//! token, its clock override, and the kill switch over trigger-submitted runs.

use super::{operator_token, pass, put, run_due, table_id, tasks};
use crate::support::{As, Options, json};
use crate::tables::fixture::{Tables, code};
use reqwest::Method;
use serde_json::json;

#[tokio::test]
async fn the_operator_pass_needs_an_operator_token_and_a_permitted_clock() {
    let t = Tables::with_options(Options {
        allow_clock_override: false,
        ..Options::default()
    })
    .await;
    let operator = operator_token(&t);
    let (status, body) = run_due(&t, None, None).await;
    assert_eq!(status, 418, "{body}");
    let (status, body) = run_due(&t, Some("not-a-token"), None).await;
    assert_eq!(status, 418, "{body}");
    let boss = t.token("boss");
    let (status, body) = run_due(&t, Some(&boss), None).await;
    assert_eq!(status, 403, "a user is not the operator: {body}");
    // A user's credentials do not open it as an API key either.
    let response = t
        .app
        .request(Method::POST, "/root/custom-tables/run-due-triggers")
        .api_key(&t.seed.key("acme", "line"))
        .send()
        .await
        .unwrap();
    assert_eq!(json(response).await.0, 418);

    let (status, body) = run_due(&t, Some(&operator), Some(json!({"now": "yesterday"}))).await;
    assert_eq!(status, 422, "{body}");
    let (status, body) = run_due(&t, Some(&operator), Some(json!({"clock": 1}))).await;
    assert_eq!(status, 422, "{body}");
    let refused = run_due(
        &t,
        Some(&operator),
        Some(json!({"now": "2030-01-01T00:00:00Z"})),
    )
    .await;
    assert_eq!(refused.0, 400, "{}", refused.1);
    assert_eq!(code(&refused), "clock_override_disabled");

    // The real clock: an event trigger's run is created and run.
    let table = tasks(&t).await;
    let body = json!({"triggers": [{"id": "mark", "name": "Mark", "on": "created",
        "actions": [{"type": "update_record", "values": {"Amount": 7}}]}]});
    assert_eq!(put(&t, &table, "boss", body).await.0, 200);
    let record = t.record(&table, json!({"Status": "new"})).await;
    for body in [None, Some(json!({})), Some(json!({"now": null}))] {
        let (status, answer) = run_due(&t, Some(&operator), body).await;
        assert_eq!(status, 200, "{answer}");
        if answer["created"] == 1 {
            assert_eq!(answer["runs"][0]["record_id"], record["id"]);
            assert_eq!(answer["runs"][0]["status"], "succeeded", "{answer}");
        } else {
            assert_eq!(answer, json!({"created": 0, "runs": []}));
        }
    }
    assert_eq!(
        t.records(&table, "boss").await["records"][0]["data"]["Amount"],
        7
    );
}

#[tokio::test]
async fn the_kill_switch_stops_trigger_submitted_runs_as_it_stops_rest_ones() {
    let t = Tables::with_options(Options {
        enabled: false,
        ..Options::default()
    })
    .await;
    let table = tasks(&t).await;
    let log = t.table("company", "boss", "log").await;
    t.column(&log, json!({"name": "note", "type": "string"}))
        .await;
    let room = t.seed.room("acme", "lab");
    let version = uuid::Uuid::new_v4();
    let body = json!({"triggers": [
        {"id": "run", "name": "Run", "on": "created",
         "actions": [{"type": "run_sandbox_task", "chatroom_id": room, "task_version_id": version, "input": {"status": "$row.Status"}}]},
        {"id": "note", "name": "Note", "on": "created",
         "actions": [{"type": "create_record", "table_id": table_id(&log), "values": {"note": "$row.Status"}}]}
    ]});
    let (status, saved) = put(&t, &table, "boss", body).await;
    assert_eq!(status, 200, "{saved}");
    t.record(&table, json!({"Status": "open"})).await;
    let answer = pass(&t, None).await;
    assert_eq!(answer["created"], 2, "{answer}");
    let runs = answer["runs"].as_array().unwrap();
    let run = runs.iter().find(|r| r["trigger_id"] == "run").unwrap();
    assert_eq!(run["status"], "failed", "{run}");
    assert!(
        run["error"]
            .as_str()
            .unwrap()
            .starts_with("action 1: sandbox_disabled"),
        "{run}"
    );
    assert_eq!(run["sandbox_run_ids"], json!([]));
    let note = runs.iter().find(|r| r["trigger_id"] == "note").unwrap();
    assert_eq!(
        note["status"], "succeeded",
        "table actions still run: {note}"
    );
    assert_eq!(
        t.records(&log, "boss").await["records"][0]["data"]["note"],
        "open"
    );

    // The same submission over REST: 503 sandbox_disabled.
    let response = t
        .app
        .request(
            Method::POST,
            &format!("/private/module/sandbox/chatrooms/{room}/runs"),
        )
        .bearer_token(&t.token("boss"))
        .header("idempotency-key", "k1")
        .json(&json!({"task_version_id": version, "input": {}}))
        .send()
        .await
        .unwrap();
    let refused = json(response).await;
    assert_eq!(refused.0, 503, "{}", refused.1);
    assert_eq!(code(&refused), "sandbox_disabled");
}
