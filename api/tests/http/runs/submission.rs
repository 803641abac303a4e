//! Submission rules: idempotency, staging and validation before authorization, the
//! live share, the input schema, queue limits, queued cancels, restricted keys and
//! retry.

use super::{finished, post_keyed, runnable, submit};
use crate::environments::{Caller, SANDBOX, callers};
use crate::support::{As, TestApp, assert_code, json};
use crate::tasks::ready_environment_version;
use reqwest::Method;
use serde_json::{Value, json};

async fn keyed_with_api_key(
    app: &TestApp,
    key: &str,
    path: &str,
    idempotency: &str,
    body: Value,
) -> (u16, Value) {
    let response = app
        .request(Method::POST, &format!("{SANDBOX}{path}"))
        .api_key(key)
        .header("idempotency-key", idempotency)
        .json(&body)
        .send()
        .await
        .unwrap();
    json(response).await
}

#[tokio::test]
async fn submissions_are_idempotent_validated_and_limited() {
    let app = TestApp::spawn().await;
    let (seed, boss, dm, member) = callers(&app).await;
    let lab = seed.room("acme", "lab").to_string();
    let ops = seed.room("acme", "ops-room").to_string();
    // Nothing runs in this test: runs stay queued.
    app.set_limits(seed.company("acme"), |l| l.run_concurrency_limit = 0)
        .await;
    let ready = ready_environment_version(&boss).await;
    let schema = json!({"input_schema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}});
    let (task, version) = runnable(&boss, &ready, "echo hi\n", schema).await;
    let body = json!({"task_version_id": version, "input": {"n": 1}});

    // The key is required and replays; another body under the same key conflicts.
    assert_code(
        &submit(&member, &lab, "", body.clone()).await,
        422,
        "idempotency_key_required",
    );
    let (status, first) = submit(&member, &lab, "same", body.clone()).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["status"], "queued");
    assert_eq!(first["queue_position"], 1);
    assert!(first["eta_seconds"].is_null(), "no history yet");
    let (_, replay) = submit(&member, &lab, "same", body.clone()).await;
    assert_eq!(replay["id"], first["id"]);
    assert_code(
        &submit(
            &member,
            &lab,
            "same",
            json!({"task_version_id": version, "input": {"n": 2}}),
        )
        .await,
        409,
        "idempotency_conflict",
    );

    // Bad input never creates a run.
    let deep = (0..70).fold(json!(1), |inner, _| json!([inner]));
    let before = app.event_count().await;
    let bad = submit(
        &member,
        &lab,
        "deep",
        json!({"task_version_id": version, "input": deep}),
    )
    .await;
    let detail = assert_code(&bad, 422, "input_not_stageable");
    assert_eq!(detail["rule"], "input_too_deep");
    assert_code(
        &submit(
            &member,
            &lab,
            "schema",
            json!({"task_version_id": version, "input": {"n": "x"}}),
        )
        .await,
        422,
        "input_schema_violation",
    );
    let (status, unknown) = submit(
        &member,
        &lab,
        "unknown",
        json!({"task_version_id": version, "input": {}, "x": 1}),
    )
    .await;
    assert_eq!(status, 422, "{unknown}");
    let (status, _) = submit(
        &member,
        &lab,
        "timeout",
        json!({"task_version_id": version, "input": {"n": 1}, "timeout_seconds": 0}),
    )
    .await;
    assert_eq!(status, 422);
    let huge = format!(
        "{{\"task_version_id\":\"{version}\",\"input\":\"{}\"}}",
        "x".repeat(1_100_000)
    );
    let response = app
        .request(Method::POST, &format!("{SANDBOX}/chatrooms/{lab}/runs"))
        .bearer_token(&member.token)
        .header("idempotency-key", "huge")
        .header("content-type", "application/json")
        .body(huge)
        .send()
        .await
        .unwrap();
    assert_code(&json(response).await, 413, "request_too_large");
    assert_eq!(app.event_count().await, before, "refusals change nothing");

    // Authorization: the room, the version, the live share.
    let outsider = Caller {
        app: &app,
        token: seed.token("acme", "outsider"),
    };
    assert_eq!(submit(&outsider, &lab, "o", body.clone()).await.0, 404);
    assert_eq!(
        submit(
            &member,
            &lab,
            "v",
            json!({"task_version_id": uuid::Uuid::new_v4(), "input": {}})
        )
        .await
        .0,
        404
    );
    let globex = Caller {
        app: &app,
        token: seed.token("globex", "ceo"),
    };
    let hq = seed.room("globex", "hq").to_string();
    assert_eq!(
        submit(&globex, &hq, "g", body.clone()).await.0,
        404,
        "another company's version"
    );
    let (_, grants) = boss.get(&format!("/tasks/{task}/shares")).await;
    let grant = grants["items"][0]["id"].as_str().unwrap();
    let (status, _) = boss
        .post(&format!("/tasks/{task}/shares/{grant}/revoke"), json!({}))
        .await;
    assert_eq!(status, 200);
    assert_code(
        &submit(&member, &lab, "unshared", body.clone()).await,
        409,
        "task_not_shared_to_room",
    );
    let (status, _) = boss
        .post(
            &format!("/tasks/{task}/shares"),
            json!({"target_kind": "chatroom", "target_id": lab}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        submit(&dm, &ops, "ops", body.clone()).await.0,
        404,
        "not a member of the room"
    );

    // Queue limits: the company's queued-run limit, then on-prem's company queue.
    app.set_limits(seed.company("acme"), |l| l.queued_run_limit = 2)
        .await;
    assert_eq!(submit(&member, &lab, "second", body.clone()).await.0, 200);
    let limited = assert_code(
        &submit(&member, &lab, "third", body.clone()).await,
        429,
        "sandbox_queued_run_limit",
    );
    assert_eq!(limited["limit"], 2);
    app.set_limits(seed.company("acme"), |l| l.queued_run_limit = 100)
        .await;
    let mut accepted = 2;
    let full = loop {
        let got = submit(&member, &lab, &format!("fill-{accepted}"), body.clone()).await;
        if got.0 != 200 {
            break got;
        }
        accepted += 1;
    };
    let detail = assert_code(&full, 429, "queue_full");
    assert_eq!((accepted, detail["limit"].as_i64()), (20, Some(20)));
    assert_eq!(detail["retry_after_seconds"], 60);

    // A queued run is cancelled at once.
    let id = first["id"].as_str().unwrap();
    let (status, cancelled) = member
        .post(&format!("/chatrooms/{lab}/runs/{id}/cancel"), json!({}))
        .await;
    assert_eq!(status, 200, "{cancelled}");
    assert_eq!(cancelled["status"], "cancelled");
    assert!(!cancelled["terminal_at"].is_null());

    // Concurrent submissions never pass the limit together.
    app.set_limits(seed.company("acme"), |l| l.queued_run_limit = 20)
        .await;
    let attempts = futures::future::join_all((0..4).map(|i| {
        submit(
            &member,
            &lab,
            Box::leak(format!("race-{i}").into_boxed_str()),
            body.clone(),
        )
    }))
    .await;
    assert_eq!(
        attempts.iter().filter(|(s, _)| *s == 200).count(),
        1,
        "{attempts:?}"
    );

    // Only a terminal run is retried; an archived version no longer runs.
    let queued = attempts.iter().find(|(s, _)| *s == 200).unwrap().1["id"].clone();
    let queued = queued.as_str().unwrap();
    assert_code(
        &post_keyed(
            &member,
            &format!("/chatrooms/{lab}/runs/{queued}/retry"),
            "early",
            None,
        )
        .await,
        409,
        "retry_not_eligible",
    );
    // A draft: its owner sees it and hears why it cannot run; others do not see it.
    let fields = json!({"environment_version_id": ready, "startup_script": "",
                        "work_script": "echo draft\n", "timeout_seconds": 60});
    let (status, draft) = boss.post(&format!("/tasks/{task}/versions"), fields).await;
    assert_eq!(status, 200, "{draft}");
    let on_draft = json!({"task_version_id": draft["id"], "input": {"n": 1}});
    assert_code(
        &submit(&boss, &lab, "draft", on_draft.clone()).await,
        409,
        "version_not_runnable",
    );
    assert_eq!(submit(&member, &lab, "draft", on_draft).await.0, 404);
    let (status, _) = boss
        .post(
            &format!("/tasks/{task}/versions/{version}/archive"),
            json!({}),
        )
        .await;
    assert_eq!(status, 200);
    assert_code(
        &submit(&member, &lab, "archived", body).await,
        409,
        "version_not_runnable",
    );
}

#[tokio::test]
async fn restricted_keys_see_their_own_runs_and_retries_replay_the_input() {
    let app = TestApp::spawn().await;
    let (seed, boss, _, member) = callers(&app).await;
    let lab = seed.room("acme", "lab").to_string();
    let ready = ready_environment_version(&boss).await;
    let (_, version) = runnable(
        &boss,
        &ready,
        "cat \"$SERVICE_INPUTS_FILE\" > \"$SERVICE_OUTPUT_FILE\"\n",
        json!({}),
    )
    .await;
    let bot = seed.key("acme", "bot");

    let (status, by_key) = keyed_with_api_key(
        &app,
        &bot,
        &format!("/chatrooms/{lab}/runs"),
        "k",
        json!({"task_version_id": version, "input": {"from": "bot"}}),
    )
    .await;
    assert_eq!(status, 200, "{by_key}");
    assert_eq!(by_key["auth_method"], "api_key");
    let (_, by_member) = submit(
        &member,
        &lab,
        "m",
        json!({"task_version_id": version, "input": {"from": "member"}}),
    )
    .await;
    let source = finished(&member, &lab, by_member["id"].as_str().unwrap()).await;
    finished(&member, &lab, by_key["id"].as_str().unwrap()).await;

    let list = |key: String| {
        let app = &app;
        let lab = lab.clone();
        async move {
            let response = app
                .request(Method::GET, &format!("{SANDBOX}/chatrooms/{lab}/runs"))
                .api_key(&key)
                .send()
                .await
                .unwrap();
            json(response).await
        }
    };
    let (status, own) = list(bot.clone()).await;
    assert_eq!(status, 200, "{own}");
    let ids: Vec<&Value> = own["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["id"])
        .collect();
    assert_eq!(ids, [&by_key["id"]]);
    assert_eq!(
        member.get(&format!("/chatrooms/{lab}/runs")).await.1["items"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    // The key's owner reusing the key's Idempotency-Key gets a run of its own.
    let (_, owner_run) = submit(
        &member,
        &lab,
        "k",
        json!({"task_version_id": version, "input": {"from": "bot"}}),
    )
    .await;
    assert_ne!(owner_run["id"], by_key["id"]);
    finished(&member, &lab, owner_run["id"].as_str().unwrap()).await;
    let other = by_member["id"].as_str().unwrap();
    let response = app
        .request(
            Method::GET,
            &format!("{SANDBOX}/chatrooms/{lab}/runs/{other}"),
        )
        .api_key(&bot)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404, "another principal's run");

    // Retry replays the retained input bit for bit, under a new id.
    let retry = format!("/chatrooms/{lab}/runs/{other}/retry");
    assert_code(
        &post_keyed(&member, &retry, "", None).await,
        422,
        "idempotency_key_required",
    );
    let (status, retried) = post_keyed(&member, &retry, "r1", None).await;
    assert_eq!(status, 200, "{retried}");
    assert_eq!(retried["retry_of_run_id"], other);
    assert_ne!(retried["id"], other);
    assert_eq!(retried["input_digest"], source["input_digest"]);
    assert_eq!(retried["task_version_id"], source["task_version_id"]);
    let (_, same) = post_keyed(&member, &retry, "r2", Some(json!({"input": null}))).await;
    assert_eq!(same["input_digest"], source["input_digest"]);
    let (_, changed) = post_keyed(
        &member,
        &retry,
        "r3",
        Some(json!({"input": {"from": "retry"}})),
    )
    .await;
    assert_ne!(changed["input_digest"], source["input_digest"]);
    // A retained input that no longer matches its digest cannot be replayed.
    let key: String = sqlx::query_scalar("SELECT input_key FROM runs WHERE id = $1::uuid")
        .bind(other)
        .fetch_one(&app.db.pool)
        .await
        .unwrap();
    app.state
        .objects
        .put_bytes(&key, bytes::Bytes::from_static(b"{\"tampered\":true}"))
        .await
        .unwrap();
    assert_code(
        &post_keyed(&member, &retry, "r5", None).await,
        409,
        "retry_input_unavailable",
    );
}

#[tokio::test]
async fn the_kill_switch_refuses_submissions_but_not_cancels() {
    let app = TestApp::spawn_with(crate::support::Options {
        enabled: false,
        ..crate::support::Options::default()
    })
    .await;
    let (seed, _, _, member) = callers(&app).await;
    let lab = seed.room("acme", "lab").to_string();
    let body = json!({"task_version_id": uuid::Uuid::new_v4(), "input": {}});
    assert_code(
        &submit(&member, &lab, "k", body).await,
        503,
        "sandbox_disabled",
    );
    let run = uuid::Uuid::new_v4();
    let (status, _) = member
        .post(&format!("/chatrooms/{lab}/runs/{run}/cancel"), json!({}))
        .await;
    assert_eq!(
        status, 404,
        "cancel passes the kill switch (and finds no run)"
    );
}

#[tokio::test]
async fn fifty_concurrent_submitters_never_pass_a_limit_of_ten() {
    let app = TestApp::without_executor().await;
    let (seed, boss, _, member) = callers(&app).await;
    let lab = seed.room("acme", "lab").to_string();
    let ready = ready_environment_version(&boss).await;
    let (_, version) = runnable(&boss, &ready, "true\n", json!({})).await;
    app.set_limits(seed.company("acme"), |l| l.queued_run_limit = 10)
        .await;
    let body = json!({"task_version_id": version, "input": {"n": 1}});
    let keys: Vec<String> = (0..50).map(|i| format!("burst-{i}")).collect();
    let attempts = futures::future::join_all(
        keys.iter()
            .map(|key| submit(&member, &lab, key, body.clone())),
    )
    .await;
    let accepted = attempts.iter().filter(|(s, _)| *s == 200).count();
    assert_eq!(accepted, 10, "{attempts:?}");
    for (status, answer) in attempts.iter().filter(|(s, _)| *s != 200) {
        assert_eq!(*status, 429, "{answer}");
        assert_eq!(answer["detail"]["code"], "sandbox_queued_run_limit");
    }
    let (status, listed) = member
        .get(&format!("/chatrooms/{lab}/runs?page_size=100"))
        .await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(listed["items"].as_array().unwrap().len(), 10);
}

#[tokio::test]
async fn a_run_queued_under_a_share_revoked_before_it_starts_ends_failed() {
    // This server queues runs but executes nothing; a separate process does.
    let app = TestApp::without_executor().await;
    let (seed, boss, _, member) = callers(&app).await;
    let lab = seed.room("acme", "lab").to_string();
    let ready = ready_environment_version(&boss).await;
    let (task, version) = runnable(&boss, &ready, "echo ran\n", json!({})).await;
    let body = json!({"task_version_id": version, "input": {}});
    let (status, queued) = submit(&member, &lab, "revoked", body).await;
    assert_eq!((status, queued["status"].as_str()), (200, Some("queued")));
    let (_, grants) = boss.get(&format!("/tasks/{task}/shares")).await;
    let grant = grants["items"][0]["id"].as_str().unwrap();
    let revoke = format!("/tasks/{task}/shares/{grant}/revoke");
    assert_eq!(boss.post(&revoke, json!({})).await.0, 200);

    let mut executor = app.server_process();
    let done = finished(&member, &lab, queued["id"].as_str().unwrap()).await;
    executor.kill().unwrap();
    executor.wait().unwrap();
    assert_eq!(
        (done["status"].as_str(), done["error_code"].as_str()),
        (Some("customer_failed"), Some("share_grant_revoked")),
        "{done}"
    );
}
