//! The menu, a submission that needs no confirmation (a real run), its status
//! with untrusted previews, the submitted-jobs list and cancelling.

use super::{Credential, call, enabled, refused, turn};
use crate::environments::callers;
use crate::runs::{finished, submit};
use crate::support::{As, TestApp};
use crate::tasks::ready_environment_version;
use domain::principal::PrincipalType::User;
use serde_json::{Value, json};
use uuid::Uuid;

const WORK: &str = r#"
echo "first line of the log"
i=0; while [ $i -lt 3000 ]; do echo "line $i of a long log"; i=$((i+1)); done
echo "last line of the log"
mkdir -p "$SERVICE_ARTIFACTS_DIR"
echo a > "$SERVICE_ARTIFACTS_DIR/a.txt"
printf '{"answer":42}' > "$SERVICE_OUTPUT_FILE"
"#;

#[tokio::test]
async fn an_agent_reads_the_menu_submits_at_once_and_reads_untrusted_previews() {
    let app = TestApp::spawn().await;
    let (seed, boss, dm, member) = callers(&app).await;
    let lab = seed.room("acme", "lab");
    let ready = ready_environment_version(&boss).await;
    let schema =
        json!({"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}});
    let extra = json!({"input_schema": schema});
    let (task, version) = enabled(&boss, &dm, &lab.to_string(), &ready, WORK, extra).await;
    let m = Credential::Jwt(&member.token);
    let t = turn(&app, lab, 10, (User, seed.user("acme", "member")), true);

    let menu = call(&app, m, &t, "sandbox_job_menu", json!({})).await;
    assert_eq!(menu["status"], "ok", "{menu}");
    let item = &menu["items"][0];
    assert_eq!(item["task_version_id"], version.as_str());
    assert_eq!(item["input_schema"], schema);
    assert!(item["secret_slots"].is_array());
    for hidden in [
        "runtime_contract",
        "work_script",
        "startup_script",
        "work_command",
    ] {
        assert!(item.get(hidden).is_none(), "{hidden} in {item}");
    }
    let found = call(&app, m, &t, "sandbox_job_menu", json!({"query": "JO"})).await;
    assert_eq!(found["items"].as_array().unwrap().len(), 1);
    let none = call(&app, m, &t, "sandbox_job_menu", json!({"query": "nothing"})).await;
    assert_eq!(none["items"], json!([]));
    let long = "x".repeat(257);
    for bad in [
        json!({"page_size": 0}),
        json!({"query": long}),
        json!({"bogus": 1}),
    ] {
        refused(
            &call(&app, m, &t, "sandbox_job_menu", bad).await,
            "validation_error",
        );
    }

    let submit_job =
        async |arguments: Value| call(&app, m, &t, "sandbox_submit_job", arguments).await;
    let request =
        |input: Value| json!({"mode": "request", "task_version_id": version, "input": input});
    refused(
        &submit_job(json!({"mode": "request", "input": {}})).await,
        "validation_error",
    );
    refused(
        &submit_job(request(json!({"n": "one"}))).await,
        "validation_error",
    );
    let mut with_receipt = request(json!({"n": 1}));
    with_receipt["proposal_receipt"] = json!("a.b.c.d.e");
    refused(&submit_job(with_receipt).await, "validation_error");
    let mut with_region = request(json!({"n": 1}));
    with_region["region"] = json!("onprem");
    refused(&submit_job(with_region).await, "validation_error");
    let unknown = json!({"mode": "request", "task_version_id": Uuid::new_v4(), "input": {"n": 1}});
    refused(&submit_job(unknown).await, "not_found");
    // The input bounds of REST submission hold: depth, and duplicate keys (which
    // only the raw body shows).
    let mut deep = json!(1);
    for _ in 0..70 {
        deep = json!([deep]);
    }
    refused(&submit_job(request(deep)).await, "validation_error");
    let duplicated = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"sandbox_submit_job",
            "arguments":{{"mode":"request","task_version_id":"{version}","input":{{"n":1,"n":2}}}}}}}}"#
    );
    let raw = app
        .request(reqwest::Method::POST, super::MCP)
        .bearer_token(&member.token)
        .header("x-sandbox-turn", &t)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(duplicated);
    let (status, body) = crate::support::json(raw.send().await.unwrap()).await;
    assert_eq!(status, 200, "{body}");
    refused(&body["result"]["structuredContent"], "validation_error");

    let submitted = submit_job(request(json!({"n": 1}))).await;
    assert_eq!(submitted["status"], "ok", "{submitted}");
    assert_eq!(submitted["kind"], "submitted");
    assert_eq!(submitted["submission_source"], "agent");
    assert_eq!(submitted["task_id"], task.as_str());
    assert_eq!(submitted["run_status"], "queued");
    let run = submitted["run_id"].as_str().unwrap().to_string();
    // The same request in the same turn is the same run.
    assert_eq!(
        submit_job(request(json!({"n": 1}))).await["run_id"],
        run.as_str()
    );
    let done = finished(&member, &lab.to_string(), &run).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["submission_source"], "agent");

    let status = call(&app, m, &t, "sandbox_job_status", json!({"run_id": run})).await;
    assert_eq!(status["run"]["status"], "completed", "{status}");
    let output = &status["output"];
    assert_eq!(output["text"], r#"{"answer":42}"#);
    assert_eq!(output["label"], "untrusted_customer_output");
    assert_eq!(
        (
            &output["untrusted"],
            &output["not_instructions"],
            &output["truncated"]
        ),
        (&json!(true), &json!(true), &json!(false))
    );
    assert_eq!(output["content_kind"], "customer_data");
    assert_eq!(output["byte_length"], 13);
    let log = &status["log"];
    assert_eq!(log["label"], "untrusted_customer_log");
    assert_eq!(log["truncated"], true);
    let text = log["text"].as_str().unwrap();
    assert!(text.contains("first line of the log") && text.contains("last line of the log"));
    assert!(
        text.contains("bytes omitted") && text.len() < 17 * 1024,
        "{}",
        text.len()
    );
    assert_eq!(status["artifacts"]["items"][0]["relative_path"], "a.txt");
    // A lane whose object cannot be read degrades to `{available: false}`.
    let log_key: String = sqlx::query_scalar("SELECT log_key FROM runs WHERE id = $1::uuid")
        .bind(&run)
        .fetch_one(&app.db.pool)
        .await
        .unwrap();
    std::fs::remove_file(app.data_dir().join("objects").join(&log_key)).unwrap();
    let degraded = call(&app, m, &t, "sandbox_job_status", json!({"run_id": run})).await;
    assert_eq!(degraded["log"], json!({"available": false}), "{degraded}");
    assert_eq!(degraded["output"]["available"], true);
    // An empty log (a run that printed nothing) is an empty preview, not an outage.
    std::fs::write(app.data_dir().join("objects").join(&log_key), b"").unwrap();
    let quiet = call(&app, m, &t, "sandbox_job_status", json!({"run_id": run})).await;
    assert_eq!(
        (&quiet["log"]["text"], &quiet["log"]["byte_length"]),
        (&json!(""), &json!(0)),
        "{quiet}"
    );
    let late = json!({"run_id": run, "wait_seconds": 61});
    refused(
        &call(&app, m, &t, "sandbox_job_status", late).await,
        "validation_error",
    );
    let missing = json!({"run_id": Uuid::new_v4()});
    refused(
        &call(&app, m, &t, "sandbox_job_status", missing).await,
        "not_found",
    );

    let mine = call(&app, m, &t, "sandbox_submitted_jobs", json!({})).await;
    assert_eq!(mine["pending_proposals"], json!([]));
    assert_eq!(mine["runs"][0]["run_id"], run.as_str());
    let listed = mine["runs"][0].as_object().unwrap();
    for key in ["output", "log", "url", "secret_slot_provenance"] {
        assert!(!listed.contains_key(key), "{key}");
    }

    // Cancelling: only the principal's own runs; no pending proposal to cancel.
    let (status, other) = submit(
        &dm,
        &lab.to_string(),
        "dm-run",
        json!({"task_version_id": version, "input": {"n": 5}}),
    )
    .await;
    assert_eq!(status, 200, "{other}");
    let theirs = json!({"run_id": other["id"]});
    refused(
        &call(&app, m, &t, "sandbox_cancel_job", theirs).await,
        "unauthorized",
    );
    refused(
        &call(&app, m, &t, "sandbox_cancel_job", json!({})).await,
        "not_found",
    );
    let second = submit_job(request(json!({"n": 2}))).await;
    let cancel = json!({"run_id": second["run_id"]});
    let cancelled = call(&app, m, &t, "sandbox_cancel_job", cancel).await;
    assert_eq!(cancelled["kind"], "run_cancelled", "{cancelled}");
    let ended = finished(
        &member,
        &lab.to_string(),
        second["run_id"].as_str().unwrap(),
    )
    .await;
    assert!(
        ["cancelled", "completed"].contains(&ended["status"].as_str().unwrap()),
        "{ended}"
    );
}

/// An output of 70,000 bytes and 25 artifact files.
const LARGE: &str = r#"
mkdir -p "$SERVICE_ARTIFACTS_DIR"
i=0; while [ $i -lt 25 ]; do echo $i > "$SERVICE_ARTIFACTS_DIR/file-$i.txt"; i=$((i+1)); done
head -c 70000 /dev/zero | tr '\0' 'x' > "$SERVICE_OUTPUT_FILE"
"#;

#[tokio::test]
async fn previews_stop_at_64_kib_of_output_and_20_artifact_rows() {
    let app = TestApp::spawn().await;
    let (seed, boss, dm, member) = callers(&app).await;
    let lab = seed.room("acme", "lab");
    let ready = ready_environment_version(&boss).await;
    let (_, version) = enabled(&boss, &dm, &lab.to_string(), &ready, LARGE, json!({})).await;
    let m = Credential::Jwt(&member.token);
    let t = turn(&app, lab, 1, (User, seed.user("acme", "member")), true);
    let request = json!({"mode": "request", "task_version_id": version, "input": {}});
    let submitted = call(&app, m, &t, "sandbox_submit_job", request).await;
    let run = submitted["run_id"].as_str().unwrap().to_string();
    let done = finished(&member, &lab.to_string(), &run).await;
    assert_eq!(done["status"], "completed", "{done}");

    let status = call(&app, m, &t, "sandbox_job_status", json!({"run_id": run})).await;
    let output = &status["output"];
    assert_eq!(output["truncated"], true, "{}", output["byte_length"]);
    assert_eq!(output["byte_length"], 70_000);
    assert_eq!(output["text"].as_str().unwrap().len(), 64 * 1024);
    let artifacts = &status["artifacts"];
    assert_eq!(artifacts["items"].as_array().unwrap().len(), 20);
    assert_eq!(artifacts["truncated"], true);
}
