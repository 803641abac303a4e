//! Real builds with buildah: ready versions, rule refusals, failures,
//! retries, recovery after a lost worker, and the company build limits.

use super::{busybox_context, callers};
use crate::support::{TestApp, assert_code, assert_validation};
use chrono::Utc;
use domain::environments::version::{
    BuildFailure, EnvironmentVersion, TerminalClass, VersionCommand,
};
use domain::principal::{Actor, EventMetadata};
use serde_json::{Value, json};
use std::time::Duration;
use uuid::Uuid;

fn operator(time: chrono::DateTime<Utc>) -> EventMetadata {
    EventMetadata {
        actor: Actor::Operator("test".into()),
        company_id: None,
        request_id: "t".into(),
        time,
    }
}

#[tokio::test]
async fn a_real_context_builds_into_a_ready_version() {
    let app = TestApp::spawn().await;
    let (seed, boss, _, member) = callers(&app).await;
    let env = boss.environment("py").await;
    let version = boss
        .version(&env, busybox_context("RUN echo built > /built.txt\n", &[]))
        .await;
    let attempt = boss.build(&env, &version).await;
    assert_eq!(attempt["attempt_number"], 1);
    assert_eq!(attempt["build_region"], "onprem");
    assert_eq!(attempt["build_profile"], "standard");
    let finished = boss
        .finished(&env, &version, attempt["id"].as_str().unwrap())
        .await;
    assert_eq!(finished["status"], "completed", "{finished}");
    assert_eq!(finished["terminal_class"], "completed");
    assert!(finished["report_total_bytes"].as_i64().unwrap() > 0);
    assert!(finished["phase"].is_null());
    let (_, ready) = member
        .get(&format!("/environments/{env}/versions/{version}"))
        .await;
    assert_eq!(ready["state"], "ready");
    assert!(ready["ready_at"].is_string());
    let image = super::recorded_image(&app, &version).await;
    assert!(image.starts_with("localhost/sandbox-env/"));
    let kinds: Vec<(String, serde_json::Value)> =
        sqlx::query_as("SELECT kind, recipients FROM notifications WHERE company_id = $1")
            .bind(seed.company("acme"))
            .fetch_all(&app.db.pool)
            .await
            .unwrap();
    assert_eq!(kinds.len(), 1);
    assert_eq!(kinds[0].0, "build_ready");
    assert_eq!(kinds[0].1[1]["scope"], "company_managers");
    let again = boss
        .post(
            &format!("/environments/{env}/versions/{version}/builds"),
            json!({}),
        )
        .await;
    assert_code(&again, 409, "build_not_eligible");
    let (status, same) = boss
        .post(
            &format!("/environments/{env}/versions/{version}/retry-provisioning"),
            json!({}),
        )
        .await;
    assert_eq!((status, same["state"].as_str()), (200, Some("ready")));
}

async fn failed_build(dockerfile: &str, extra: &[(&str, &[u8])]) -> (Value, Value) {
    let app = TestApp::spawn().await;
    let (_, boss, _, _) = callers(&app).await;
    let env = boss.environment("py").await;
    let version = boss.version(&env, busybox_context(dockerfile, extra)).await;
    let attempt = boss.build(&env, &version).await;
    let finished = boss
        .finished(&env, &version, attempt["id"].as_str().unwrap())
        .await;
    let (_, version) = boss
        .get(&format!("/environments/{env}/versions/{version}"))
        .await;
    (finished, version)
}

#[tokio::test]
async fn dockerfile_rules_refuse_with_policy_reject() {
    let (attempt, version) = failed_build("ADD https://example.com/x.tgz /x\n", &[]).await;
    assert_eq!(
        (
            attempt["terminal_class"].as_str(),
            attempt["error_code"].as_str()
        ),
        (Some("customer_failed"), Some("policy_reject"))
    );
    assert_eq!(attempt["error_detail"], "add_network_source");
    assert_eq!(version["state"], "rejected");
}

#[tokio::test]
async fn a_failing_step_is_dockerfile_exit() {
    let (attempt, _) = failed_build("RUN exit 3\n", &[]).await;
    assert_eq!(attempt["status"], "customer_failed");
    assert_eq!(attempt["error_code"], "dockerfile_exit");
    assert_eq!(attempt["error_detail"], "build_step_failed");
}

#[tokio::test]
async fn an_image_holding_platform_paths_is_context_invalid() {
    let (attempt, _) = failed_build(
        "COPY helper.sh /workspace/startup.sh\n",
        &[("helper.sh", b"echo hi")],
    )
    .await;
    assert_eq!(attempt["error_code"], "context_invalid");
    assert_eq!(attempt["error_detail"], "reserved_path_in_image");
}

#[tokio::test]
async fn a_platform_path_behind_the_image_s_own_link_is_found() {
    // `/workspace -> /w`: resolved on the host, the check looked at the host's /w.
    let (attempt, _) = failed_build(
        "RUN mkdir /w && touch /w/startup.sh && ln -s /w /workspace\n",
        &[],
    )
    .await;
    assert_eq!(attempt["error_code"], "context_invalid", "{attempt}");
    assert_eq!(attempt["error_detail"], "reserved_path_in_image");
}

#[tokio::test]
async fn a_base_image_that_cannot_be_pulled_fails_clearly() {
    let app = TestApp::spawn().await;
    let (_, boss, _, _) = callers(&app).await;
    let env = boss.environment("py").await;
    let context = super::tar_gz(&[("Dockerfile", b"FROM registry.invalid/nothing:1\nRUN true\n")]);
    let version = boss.version(&env, context).await;
    let attempt = boss.build(&env, &version).await;
    let finished = boss
        .finished(&env, &version, attempt["id"].as_str().unwrap())
        .await;
    assert_eq!(
        (
            finished["error_code"].as_str(),
            finished["error_detail"].as_str()
        ),
        (Some("dockerfile_exit"), Some("base_image_unavailable"))
    );
}

#[tokio::test]
async fn build_requests_are_validated() {
    let app = TestApp::spawn().await;
    let (_, boss, _, member) = callers(&app).await;
    let env = boss.environment("py").await;
    let version = boss.version(&env, busybox_context("", &[])).await;
    let path = format!("/environments/{env}/versions/{version}/builds");
    assert_validation(
        &boss.post(&path, json!({"build_region": "mars-1"})).await,
        "enum",
        &["body", "build_region"],
    );
    assert_code(
        &boss
            .post(&path, json!({"build_region": "asia-east1"}))
            .await,
        422,
        "build_region_unavailable",
    );
    assert_validation(
        &boss.post(&path, json!({"build_profile": "huge"})).await,
        "enum",
        &["body", "build_profile"],
    );
    assert_eq!(member.post(&path, json!({})).await.0, 404);
    let first = boss.build(&env, &version).await;
    assert_code(
        &boss.post(&path, json!({})).await,
        409,
        "nonterminal_exists",
    );
    let (status, list) = boss.get(&format!("{path}?status[]=completed&status[]=validation_queued&status[]=validating&status[]=building&status[]=build_queued&status[]=verifying")).await;
    assert_eq!(status, 200);
    assert_eq!(list["items"][0]["id"], first["id"]);
    let (_, none) = boss.get(&format!("{path}?status[]=cancelled")).await;
    assert!(none["items"].as_array().unwrap().is_empty());
    let draft = boss.version(&env, busybox_context("", &[])).await;
    let retry = boss
        .post(
            &format!("/environments/{env}/versions/{draft}/retry-build"),
            json!({}),
        )
        .await;
    assert_code(&retry, 409, "retry_not_eligible");
    let provisioning = boss
        .post(
            &format!("/environments/{env}/versions/{draft}/retry-provisioning"),
            json!({}),
        )
        .await;
    assert_code(&provisioning, 409, "provisioning_retry_not_eligible");
}

#[tokio::test]
async fn a_platform_failure_is_retryable_for_seven_days() {
    let app = TestApp::spawn().await;
    let (seed, boss, _, _) = callers(&app).await;
    app.set_limits(seed.company("acme"), |l| l.active_build_limit = 0)
        .await;
    let env = boss.environment("py").await;
    let version = boss.version(&env, busybox_context("", &[])).await;
    let attempt: Uuid = boss.build(&env, &version).await["id"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let fail = |now| VersionCommand::Fail {
        attempt_id: attempt,
        failure: BuildFailure {
            terminal_class: TerminalClass::PlatformFailed,
            error_code: "platform_failed".into(),
            error_detail: None,
            stage_code: None,
        },
        report: None,
        now,
    };
    let eight_days_ago = Utc::now() - chrono::Duration::days(8);
    app.state
        .bus
        .execute::<EnvironmentVersion>(&version, fail(eight_days_ago), &operator(eight_days_ago))
        .await
        .unwrap();
    let (_, failed) = boss
        .get(&format!("/environments/{env}/versions/{version}"))
        .await;
    assert_eq!(failed["state"], "retryable_failed");
    let retry = format!("/environments/{env}/versions/{version}/retry-build");
    assert_code(
        &boss.post(&retry, json!({})).await,
        409,
        "retry_window_expired",
    );

    let fresh = boss.version(&env, busybox_context("", &[])).await;
    let attempt: Uuid = boss.build(&env, &fresh).await["id"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let now = Utc::now();
    let fail = VersionCommand::Fail {
        attempt_id: attempt,
        failure: BuildFailure {
            terminal_class: TerminalClass::PlatformFailed,
            error_code: "platform_failed".into(),
            error_detail: None,
            stage_code: None,
        },
        report: None,
        now,
    };
    app.state
        .bus
        .execute::<EnvironmentVersion>(&fresh, fail, &operator(now))
        .await
        .unwrap();
    let (_, attempt) = boss
        .get(&format!(
            "/environments/{env}/versions/{fresh}/builds/{attempt}"
        ))
        .await;
    assert!(attempt["retryable_until"].is_string());
    let (status, second) = boss
        .post(
            &format!("/environments/{env}/versions/{fresh}/retry-build"),
            json!({}),
        )
        .await;
    assert_eq!(
        (
            status,
            second["attempt_number"].as_i64(),
            second["status"].as_str()
        ),
        (200, Some(2), Some("validation_queued"))
    );
}

#[tokio::test]
async fn an_attempt_of_a_lost_worker_ends_platform_failed() {
    let app = TestApp::spawn().await;
    let (seed, boss, _, _) = callers(&app).await;
    app.set_limits(seed.company("acme"), |l| l.active_build_limit = 0)
        .await;
    let env = boss.environment("py").await;
    let version = boss.version(&env, busybox_context("", &[])).await;
    let attempt: Uuid = boss.build(&env, &version).await["id"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let claim = VersionCommand::Claim {
        attempt_id: attempt,
        worker_id: "builder-crashed".into(),
        now: Utc::now(),
    };
    app.state
        .bus
        .execute::<EnvironmentVersion>(&version, claim, &operator(Utc::now()))
        .await
        .unwrap();
    let finished = boss.finished(&env, &version, &attempt.to_string()).await;
    assert_eq!(
        (
            finished["status"].as_str(),
            finished["error_detail"].as_str()
        ),
        (Some("platform_failed"), Some("worker_lost"))
    );
    assert!(finished["retryable_until"].is_string());
    let (_, v) = boss
        .get(&format!("/environments/{env}/versions/{version}"))
        .await;
    assert_eq!(v["state"], "retryable_failed");
}

#[tokio::test]
async fn company_build_limits_hold() {
    let app = TestApp::spawn().await;
    let (seed, boss, _, _) = callers(&app).await;
    app.set_limits(seed.company("acme"), |l| {
        l.active_build_limit = 0;
        l.queued_build_limit = 1;
    })
    .await;
    let env = boss.environment("py").await;
    let first = boss.version(&env, busybox_context("", &[])).await;
    let second = boss.version(&env, busybox_context("", &[])).await;
    boss.build(&env, &first).await;
    let refused = boss
        .post(
            &format!("/environments/{env}/versions/{second}/builds"),
            json!({}),
        )
        .await;
    assert_code(&refused, 429, "build_queue_full");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (_, queued) = boss
        .get(&format!("/environments/{env}/versions/{first}/builds"))
        .await;
    assert_eq!(
        queued["items"][0]["status"], "validation_queued",
        "an active limit of 0 lets nothing start"
    );
    app.set_limits(seed.company("acme"), |l| l.active_build_limit = 2)
        .await;
    let finished = boss
        .finished(&env, &first, queued["items"][0]["id"].as_str().unwrap())
        .await;
    assert_eq!(finished["status"], "completed");
}

/// Raises or lifts the build admission fence as `sandboxctl switch` does.
async fn fence(app: &TestApp, command: domain::build_fence::FenceCommand) {
    app.state
        .bus
        .execute::<domain::build_fence::BuildFence>(
            domain::build_fence::FENCE,
            command,
            &api::admin::operator_metadata("test"),
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn a_fenced_build_admission_refuses_builds_with_a_retry_after() {
    use domain::build_fence::FenceCommand;
    let app = TestApp::spawn().await;
    let (_, boss, _, _) = callers(&app).await;
    let env = boss.environment("fenced").await;
    let version = boss.version(&env, busybox_context("", &[])).await;
    fence(
        &app,
        FenceCommand::Raise {
            retry_after_seconds: 120,
            reason: "stage image rollout".into(),
        },
    )
    .await;
    let path = format!("/environments/{env}/versions/{version}/builds");
    let response = app
        .request(
            reqwest::Method::POST,
            &format!("/private/module/sandbox{path}"),
        )
        .bearer_auth(&boss.token)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["retry-after"], "120");
    let refused = crate::support::json(response).await;
    let detail = assert_code(&refused, 503, "build_admission_fenced");
    assert_eq!(detail["retry_after_seconds"], 120);
    let (_, attempts) = boss
        .get(&format!("/environments/{env}/versions/{version}/builds"))
        .await;
    assert_eq!(attempts["items"], json!([]), "nothing was queued");
    fence(
        &app,
        FenceCommand::Lift {
            reason: "rollout done".into(),
        },
    )
    .await;
    let attempt = boss.build(&env, &version).await;
    assert_eq!(attempt["status"], "validation_queued", "{attempt}");
}

/// A build's `RUN` steps see only the build's own processes (a PID namespace with
/// its own `/proc`): not this test, nor the service, nor another tenant's run.
#[tokio::test]
async fn build_steps_see_only_the_build_s_processes() {
    let (attempt, _) = failed_build(
        "RUN ls /proc/1 > /dev/null && ! grep -qs 'deps/[h]ttp-' /proc/[0-9]*/cmdline\n",
        &[],
    )
    .await;
    assert_eq!(attempt["status"], "completed", "{attempt}");
}
