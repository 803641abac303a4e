//! Exact-version consent: enabling and accepting a version record an approval for
//! the borrowing scopes the operator manages whose values are resolved; a run
//! whose borrowed slots no live approval names ends `customer_failed`
//! (`secret_approval_required`) before it receives any value; binding responses
//! show the resolved slots.

use super::{public_key, rust_seal, secret_post, write_body};
use crate::environments::callers;
use crate::runs::{finished, runnable, submit};
use crate::support::TestApp;
use crate::tasks::ready_environment_version;
use serde_json::{Value, json};

/// The work fails unless it received the slot's value.
const WORK: &str = "test -n \"$API_TOKEN\" && echo seen > \"$SERVICE_OUTPUT_FILE\"\n";

async fn approvals_of(caller: &crate::environments::Caller<'_>, task: &str) -> Vec<Value> {
    let (status, listed) = caller.get(&format!("/tasks/{task}/secret-approvals")).await;
    assert_eq!(status, 200, "{listed}");
    listed["items"].as_array().unwrap().clone()
}

#[tokio::test]
async fn enabling_consents_for_managed_scopes_and_runs_need_an_exact_approval() {
    let app = TestApp::spawn().await;
    let (seed, boss, dm, member) = callers(&app).await;
    let lab = seed.room("acme", "lab").to_string();
    let ready = ready_environment_version(&boss).await;
    let declared = json!({"secret_slot_declarations": ["API_TOKEN"]});
    let (task, version) = runnable(&boss, &ready, WORK, declared.clone()).await;
    let pem = public_key(&app).await;

    // The room's manager binds the room's value, then enables: its consent for
    // exactly the resolved slot is recorded.
    let body = write_body(
        "chatroom",
        &lab,
        &task,
        "API_TOKEN",
        rust_seal(&pem, b"room-value"),
    );
    let (status, written) = secret_post(&dm, "/secrets", "c1", body).await;
    assert_eq!(status, 200, "{written}");
    let enable = format!("/chatrooms/{lab}/granted-jobs/{task}/enable");
    let (status, enabled) = dm.post(&enable, json!({"task_version_id": version})).await;
    assert_eq!(status, 200, "{enabled}");
    let approvals = approvals_of(&dm, &task).await;
    assert_eq!(approvals.len(), 1, "{approvals:?}");
    let consent = &approvals[0];
    assert_eq!(consent["source"], "enablement");
    assert_eq!(consent["consumer_scope"], "chatroom");
    assert_eq!(consent["consumer_id"], lab.as_str());
    assert_eq!(consent["task_version_id"], version.as_str());
    assert_eq!(consent["slot_names"], json!(["API_TOKEN"]));
    assert_eq!(consent["state"], "active");

    // The binding shows the slot resolved from the room, like the menu.
    let (_, bindings) = dm.get(&format!("/chatrooms/{lab}/bindings")).await;
    let binding = bindings["items"][0]["id"].as_str().unwrap().to_string();
    let slot = &bindings["items"][0]["secret_slots"][0];
    assert_eq!(slot["borrower_bound"], true, "{bindings}");
    assert_eq!(slot["effective_source"], "borrower");
    let (_, one) = dm.get(&format!("/bindings/{binding}")).await;
    assert_eq!(one["secret_slots"][0]["effective_source"], "borrower");

    let (status, run) = submit(
        &member,
        &lab,
        "r1",
        json!({"task_version_id": version, "input": {}}),
    )
    .await;
    assert_eq!(status, 200, "{run}");
    let done = finished(&member, &lab, run["id"].as_str().unwrap()).await;
    assert_eq!(done["status"], "completed", "{done}");

    // Without a live approval the run ends before it receives the value.
    let revoke = format!(
        "/secret-approvals/{}/revoke",
        consent["id"].as_str().unwrap()
    );
    assert_eq!(dm.post(&revoke, json!({"reason": "audit"})).await.0, 200);
    let (_, run) = submit(
        &member,
        &lab,
        "r2",
        json!({"task_version_id": version, "input": {}}),
    )
    .await;
    let done = finished(&member, &lab, run["id"].as_str().unwrap()).await;
    assert_eq!(done["status"], "customer_failed", "{done}");
    assert_eq!(done["error_code"], "secret_approval_required");

    // An approval naming other slots than the resolved subset does not count; the
    // exact subset does.
    let digest = enabled["task_version_digest"].as_str().unwrap().to_string();
    let approve = |slots: Value| {
        json!({"consumer_scope": "chatroom", "consumer_id": lab, "task_id": task,
               "task_version_id": version, "task_version_digest": digest,
               "slot_names": slots, "risk_accepted": true})
    };
    let (status, wide) = dm
        .post("/secret-approvals", approve(json!(["API_TOKEN", "OTHER"])))
        .await;
    assert_eq!(status, 200, "{wide}");
    let (_, run) = submit(
        &member,
        &lab,
        "r3",
        json!({"task_version_id": version, "input": {}}),
    )
    .await;
    let done = finished(&member, &lab, run["id"].as_str().unwrap()).await;
    assert_eq!(done["error_code"], "secret_approval_required", "{done}");
    let (status, exact) = dm
        .post("/secret-approvals", approve(json!(["API_TOKEN"])))
        .await;
    assert_eq!(status, 200, "{exact}");
    assert_eq!(exact["source"], "explicit");
    let (_, run) = submit(
        &member,
        &lab,
        "r4",
        json!({"task_version_id": version, "input": {}}),
    )
    .await;
    let done = finished(&member, &lab, run["id"].as_str().unwrap()).await;
    assert_eq!(done["status"], "completed", "{done}");

    // Accepting a new version records consent for that exact version.
    let mut fields = json!({"environment_version_id": ready, "work_script": WORK,
                            "timeout_seconds": 60});
    fields["secret_slot_declarations"] = declared["secret_slot_declarations"].clone();
    let (status, next) = boss.post(&format!("/tasks/{task}/versions"), fields).await;
    assert_eq!(status, 200, "{next}");
    let next = next["id"].as_str().unwrap().to_string();
    let publish = format!("/tasks/{task}/versions/{next}/publish");
    assert_eq!(boss.post(&publish, json!({})).await.0, 200);
    let (status, accepted) = dm
        .post(
            &format!("/bindings/{binding}/accept-version"),
            json!({"task_version_id": next}),
        )
        .await;
    assert_eq!(status, 200, "{accepted}");
    assert_eq!(accepted["secret_slots"][0]["effective_source"], "borrower");
    let approvals = approvals_of(&dm, &task).await;
    assert!(
        approvals
            .iter()
            .any(|a| a["task_version_id"] == next.as_str()
                && a["source"] == "enablement"
                && a["state"] == "active"),
        "{approvals:?}"
    );
    let (_, run) = submit(
        &member,
        &lab,
        "r5",
        json!({"task_version_id": next, "input": {}}),
    )
    .await;
    let done = finished(&member, &lab, run["id"].as_str().unwrap()).await;
    assert_eq!(done["status"], "completed", "{done}");
}

#[tokio::test]
async fn the_owners_own_values_and_unresolved_slots_record_no_consent() {
    let app = TestApp::spawn().await;
    let (seed, boss, _, _) = callers(&app).await;
    let company = seed.company("acme").to_string();
    let lab = seed.room("acme", "lab").to_string();
    let ready = ready_environment_version(&boss).await;
    let declared = json!({"secret_slot_declarations": ["API_TOKEN", "MISSING"]});
    let (task, version) = runnable(&boss, &ready, WORK, declared).await;
    let pem = public_key(&app).await;
    // The company owns the task: its value needs no approval, and none is recorded.
    let body = write_body(
        "company",
        &company,
        &task,
        "API_TOKEN",
        rust_seal(&pem, b"owner-value"),
    );
    assert_eq!(secret_post(&boss, "/secrets", "o1", body).await.0, 200);
    let enable = format!("/chatrooms/{lab}/granted-jobs/{task}/enable");
    let (status, enabled) = boss
        .post(&enable, json!({"task_version_id": version}))
        .await;
    assert_eq!(status, 200, "{enabled}");
    assert_eq!(approvals_of(&boss, &task).await, Vec::<Value>::new());
    let (_, run) = submit(
        &boss,
        &lab,
        "o-run",
        json!({"task_version_id": version, "input": {}}),
    )
    .await;
    let done = finished(&boss, &lab, run["id"].as_str().unwrap()).await;
    assert_eq!(done["status"], "completed", "{done}");
}
