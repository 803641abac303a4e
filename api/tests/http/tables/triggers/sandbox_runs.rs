//! `run_sandbox_task` actions: a real run in the room with `submission_source`
//! `custom_table_trigger`, by the user who saved the triggers, subject to the
//! queued-run limit; the trigger run is `running` until the sandbox run ends.

use super::{pass, put, table_id, tasks};
use crate::environments::Caller;
use crate::runs::{finished, runnable, table_caller};
use crate::tables::fixture::Tables;
use crate::tasks::ready_environment_version;
use reqwest::Method;
use serde_json::{Value, json};

/// The table's trigger runs, newest first.
async fn trigger_runs(t: &Tables, table: &str) -> Vec<Value> {
    let (status, page) = t
        .call(Method::GET, &format!("{table}/trigger-runs"), "boss", None)
        .await;
    assert_eq!(status, 200, "{page}");
    page["runs"].as_array().unwrap().clone()
}

#[tokio::test]
async fn run_sandbox_task_actions_submit_real_runs_and_wait_for_them() {
    let t = Tables::new().await;
    let boss = Caller {
        app: &t.app,
        token: t.token("boss"),
    };
    let lab = t.seed.room("acme", "lab").to_string();
    let ready = ready_environment_version(&boss).await;
    let copy = "cp \"$SERVICE_INPUTS_FILE\" \"$SERVICE_OUTPUT_FILE\"\n";
    let (task, version) = runnable(&boss, &ready, copy, json!({})).await;
    let (_, failing) = runnable(&boss, &ready, "exit 3\n", json!({})).await;
    let table = tasks(&t).await;
    let body = json!({"triggers": [
        {"id": "run", "name": "Run", "on": "created",
         "when": {"column": "Status", "op": "neq", "value": "fail"},
         "actions": [{"type": "run_sandbox_task", "chatroom_id": lab, "task_version_id": version,
                      "input": {"status": "$row.Status", "fixed": [1, "$row.Amount"]}}]},
        {"id": "fail", "name": "Fail", "on": "created",
         "when": {"column": "Status", "op": "eq", "value": "fail"},
         "actions": [{"type": "run_sandbox_task", "chatroom_id": lab, "task_version_id": failing}]}
    ]});
    let (status, saved) = put(&t, &table, "boss", body).await;
    assert_eq!(status, 200, "{saved}");

    // The queued-run limit covers trigger submissions: nothing is queued.
    let company = t.seed.company("acme");
    t.app.set_limits(company, |l| l.queued_run_limit = 0).await;
    t.record(&table, json!({"Status": "open", "Amount": 5}))
        .await;
    let answer = pass(&t, None).await;
    let refused = &answer["runs"][0];
    assert_eq!(refused["status"], "failed", "{answer}");
    let error = refused["error"].as_str().unwrap();
    assert!(
        error.starts_with("action 1: sandbox_queued_run_limit"),
        "{error}"
    );
    t.app
        .set_limits(company, |l| l.queued_run_limit = 100)
        .await;

    // A retry submits the run; the trigger run waits for it.
    let retry = format!(
        "{}/trigger-runs/{}/retry",
        table.split("/tables/").next().unwrap(),
        refused["id"].as_str().unwrap()
    );
    let (status, retried) = t.call(Method::POST, &retry, "boss", Some(json!({}))).await;
    assert_eq!(status, 201, "{retried}");
    pass(&t, None).await;
    let runs = trigger_runs(&t, &table).await;
    let waiting = &runs[0];
    assert_eq!(waiting["id"], retried["id"]);
    assert_eq!(waiting["status"], "running", "{waiting}");
    let sandbox_run = waiting["sandbox_run_ids"][0].as_str().unwrap().to_string();
    let busy = t.call(Method::POST, &retry, "boss", Some(json!({}))).await;
    assert_eq!(busy.0, 409, "a running trigger run is active: {}", busy.1);

    let done = finished(&boss, &lab, &sandbox_run).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["submission_source"], "custom_table_trigger");
    assert_eq!(done["task_id"], task.as_str());
    assert_eq!(done["principal_id"], t.user("boss").to_string());
    assert_eq!(done["auth_method"], "jwt");
    let expected = domain::tasks::input::digest(br#"{"fixed":[1,5],"status":"open"}"#);
    assert_eq!(done["input_digest"], expected, "$row tokens were replaced");
    pass(&t, None).await;
    assert_eq!(trigger_runs(&t, &table).await[0]["status"], "succeeded");

    // A sandbox run that fails fails its trigger run.
    t.record(&table, json!({"Status": "fail"})).await;
    pass(&t, None).await;
    let runs = trigger_runs(&t, &table).await;
    let sandbox_run = runs[0]["sandbox_run_ids"][0].as_str().unwrap().to_string();
    let done = finished(&boss, &lab, &sandbox_run).await;
    assert_eq!(done["status"], "customer_failed", "{done}");
    pass(&t, None).await;
    let ended = &trigger_runs(&t, &table).await[0];
    assert_eq!(ended["status"], "failed", "{ended}");
    assert_eq!(
        ended["error"],
        format!("sandbox run {sandbox_run} ended customer_failed")
    );
}

/// Creates one record of the table through the run's writeback credential.
const WRITES_BACK: &str = r#"
wget -q -O - --header "Authorization: Bearer $SERVICE_CT_WRITEBACK_TOKEN" \
     --header 'Content-Type: application/json' \
     --post-data '{"op":"create","data":{"Status":"written back"}}' "$SERVICE_CT_WRITEBACK_URL"
"#;

#[tokio::test]
async fn a_trigger_s_run_writing_back_to_its_table_fires_no_trigger() {
    let t = Tables::new().await;
    let (boss, dm) = (table_caller(&t, "boss"), table_caller(&t, "dm"));
    let lab = t.seed.room("acme", "lab").to_string();
    let ready = ready_environment_version(&boss).await;
    let table = tasks(&t).await;
    // A department's task whose run writes the table back (published by the
    // company manager, who may create its records), shared with the company.
    let rnd = t.department("rnd").to_string();
    let body = json!({"name": "writer", "owner_scope": "department", "owner_id": rnd});
    let (status, task) = dm.post("/tasks", body).await;
    assert_eq!(status, 200, "{task}");
    let task = task["id"].as_str().unwrap().to_string();
    let policy = json!({"kind": "custom_table_writeback", "table_id": table_id(&table),
                        "allowed_ops": "create"});
    let fields = json!({"environment_version_id": ready, "work_script": WRITES_BACK,
                        "output_policy": policy});
    let (status, version) = dm.post(&format!("/tasks/{task}/versions"), fields).await;
    assert_eq!(status, 200, "{version}");
    let version = version["id"].as_str().unwrap().to_string();
    let publish = format!("/tasks/{task}/versions/{version}/publish");
    assert_eq!(boss.post(&publish, json!({})).await.0, 200);
    let share = json!({"target_kind": "company", "target_id": t.seed.company("acme")});
    assert_eq!(
        boss.post(&format!("/tasks/{task}/shares"), share).await.0,
        200
    );

    let body = json!({"triggers": [
        {"id": "run", "name": "Run", "on": "created",
         "actions": [{"type": "run_sandbox_task", "chatroom_id": lab, "task_version_id": version}]}
    ]});
    let (status, saved) = put(&t, &table, "boss", body).await;
    assert_eq!(status, 200, "{saved}");
    t.record(&table, json!({"Status": "open"})).await;
    pass(&t, None).await;
    let runs = trigger_runs(&t, &table).await;
    assert_eq!(runs.len(), 1, "{runs:?}");
    let sandbox_run = runs[0]["sandbox_run_ids"][0].as_str().unwrap().to_string();
    let done = finished(&boss, &lab, &sandbox_run).await;
    assert_eq!(done["status"], "completed", "{done}");
    let (_, page) = t
        .call(Method::GET, &format!("{table}/records"), "boss", None)
        .await;
    assert_eq!(page["total"], 2, "the run wrote its record: {page}");
    // The run's record is the trigger's own doing: it starts no second run.
    pass(&t, None).await;
    pass(&t, None).await;
    assert_eq!(trigger_runs(&t, &table).await.len(), 1);
}
