//! Task bundles: uploads scanned under the bundle rules (422 `bundle_path_forbidden`
//! naming the entry), a version pinning one, the run finding its files in
//! `/workspace`, and the runner release gate (409 `task_bundle_runner_unsupported`,
//! `runner_release_approved`, `runner_release_next_action`).

use super::{company_task, draft};
use crate::environments::{Caller, busybox_context, callers, tar_gz};
use crate::runs::{fetch_public, finished, submit};
use crate::support::{As, TestApp, assert_code, json, multipart_file};
use domain::principal::{Actor, EventMetadata};
use domain::runner_release::{BUILT_IN, ReleaseCommand, RunnerRelease};
use reqwest::Method;
use serde_json::{Value, json as body};
use std::io::Write;

/// A tar.gz whose entry names are written as given (no path checks).
fn raw_tar_gz(entries: &[(&[u8], &[u8])]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (name, content) in entries {
        let mut header = tar::Header::new_old();
        header.as_old_mut().name[..name.len()].copy_from_slice(name);
        header.set_size(content.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder.append(&header, *content).unwrap();
    }
    let tar = builder.into_inner().unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&tar).unwrap();
    gz.finish().unwrap()
}

async fn upload(caller: &Caller<'_>, task: &str, archive: Vec<u8>) -> (u16, Value) {
    let (content_type, payload) = multipart_file("bundle.tar.gz", "application/gzip", &archive);
    let request = caller
        .app
        .request(
            Method::POST,
            &format!("/private/module/sandbox/tasks/{task}/bundle-uploads"),
        )
        .bearer_token(&caller.token)
        .header("content-type", content_type)
        .body(payload);
    json(request.send().await.unwrap()).await
}

async fn release(app: &TestApp, command: ReleaseCommand) {
    let meta = EventMetadata {
        actor: Actor::Operator("test".into()),
        company_id: None,
        request_id: "test".into(),
        time: chrono::Utc::now(),
    };
    app.state
        .bus
        .execute::<RunnerRelease>(BUILT_IN, command, &meta)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_bundle_is_unpacked_into_the_workspace_on_an_approved_runner_only() {
    let app = TestApp::spawn().await;
    let (seed, boss, _, member) = callers(&app).await;
    let lab = seed.room("acme", "lab").to_string();
    let task = company_task(&boss, "bundled").await;

    // Refused entries, each named.
    for (name, rule) in [
        (&b"work.sh"[..], "reserved root name"),
        (b"artifacts/x.csv", "reserved root name"),
        (b"/etc/passwd", "absolute path"),
        (b"C:/x", "drive-absolute path"),
        (b"a\\b", "backslash"),
        (b"../up", "escapes"),
    ] {
        let (status, refused) = upload(&boss, &task, raw_tar_gz(&[(name, b"x")])).await;
        let detail = assert_code(&(status, refused), 422, "bundle_path_forbidden");
        let message = detail["message"].as_str().unwrap();
        assert!(
            message.contains(&*String::from_utf8_lossy(name)) && message.contains(rule),
            "{message}"
        );
    }
    let (status, stranger) = upload(
        &Caller {
            app: &app,
            token: seed.token("globex", "ceo"),
        },
        &task,
        tar_gz(&[("a", b"b")]),
    )
    .await;
    assert_eq!(status, 404, "{stranger}");

    // A valid bundle, pinned by a published version.
    let bundle = tar_gz(&[
        ("data/hello.txt", b"hello"),
        ("bin/tool.sh", b"echo tool\n"),
    ]);
    let (status, uploaded) = upload(&boss, &task, bundle).await;
    assert_eq!(status, 200, "{uploaded}");
    assert_eq!(
        (
            uploaded["archive_format"].as_str(),
            uploaded["entries"].as_i64()
        ),
        (Some("tar.gz"), Some(2))
    );
    let env = boss.environment("bundles").await;
    let version = boss.version(&env, busybox_context("", &[])).await;
    let attempt = boss.build(&env, &version).await;
    let done = boss
        .finished(&env, &version, attempt["id"].as_str().unwrap())
        .await;
    assert_eq!(done["terminal_class"], "completed", "{done}");
    let fields = body!({
        "environment_version_id": version,
        "work_script": "printf '{\"bundled\":\"%s\"}' \"$(cat data/hello.txt)\" > \"$SERVICE_OUTPUT_FILE\"\n",
        "bundle_id": uploaded["bundle_id"],
        "timeout_seconds": 60,
    });
    let (status, drafted) = draft(&boss, &task, fields).await;
    assert_eq!(status, 200, "{drafted}");
    assert_eq!(drafted["bundle"]["digest"], uploaded["digest"], "{drafted}");
    let id = drafted["id"].as_str().unwrap().to_string();
    let publish = format!("/tasks/{task}/versions/{id}/publish");
    let (status, published) = boss.post(&publish, body!({})).await;
    assert_eq!(status, 200, "{published}");
    let company = boss.get("/me").await.1["company_id"].clone();
    let share = body!({"target_kind": "company", "target_id": company});
    assert_eq!(
        boss.post(&format!("/tasks/{task}/shares"), share).await.0,
        200
    );

    // The run reads the bundled file.
    let run_body = body!({"task_version_id": id, "input": {}});
    let (status, run) = submit(&member, &lab, "b1", run_body.clone()).await;
    assert_eq!(status, 200, "{run}");
    let run_id = run["id"].as_str().unwrap();
    let ended = finished(&member, &lab, run_id).await;
    assert_eq!(ended["status"], "completed", "{ended}");
    let output = fetch_public(&member, &lab, run_id, "output").await;
    assert_eq!(output.text().await.unwrap(), r#"{"bundled":"hello"}"#);

    // The operator withdraws the runner release: the version says so and bundle
    // runs are refused until it is approved again.
    let path = format!("/environments/{env}/versions/{version}");
    assert_eq!(boss.get(&path).await.1["runner_release_approved"], true);
    release(
        &app,
        ReleaseCommand::Withdraw {
            release: BUILT_IN.into(),
            reason: "a flaw in the runner".into(),
        },
    )
    .await;
    let (_, shown) = boss.get(&path).await;
    assert_eq!(
        (
            shown["runner_release_approved"].as_bool(),
            shown["runner_release_next_action"].as_str()
        ),
        (Some(false), Some("rebuild_on_approved_runner"))
    );
    assert_code(
        &submit(&member, &lab, "b2", run_body.clone()).await,
        409,
        "task_bundle_runner_unsupported",
    );
    release(
        &app,
        ReleaseCommand::Approve {
            release: BUILT_IN.into(),
            reason: "fixed".into(),
        },
    )
    .await;
    let (status, again) = submit(&member, &lab, "b3", run_body).await;
    assert_eq!(status, 200, "{again}");

    // Bundle uploads count toward the company's 5 upload inits a minute (with the
    // bundle and the context uploaded above).
    let mut answers = Vec::new();
    for _ in 0..4 {
        answers.push(upload(&boss, &task, tar_gz(&[("a", b"b")])).await);
    }
    let statuses: Vec<u16> = answers.iter().map(|(status, _)| *status).collect();
    assert_eq!(statuses, vec![200, 200, 200, 429], "{answers:?}");
    assert_code(&answers[3], 429, "upload_rate_limited");
}
