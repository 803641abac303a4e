//! The writeback output policy end to end: a real run (buildah, busybox) writes
//! records of a custom table through the credential it receives, as its submitter;
//! the refusals at publish and submission; authority withdrawn during the run; the
//! credential revoked at the run's end and its secret nowhere else.

use super::{finished, named_records as records, submit, table_caller as caller};
use crate::support::{As, assert_code, captured_log};
use crate::tables::fixture::Tables;
use crate::tasks::ready_environment_version;
use reqwest::Method;
use serde_json::json;
use std::time::{Duration, Instant};

/// Writes one record, then waits until the credential may no longer create records
/// (its form schema refuses), then tries a second one; keeps the credential in the
/// output so the test can try it after the run.
const WRITER: &str = r#"
auth="Authorization: Bearer $SERVICE_CT_WRITEBACK_TOKEN"
post() {
  wget -q -O - --header "$auth" --header 'Content-Type: application/json' \
       --post-data "{\"op\":\"create\",\"data\":{\"name\":\"$1\"}}" "$SERVICE_CT_WRITEBACK_URL" 2>&1
}
echo "first=$(post first)"
i=0
while wget -q -O /dev/null --header "$auth" "$SERVICE_CT_WRITEBACK_URL/form-schema" 2>/dev/null; do
  i=$((i+1)); [ $i -gt 300 ] && break; sleep 0.2
done
# The second write shows the whole answer (status line and body) through nc.
raw() {
  hostport=${SERVICE_CT_WRITEBACK_URL#http://}; hostport=${hostport%%/*}
  path=/${SERVICE_CT_WRITEBACK_URL#http://*/}
  body="{\"op\":\"create\",\"data\":{\"name\":\"$1\"}}"
  printf 'POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %s\r\n\r\n%s' \
    "$path" "$hostport" "$SERVICE_CT_WRITEBACK_TOKEN" "${#body}" "$body" \
    | nc "${hostport%:*}" "${hostport#*:}" | tr -d '\r' | sed -n '1p;$p' | tr '\n' ' '
}
echo "second=$(raw second)"
echo "other=$(wget -q -O - "$(echo "$SERVICE_CT_WRITEBACK_URL" | sed 's#/public/.*#/openapi.json#')" 2>&1)"
printf '%s %s' "$SERVICE_CT_WRITEBACK_URL" "$SERVICE_CT_WRITEBACK_TOKEN" > "$SERVICE_OUTPUT_FILE"
"#;

async fn default_permissions(t: &Tables, table: &str, insert: bool) {
    let body = json!({"can_read": "all", "can_insert": insert, "can_edit": "none"});
    let path = format!("{table}/default-permissions");
    let (status, answer) = t.call(Method::PATCH, &path, "boss", Some(body)).await;
    assert_eq!(status, 200, "{answer}");
}

#[tokio::test]
async fn a_run_writes_records_as_its_submitter_until_its_authority_is_withdrawn() {
    let t = Tables::new().await;
    let (boss, dm, member) = (caller(&t, "boss"), caller(&t, "dm"), caller(&t, "member"));
    let table = t.table("company", "boss", "leads").await;
    t.column(&table, json!({"name": "name", "type": "string"}))
        .await;
    let table_id = table.rsplit('/').next().unwrap().to_string();
    // Company members read the table but create nothing (until granted below).
    default_permissions(&t, &table, false).await;
    let ready = ready_environment_version(&boss).await;

    let rnd = t.department("rnd").to_string();
    let (status, task) = dm
        .post(
            "/tasks",
            json!({"name": "lead writer", "owner_scope": "department", "owner_id": rnd}),
        )
        .await;
    assert_eq!(status, 200, "{task}");
    let task = task["id"].as_str().unwrap().to_string();
    let policy =
        json!({"kind": "custom_table_writeback", "table_id": table_id, "allowed_ops": "create"});
    let fields = json!({"environment_version_id": ready, "work_script": WRITER,
                        "timeout_seconds": 120, "output_policy": policy.clone()});
    let (status, version) = dm.post(&format!("/tasks/{task}/versions"), fields).await;
    assert_eq!(status, 200, "{version}");
    let version = version["id"].as_str().unwrap().to_string();
    let publish = format!("/tasks/{task}/versions/{version}/publish");
    // The department manager may not create records of the company's table.
    assert_code(
        &dm.post(&publish, json!({})).await,
        403,
        "output_policy_author_denied",
    );
    let (status, published) = boss.post(&publish, json!({})).await;
    assert_eq!(status, 200, "{published}");
    let company = t.seed.company("acme");
    let share = json!({"target_kind": "company", "target_id": company});
    let (status, grant) = boss.post(&format!("/tasks/{task}/shares"), share).await;
    assert_eq!(status, 200, "{grant}");

    // A submitter who may not create the records is refused, and nothing is queued.
    let lab = t.seed.room("acme", "lab").to_string();
    let run_body = json!({"task_version_id": version, "input": {}});
    assert_code(
        &submit(&member, &lab, "w1", run_body.clone()).await,
        403,
        "writeback_authority_denied",
    );
    let (_, history) = member.get(&format!("/chatrooms/{lab}/runs")).await;
    assert_eq!(history["items"], json!([]), "{history}");

    default_permissions(&t, &table, true).await;
    let (status, run) = submit(&member, &lab, "w2", run_body).await;
    assert_eq!(status, 200, "{run}");
    let run_id = run["id"].as_str().unwrap().to_string();
    let started = Instant::now();
    while records(&t, &table).await.is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no record written"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Authority withdrawn during the run: the next write is refused.
    default_permissions(&t, &table, false).await;
    let done = finished(&member, &lab, &run_id).await;
    assert_eq!(done["status"], "completed", "{done}");

    let user = format!("user:{}", t.user("member"));
    assert_eq!(records(&t, &table).await, [("first".to_string(), user)]);
    let log = crate::runs::fetch_public(&member, &lab, &run_id, "log").await;
    let log = log.text().await.unwrap();
    assert!(log.contains("first={\"ok\":true"), "{log}");
    let line = |name: &str| {
        log.lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_default()
            .to_string()
    };
    assert!(line("second=").contains("403 Forbidden"), "{log}");
    assert!(
        line("other=").contains("403") && !log.contains("openapi\":"),
        "the door lets nothing but callback routes through: {log}"
    );

    // The credential was revoked at the run's end; its secret is only in what the
    // run chose to write, never in the log, the database, the server log or the
    // moderators' token list.
    let output = crate::runs::fetch_public(&member, &lab, &run_id, "output").await;
    let output = output.text().await.unwrap();
    let (url, secret) = output.split_once(' ').expect("url and secret");
    assert!(secret.len() >= 40, "{output}");
    let token_id = url.rsplit('/').next().unwrap();
    let after = t
        .app
        .request(
            Method::POST,
            &format!("/public/module/custom_tables/callback/{token_id}"),
        )
        .bearer_token(secret)
        .json(&json!({"op": "create", "data": {"name": "late"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(after.status().as_u16(), 404);
    assert!(!log.contains(secret));
    assert!(
        !t.app.pg_dump().contains(secret),
        "the secret is in the database"
    );
    assert!(
        !captured_log().contains(secret),
        "the secret is in the server log"
    );
    let (status, tokens) = t
        .call(
            Method::GET,
            &format!("{table}/callback-tokens"),
            "boss",
            None,
        )
        .await;
    assert_eq!(status, 200, "{tokens}");
    assert_eq!(
        tokens["tokens"],
        json!([]),
        "run credentials are not listed"
    );

    // The table becomes commands-only during a run: its credential, minted before,
    // is refused (403 `governed_context_required`); then new runs are refused at
    // submission and new drafts at once.
    default_permissions(&t, &table, true).await;
    let run_body = json!({"task_version_id": version, "input": {}});
    let (status, run) = submit(&member, &lab, "w3", run_body.clone()).await;
    assert_eq!(status, 200, "{run}");
    let run_id = run["id"].as_str().unwrap().to_string();
    let started = Instant::now();
    while records(&t, &table).await.len() < 2 {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no record written"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let governed = json!({"settings": {"agent_writes_via_commands_only": true}});
    let (status, body) = t.call(Method::PATCH, &table, "boss", Some(governed)).await;
    assert_eq!(status, 200, "{body}");
    let done = finished(&member, &lab, &run_id).await;
    assert_eq!(done["status"], "completed", "{done}");
    let log = crate::runs::fetch_public(&member, &lab, &run_id, "log").await;
    let log = log.text().await.unwrap();
    let second = log
        .lines()
        .find(|l| l.starts_with("second="))
        .unwrap_or_default();
    assert!(
        second.contains("403") && second.contains("governed_context_required"),
        "{log}"
    );
    assert_eq!(records(&t, &table).await.len(), 2);
    assert_code(
        &submit(&member, &lab, "w4", run_body).await,
        409,
        "output_policy_unsatisfiable",
    );
    let fields = json!({"environment_version_id": ready, "output_policy": policy});
    assert_code(
        &dm.post(&format!("/tasks/{task}/versions"), fields).await,
        422,
        "output_policy_governed_table",
    );
}

#[tokio::test]
async fn a_writeback_policy_needs_a_table_that_takes_writes() {
    let t = Tables::new().await;
    let (boss, dm) = (caller(&t, "boss"), caller(&t, "dm"));
    let ready = ready_environment_version(&boss).await;
    let rnd = t.department("rnd").to_string();
    let (_, task) = dm
        .post(
            "/tasks",
            json!({"name": "w", "owner_scope": "department", "owner_id": rnd}),
        )
        .await;
    let task = task["id"].as_str().unwrap().to_string();
    let versions = format!("/tasks/{task}/versions");
    let draft = |table: &str| {
        json!({"environment_version_id": ready, "output_policy":
               {"kind": "custom_table_writeback", "table_id": table, "allowed_ops": "create,update"}})
    };
    let missing = uuid::Uuid::new_v4().to_string();
    assert_code(
        &dm.post(&versions, draft(&missing)).await,
        422,
        "output_policy_table_not_found",
    );

    // A department table of rnd: its manager publishes a policy writing it; once a
    // channel policy governs the table, a draft naming it is refused and the
    // published version's runs are refused at submission.
    let table = t.table("department:rnd", "dm", "leads").await;
    t.column(&table, json!({"name": "region", "type": "string"}))
        .await;
    let table_id = table.rsplit('/').next().unwrap().to_string();
    let (status, version) = dm.post(&versions, draft(&table_id)).await;
    assert_eq!(status, 200, "{version}");
    let version = version["id"].as_str().unwrap().to_string();
    let publish = format!("{versions}/{version}/publish");
    let (status, published) = dm.post(&publish, json!({})).await;
    assert_eq!(status, 200, "{published}");
    let company = t.seed.company("acme");
    let share = json!({"target_kind": "company", "target_id": company});
    let (status, grant) = dm.post(&format!("/tasks/{task}/shares"), share).await;
    assert_eq!(status, 200, "{grant}");
    let governed = json!({"channel_scope_column": "region"});
    let (status, body) = t.call(Method::PATCH, &table, "dm", Some(governed)).await;
    assert_eq!(status, 200, "{body}");
    assert_code(
        &dm.post(&versions, draft(&table_id)).await,
        422,
        "output_policy_channel_table",
    );
    let lab = t.seed.room("acme", "lab").to_string();
    let run_body = json!({"task_version_id": version, "input": {}});
    assert_code(
        &submit(&dm, &lab, "g1", run_body).await,
        409,
        "output_policy_unsatisfiable",
    );
}
