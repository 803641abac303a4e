//! Idempotency under concurrency (issue 27 item 4) for run submission and retry:
//! fifty parallel requests with one key and one body make one run and all answer
//! it; with different bodies one wins and every other answers 409
//! `idempotency_conflict`. Nothing executes here (no run slots).

use super::{post_keyed, runnable, submit};
use crate::environments::callers;
use crate::support::TestApp;
use crate::tasks::ready_environment_version;
use serde_json::{Value, json};

/// The distinct run ids the 200 answers name, and the other statuses.
fn outcome(answers: &[(u16, Value)]) -> (Vec<String>, Vec<(u16, String)>) {
    let mut runs: Vec<String> = answers
        .iter()
        .filter(|(s, _)| *s == 200)
        .map(|(_, a)| a["id"].as_str().unwrap().to_string())
        .collect();
    runs.sort();
    runs.dedup();
    let others = answers
        .iter()
        .filter(|(s, _)| *s != 200)
        .map(|(s, a)| (*s, a["detail"]["code"].as_str().unwrap_or("").to_string()))
        .collect();
    (runs, others)
}

#[tokio::test]
async fn fifty_parallel_submissions_and_retries_with_one_key_make_one_run() {
    let app = TestApp::without_executor().await;
    let (seed, boss, _, member) = callers(&app).await;
    let lab = seed.room("acme", "lab").to_string();
    let ready = ready_environment_version(&boss).await;
    let (_, version) = runnable(&boss, &ready, "echo hi\n", json!({})).await;
    let body = json!({"task_version_id": version, "input": {"n": 1}});

    let same = (0..50).map(|_| submit(&member, &lab, "one-key", body.clone()));
    let answers = futures::future::join_all(same).await;
    let (runs, others) = outcome(&answers);
    assert_eq!(runs.len(), 1, "{answers:?}");
    assert!(
        others.is_empty(),
        "every request answers the run: {others:?}"
    );

    let differing = (0..20).map(|n| {
        submit(
            &member,
            &lab,
            "contested",
            json!({"task_version_id": version, "input": {"n": n}}),
        )
    });
    let answers = futures::future::join_all(differing).await;
    let (winners, others) = outcome(&answers);
    assert_eq!(winners.len(), 1, "{answers:?}");
    let accepted = answers.iter().filter(|(s, _)| *s == 200).count();
    assert_eq!(
        accepted, 1,
        "only the winning body answers 200: {answers:?}"
    );
    assert!(
        others
            .iter()
            .all(|(s, code)| *s == 409 && code == "idempotency_conflict"),
        "{others:?}"
    );

    // Retries of one ended run with one key: one retry run.
    let run = &runs[0];
    let (status, cancelled) = member
        .post(&format!("/chatrooms/{lab}/runs/{run}/cancel"), json!({}))
        .await;
    assert_eq!(status, 200, "{cancelled}");
    let retry = format!("/chatrooms/{lab}/runs/{run}/retry");
    let same = (0..50).map(|_| post_keyed(&member, &retry, "retry-key", None));
    let answers = futures::future::join_all(same).await;
    let (retries, others) = outcome(&answers);
    assert_eq!(retries.len(), 1, "{answers:?}");
    assert!(others.is_empty(), "{others:?}");
    assert_ne!(&retries[0], run);
}
