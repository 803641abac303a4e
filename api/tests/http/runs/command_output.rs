//! The Command-output policy end to end: a real run (buildah, busybox) runs its
//! version's Command through the command-output route with the run's sealed
//! secret; the checks at draft, publish and submission (rule 8); a Command changed
//! or authority withdrawn during a run; the credential after the run.

use super::{finished, named_records as names, submit, table_caller as caller};
use crate::support::{As, assert_code, json};
use crate::tables::fixture::Tables;
use crate::tasks::ready_environment_version;
use reqwest::Method;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Runs the Command once, sends inputs outside its schema until the answer
/// changes (the test changes something), then runs it once more. `raw` prints the
/// whole answer (status line and body) through nc.
const OUTPUT: &str = r#"
raw() {
  hostport=${SERVICE_CT_WRITEBACK_URL#http://}; hostport=${hostport%%/*}
  path=/${SERVICE_CT_WRITEBACK_URL#http://*/}
  printf 'POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %s\r\n\r\n%s' \
    "$path" "$hostport" "$SERVICE_CT_WRITEBACK_TOKEN" "${#1}" "$1" \
    | nc "${hostport%:*}" "${hostport#*:}" | tr -d '\r' | sed -n '1p;$p' | tr '\n' ' '
}
echo "first=$(raw '{"inputs":{"name":"from run"}}')"
echo "bad=$(raw '{"inputs":{"name":5}}')"
i=0
while raw '{"inputs":{"name":5}}' | grep -q output_schema_violation; do
  i=$((i+1)); [ $i -gt 300 ] && break; sleep 0.2
done
echo "last=$(raw '{"inputs":{"name":"late"}}')"
printf '%s %s' "$SERVICE_CT_WRITEBACK_URL" "$SERVICE_CT_WRITEBACK_TOKEN" > "$SERVICE_OUTPUT_FILE"
"#;

fn inputs() -> Value {
    json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})
}

/// Waits until the table holds `count` records.
async fn until_records(t: &Tables, table: &str, count: usize) {
    let started = Instant::now();
    while names(t, table).await.len() < count {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no record written"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn line(log: &str, name: &str) -> String {
    log.lines()
        .find(|l| l.starts_with(name))
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn a_run_runs_its_command_with_its_sealed_secret() {
    let t = Tables::new().await;
    let (boss, dm, member) = (caller(&t, "boss"), caller(&t, "dm"), caller(&t, "member"));
    let table = t.table("company", "boss", "leads").await;
    t.column(&table, json!({"name": "name", "type": "string"}))
        .await;
    let readers = json!({"can_read": "all", "can_insert": false, "can_edit": "none"});
    let defaults = format!("{table}/default-permissions");
    t.call(Method::PATCH, &defaults, "boss", Some(readers))
        .await;
    let table_id = table.rsplit('/').next().unwrap().to_string();
    let commands = format!("{}/commands", t.mount("company"));
    let definition = json!({"table_id": table_id, "name": "add lead", "kind": "write",
        "authority": "definition", "inputs": inputs(),
        "write": {"op": "upsert", "values": {"name": "$input.name"},
                  "match": {"name": "$input.name"}}});
    let (status, command) = t
        .call(Method::POST, &commands, "boss", Some(definition.clone()))
        .await;
    assert_eq!(status, 201, "{command}");
    let command_id = command["id"].as_str().unwrap().to_string();
    let mut by_caller = definition.clone();
    by_caller["authority"] = json!("caller");
    let (_, by_caller) = t
        .call(Method::POST, &commands, "boss", Some(by_caller))
        .await;

    let ready = ready_environment_version(&boss).await;
    let rnd = t.department("rnd").to_string();
    let lab = t.seed.room("acme", "lab").to_string();
    let (_, task) = dm
        .post(
            "/tasks",
            json!({"name": "lead intake", "owner_scope": "department", "owner_id": rnd}),
        )
        .await;
    let task = task["id"].as_str().unwrap().to_string();
    let versions = format!("/tasks/{task}/versions");
    let policy = |command: &str, schema: Value| {
        json!({"environment_version_id": ready, "work_script": OUTPUT, "timeout_seconds": 120,
               "output_policy": {"kind": "custom_table_command", "command_id": command,
                                 "chatroom_id": lab, "input_schema": schema}})
    };
    // Draft: the Command must exist, write, and take exactly the policy's inputs.
    let unknown = uuid::Uuid::new_v4().to_string();
    assert_code(
        &dm.post(&versions, policy(&unknown, inputs())).await,
        422,
        "output_policy_command_not_found",
    );
    assert_code(
        &dm.post(&versions, policy(&command_id, json!({"type": "object"})))
            .await,
        422,
        "output_policy_schema_mismatch",
    );
    // Publish: a caller-authority Command is refused.
    let (status, loose) = dm
        .post(
            &versions,
            policy(by_caller["id"].as_str().unwrap(), inputs()),
        )
        .await;
    assert_eq!(status, 200, "{loose}");
    let loose = loose["id"].as_str().unwrap();
    assert_code(
        &dm.post(&format!("{versions}/{loose}/publish"), json!({}))
            .await,
        403,
        "output_policy_author_denied",
    );
    let (status, version) = dm.post(&versions, policy(&command_id, inputs())).await;
    assert_eq!(status, 200, "{version}");
    let version = version["id"].as_str().unwrap().to_string();
    let (status, published) = dm
        .post(&format!("{versions}/{version}/publish"), json!({}))
        .await;
    assert_eq!(status, 200, "{published}");
    let company = t.seed.company("acme");
    let share = json!({"target_kind": "company", "target_id": company});
    let (status, _) = dm.post(&format!("/tasks/{task}/shares"), share).await;
    assert_eq!(status, 200);

    // Rule 8: only a person with a session, in the policy's room; nothing queued.
    let body = json!({"task_version_id": version, "input": {}});
    let ops = t.seed.room("acme", "ops-room").to_string();
    assert_code(
        &submit(&boss, &ops, "r1", body.clone()).await,
        403,
        "output_policy_author_denied",
    );
    let by_key = t
        .app
        .request(
            Method::POST,
            &format!("{}/chatrooms/{lab}/runs", crate::environments::SANDBOX),
        )
        .api_key(&t.seed.key("acme", "full"))
        .header("idempotency-key", "r2")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_code(&json(by_key).await, 403, "output_policy_author_denied");
    let (_, history) = boss.get(&format!("/chatrooms/{lab}/runs")).await;
    assert_eq!(history["items"], json!([]), "{history}");

    // A run runs the Command as its author; a Command changed during the run is
    // stale for it.
    let (status, run) = submit(&member, &lab, "r3", body.clone()).await;
    assert_eq!(status, 200, "{run}");
    let run = run["id"].as_str().unwrap().to_string();
    until_records(&t, &table, 1).await;
    let command_path = format!("{commands}/{command_id}");
    let (status, _) = t
        .call(Method::PUT, &command_path, "boss", Some(definition))
        .await;
    assert_eq!(status, 200);
    let done = finished(&member, &lab, &run).await;
    assert_eq!(done["status"], "completed", "{done}");
    let log = crate::runs::fetch_public(&member, &lab, &run, "log").await;
    let log = log.text().await.unwrap();
    assert!(line(&log, "first=").contains("200 OK"), "{log}");
    assert!(
        line(&log, "first=").contains("\"value_type\":\"string\""),
        "{log}"
    );
    assert!(
        line(&log, "bad=").contains("422") && log.contains("output_schema_violation"),
        "{log}"
    );
    assert!(
        line(&log, "last=").contains("output_command_stale"),
        "{log}"
    );
    let boss_ref = format!("user:{}", t.user("boss"));
    assert_eq!(
        names(&t, &table).await,
        [("from run".to_string(), boss_ref.clone())]
    );

    // A match that finds two records is a conflict; authority withdrawn during a
    // run (the submitter no longer reads the table) is refused. The script is in
    // its waiting loop a few seconds after the run started.
    let (status, _) = t.insert(&table, "boss", json!({"name": "from run"})).await;
    assert_eq!(status, 201);
    let (status, run) = submit(&member, &lab, "r4", body).await;
    assert_eq!(status, 200, "{run}");
    let run = run["id"].as_str().unwrap().to_string();
    super::running(&member, &lab, &run).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let hidden = json!({"can_read": "none", "can_insert": false, "can_edit": "none"});
    t.call(Method::PATCH, &defaults, "boss", Some(hidden)).await;
    let done = finished(&member, &lab, &run).await;
    assert_eq!(done["status"], "completed", "{done}");
    let log = crate::runs::fetch_public(&member, &lab, &run, "log").await;
    let log = log.text().await.unwrap();
    assert!(
        line(&log, "first=").contains("output_command_conflict"),
        "{log}"
    );
    assert!(
        line(&log, "last=").contains("output_policy_author_denied"),
        "{log}"
    );
    assert_eq!(names(&t, &table).await.len(), 2);

    // After the run: the credential is revoked (409); a wrong secret is 404; the
    // token and body are checked for shape first (422).
    let output = crate::runs::fetch_public(&member, &lab, &run, "output").await;
    let output = output.text().await.unwrap();
    let (url, secret) = output.split_once(' ').expect("url and secret");
    let path = url
        .split_once("/public/")
        .map(|(_, p)| format!("/public/{p}"))
        .unwrap();
    let app = &t.app;
    let send = |path: String, secret: String, body: Value| async move {
        let response = app
            .request(Method::POST, &path)
            .bearer_token(&secret)
            .json(&body)
            .send()
            .await
            .unwrap();
        json(response).await
    };
    let ok = json!({"inputs": {"name": "after"}});
    assert_code(
        &send(path.clone(), secret.into(), ok.clone()).await,
        409,
        "output_run_unavailable",
    );
    assert_code(
        &send(path.clone(), "wrong".into(), ok.clone()).await,
        404,
        "output_run_unavailable",
    );
    let (status, _) = send(
        "/public/module/custom_tables/callback/command-output/not-a-uuid".into(),
        secret.into(),
        ok,
    )
    .await;
    assert_eq!(status, 422);
    let (status, _) = send(path, secret.into(), json!({"inputs": {}, "extra": 1})).await;
    assert_eq!(status, 422);
    assert!(
        !t.app.pg_dump().contains(secret),
        "the secret is in the database"
    );
}
