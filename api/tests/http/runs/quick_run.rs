//! Quick Run: room managers only, every field required, a ready company-owned or
//! curated environment version, the ceiling, a hidden task, a real run.

use super::budget::operator;
use super::{fetch_public, finished, post_keyed};
use crate::environments::callers;
use crate::support::{TestApp, assert_code, assert_validation};
use crate::tasks::{draft_environment_version, ready_environment_version};
use chrono::{Duration, Utc};
use domain::pricing::{Budget, PricingCommand};
use serde_json::{Value, json};
use uuid::Uuid;

fn request(environment_version: &str) -> Value {
    json!({
        "name": "quick",
        "environment_version_id": environment_version,
        "startup_script": "",
        "work_script": "cat \"$SERVICE_INPUTS_FILE\" > \"$SERVICE_OUTPUT_FILE\"; echo quick-$MODE\n",
        "ordinary_env": {"MODE": "on"},
        "input": {"q": 1},
        "timeout_seconds": 60
    })
}

#[tokio::test]
async fn quick_run_runs_scripts_through_a_hidden_task() {
    let app = TestApp::spawn().await;
    let (seed, boss, dm, member) = callers(&app).await;
    let lab = seed.room("acme", "lab").to_string();
    let ready = ready_environment_version(&boss).await;
    let path = format!("/chatrooms/{lab}/quick-run");

    assert_eq!(
        post_keyed(&member, &path, "m", Some(request(&ready)))
            .await
            .0,
        403
    );
    assert_code(
        &post_keyed(&dm, &path, "", Some(request(&ready))).await,
        422,
        "idempotency_key_required",
    );
    let mut partial = request(&ready);
    partial.as_object_mut().unwrap().remove("ordinary_env");
    assert_eq!(
        post_keyed(&dm, &path, "p", Some(partial)).await.0,
        422,
        "every field is required"
    );
    let unbuilt = draft_environment_version(&boss).await;
    assert_code(
        &post_keyed(&dm, &path, "u", Some(request(&unbuilt))).await,
        409,
        "environment_version_not_ready",
    );
    let mut long = request(&ready);
    long["timeout_seconds"] = json!(90_000);
    assert_code(
        &post_keyed(&dm, &path, "l", Some(long)).await,
        422,
        "timeout_exceeds_ceiling",
    );
    let mut deep = request(&ready);
    deep["input"] = (0..70).fold(json!(1), |inner, _| json!([inner]));
    assert_code(
        &post_keyed(&dm, &path, "d", Some(deep)).await,
        422,
        "input_not_stageable",
    );

    let (status, quick) = post_keyed(&dm, &path, "q", Some(request(&ready))).await;
    assert_eq!(status, 200, "{quick}");
    assert_eq!(quick["run"]["submission_source"], "quick_run");
    let (_, replay) = post_keyed(&dm, &path, "q", Some(request(&ready))).await;
    assert_eq!(replay["run"]["id"], quick["run"]["id"]);
    let mut other = request(&ready);
    other["work_script"] = json!("echo other\n");
    assert_code(
        &post_keyed(&dm, &path, "q", Some(other)).await,
        409,
        "idempotency_conflict",
    );
    // Forty concurrent requests with one fresh key and one body: one run, and every
    // request answers it (none reads before the first one's effects are visible).
    let burst = (0..40).map(|_| post_keyed(&dm, &path, "burst", Some(request(&ready))));
    let answers = futures::future::join_all(burst).await;
    let first = answers[0].1["run"]["id"].clone();
    assert!(first.is_string(), "{:?}", answers[0]);
    for (status, answer) in &answers {
        assert_eq!(*status, 200, "{answer}");
        assert_eq!(answer["run"]["id"], first);
        assert_eq!(answer["task_version_id"], answers[0].1["task_version_id"]);
    }
    let id = quick["run"]["id"].as_str().unwrap();
    let done = finished(&dm, &lab, id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["task_version_id"], quick["task_version_id"]);

    // The hidden task never appears in the catalog; its version is published.
    let (_, tasks) = boss.get("/tasks").await;
    assert!(
        tasks["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["id"] != quick["task_id"])
    );
    let output = fetch_public(&dm, &lab, id, "output").await;
    assert_eq!(output.text().await.unwrap(), r#"{"q":1}"#);
    // A retry of a Quick Run needs no share, but a room manager.
    let retry = format!("/chatrooms/{lab}/runs/{id}/retry");
    assert_eq!(post_keyed(&member, &retry, "r", None).await.0, 403);
    let (status, retried) = post_keyed(&dm, &retry, "r", None).await;
    assert_eq!(status, 200, "{retried}");
    assert_eq!(retried["submission_source"], "quick_run");
}

#[tokio::test]
async fn a_key_whose_first_request_made_no_run_runs_what_its_next_request_sends() {
    let app = TestApp::spawn().await;
    let (seed, boss, dm, _) = callers(&app).await;
    let lab = seed.room("acme", "lab").to_string();
    let ready = ready_environment_version(&boss).await;
    let path = format!("/chatrooms/{lab}/quick-run");
    let mut nameless = request(&ready);
    nameless["name"] = json!("");
    let refused = post_keyed(&dm, &path, "n", Some(nameless)).await;
    assert_validation(&refused, "too_short", &["body", "name"]);

    // A budget whose window has not begun refuses the first request at admission.
    let company: Uuid = boss.get("/me").await.1["company_id"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let budget = Budget {
        company_id: company,
        currency: "USD".into(),
        amount_micros: 100_000,
        window_days: 30,
        starts_at: Utc::now() + Duration::days(1),
    };
    operator(
        &app,
        &company.to_string(),
        PricingCommand::SetBudget(budget),
    )
    .await;
    let mut first = request(&ready);
    first["work_script"] = json!("echo first > \"$SERVICE_OUTPUT_FILE\"\n");
    let refused = post_keyed(&dm, &path, "again", Some(first.clone())).await;
    assert_code(&refused, 422, "missing_window");
    let clear = PricingCommand::ClearBudget {
        company_id: company,
    };
    operator(&app, &company.to_string(), clear).await;

    let mut second = request(&ready);
    second["work_script"] = json!("echo second > \"$SERVICE_OUTPUT_FILE\"\n");
    let (status, quick) = post_keyed(&dm, &path, "again", Some(second)).await;
    assert_eq!(status, 200, "{quick}");
    let id = quick["run"]["id"].as_str().unwrap();
    assert_eq!(finished(&dm, &lab, id).await["status"], "completed");
    let output = fetch_public(&dm, &lab, id, "output").await;
    assert_eq!(output.text().await.unwrap(), "second\n");
    // The key's run is the second request's now: the first one's body conflicts.
    let conflict = post_keyed(&dm, &path, "again", Some(first)).await;
    assert_code(&conflict, 409, "idempotency_conflict");
}
