//! A secret written by an independent client reaches the run that pinned it and
//! nothing else: not a response, the event log, an export, a database dump or the
//! server log; revoking shreds it so that even the database with the KEK opens
//! nothing.

use super::{public_key, python_seal, secret_post, write_body};
use crate::environments::callers;
use crate::runs::{finished, runnable, submit};
use crate::support::{TestApp, captured_log};
use crate::tasks::ready_environment_version;
use domain::secrets::ConsumerScope;
use domain::secrets::binding::secret_binding_aggregate_id;
use projections::audit::export::{ExportFilter, Exporter};
use serde_json::json;
use sha2::{Digest, Sha256};

const PLAINTEXT: &str = "tok-7Qz9-plaintext-never-leaks-41c3";

/// The work proves it saw the value by writing its SHA-256, never the value.
const WORK: &str = "printf '%s' \"$API_TOKEN\" | sha256sum | cut -d' ' -f1 | tr -d '\\n' > \"$SERVICE_OUTPUT_FILE\"\n";

async fn output_of(
    app: &TestApp,
    caller: &crate::environments::Caller<'_>,
    room: &str,
    run: &str,
) -> String {
    let (_, link) = caller
        .post(
            &format!("/chatrooms/{room}/runs/{run}/output/public-link"),
            json!({}),
        )
        .await;
    let response = app
        .client
        .get(link["url"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    response.text().await.unwrap()
}

#[tokio::test]
async fn a_secret_reaches_its_run_and_leaks_nowhere_and_revoking_shreds_it() {
    let app = TestApp::spawn().await;
    let (seed, boss, _, member) = callers(&app).await;
    let company = seed.company("acme").to_string();
    let lab = seed.room("acme", "lab").to_string();
    let ready = ready_environment_version(&boss).await;
    let (task, version) = runnable(
        &boss,
        &ready,
        WORK,
        json!({"secret_slot_declarations": ["API_TOKEN"]}),
    )
    .await;

    // Before any value: the enabled task's slot is missing.
    let enable = format!("/chatrooms/{lab}/granted-jobs/{task}/enable");
    assert_eq!(boss.post(&enable, json!({})).await.0, 200);
    let (_, menu) = member.get(&format!("/chatrooms/{lab}/menu")).await;
    assert_eq!(
        menu["items"][0]["secret_slots"][0]["effective_source"],
        "missing"
    );

    // The company's manager writes the company's value with the Python client.
    let pem = public_key(&app).await;
    let body = write_body(
        "company",
        &company,
        &task,
        "API_TOKEN",
        python_seal(&pem, PLAINTEXT),
    );
    let (status, written) = secret_post(&boss, "/secrets", "w1", body.clone()).await;
    assert_eq!(status, 200, "{written}");
    assert_eq!(written["kind"], "write");
    assert_eq!(written["state"], "applied");
    let binding = written["secret_binding"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(written["secret_binding"]["state"], "active");
    assert_eq!(written["secret_binding"]["masked"], true);
    // The same key and value replays; the same key with another value conflicts.
    let again = write_body(
        "company",
        &company,
        &task,
        "API_TOKEN",
        python_seal(&pem, PLAINTEXT),
    );
    let (status, replay) = secret_post(&boss, "/secrets", "w1", again).await;
    assert_eq!(status, 200, "{replay}");
    assert_eq!(replay["id"], written["id"]);
    let other = write_body(
        "company",
        &company,
        &task,
        "API_TOKEN",
        python_seal(&pem, "another-value"),
    );
    let (status, conflict) = secret_post(&boss, "/secrets", "w1", other).await;
    assert_eq!(status, 409, "{conflict}");
    assert_eq!(conflict["detail"]["code"], "idempotency_conflict");

    // The company-owned task's company value is both the owner's and the borrower's.
    let (_, menu) = member.get(&format!("/chatrooms/{lab}/menu")).await;
    let slot = &menu["items"][0]["secret_slots"][0];
    assert_eq!(slot["name"], "API_TOKEN");
    assert_eq!(slot["policy"], "borrower");
    assert_eq!(slot["borrower_bound"], true);
    assert_eq!(slot["effective_source"], "borrower");

    // The run receives the value as an environment variable.
    let (status, run) = submit(
        &member,
        &lab,
        "r1",
        json!({"task_version_id": version, "input": {}}),
    )
    .await;
    assert_eq!(status, 200, "{run}");
    assert_eq!(
        run["secret_slot_provenance"],
        json!({"API_TOKEN": {"resolved_via": "borrower", "consumer_scope": "company"}})
    );
    let id = run["id"].as_str().unwrap();
    let done = finished(&member, &lab, id).await;
    assert_eq!(done["status"], "completed", "{done}");
    let seen = output_of(&app, &member, &lab, id).await;
    assert_eq!(seen, hex::encode(Sha256::digest(PLAINTEXT.as_bytes())));

    // Masked reads and management lists.
    let (status, read) = boss.get(&format!("/secrets/{binding}")).await;
    assert_eq!(status, 200, "{read}");
    assert_eq!(read["slot_name"], "API_TOKEN");
    let (_, listed) = boss
        .get(&format!(
            "/secrets?consumer_scope=company&consumer_id={company}"
        ))
        .await;
    assert_eq!(listed["items"].as_array().unwrap().len(), 1);
    assert_eq!(listed["truncated"], false);
    let (_, of_task) = boss.get(&format!("/tasks/{task}/secrets")).await;
    assert_eq!(of_task["items"][0]["id"], binding.as_str());
    let (_, of_task) = member.get(&format!("/tasks/{task}/secrets")).await;
    assert_eq!(of_task["items"], json!([]), "members manage no scope");
    assert_eq!(member.get(&format!("/secrets/{binding}")).await.0, 403);
    assert_eq!(boss.get("/secrets?consumer_scope=company").await.0, 422);

    // Rotation keeps the binding and counts the version.
    let rotated = write_body(
        "company",
        &company,
        &task,
        "API_TOKEN",
        python_seal(&pem, "rotated-value-2"),
    );
    let (status, rotation) = secret_post(&boss, "/secrets/rotate", "w2", rotated).await;
    assert_eq!(status, 200, "{rotation}");
    assert_eq!(rotation["secret_binding"]["id"], binding.as_str());
    assert_eq!(rotation["secret_binding"]["version_count"], 2);

    // Nothing the service wrote holds the value: responses (above), the log, an
    // export, a full database dump, the server log.
    let mut conn = app.db.pool.acquire().await.unwrap();
    let mut exporter = Exporter::start(&mut conn, ExportFilter::default())
        .await
        .unwrap();
    let mut export = String::new();
    loop {
        let page = exporter.next_page(&mut conn).await.unwrap();
        if page.is_empty() {
            break;
        }
        for event in page {
            export.push_str(&serde_json::to_string(&event).unwrap());
        }
    }
    assert!(export.contains("SecretBound") && export.contains("SecretRotated"));
    for text in ["rotated-value-2", PLAINTEXT] {
        assert!(!export.contains(text), "the export holds a value");
    }
    let dump = app.pg_dump();
    assert!(dump.contains("secret_values"), "the dump covers the store");
    for text in ["rotated-value-2", PLAINTEXT] {
        assert!(!dump.contains(text), "the database dump holds a value");
        assert!(
            !captured_log().contains(text),
            "the server log holds a value"
        );
    }

    // Revoking shreds every version: the database and the KEK open nothing.
    let versions: Vec<uuid::Uuid> =
        sqlx::query_scalar("SELECT value_version_id FROM secret_values")
            .fetch_all(&app.db.pool)
            .await
            .unwrap();
    assert_eq!(versions.len(), 2);
    let revoke = json!({"consumer_scope": "company", "consumer_id": company, "task_id": task,
                        "slot_name": "API_TOKEN"});
    let (status, revoked) = secret_post(&boss, "/secrets/revoke", "w3", revoke).await;
    assert_eq!(status, 200, "{revoked}");
    assert_eq!(revoked["state"], "terminal");
    assert_eq!(revoked["secret_binding"]["state"], "revoked");
    let aggregate = secret_binding_aggregate_id(
        ConsumerScope::Company,
        company.parse().unwrap(),
        task.parse().unwrap(),
        "API_TOKEN",
    );
    for version in versions {
        let opened = app
            .state
            .runtime
            .secrets
            .open(&app.db.pool, aggregate, version)
            .await
            .unwrap();
        assert!(opened.is_none(), "a shredded value still opens");
    }
    let (_, menu) = member.get(&format!("/chatrooms/{lab}/menu")).await;
    assert_eq!(
        menu["items"][0]["secret_slots"][0]["effective_source"],
        "missing"
    );
    let (_, run) = submit(
        &member,
        &lab,
        "r2",
        json!({"task_version_id": version, "input": {}}),
    )
    .await;
    assert_eq!(run["secret_slot_provenance"], json!({}));
}

#[tokio::test]
async fn a_pin_naming_another_binding_s_value_opens_nothing() {
    let app = TestApp::spawn().await;
    let (seed, boss, _, member) = callers(&app).await;
    let company = seed.company("acme").to_string();
    let lab = seed.room("acme", "lab").to_string();
    let ready = ready_environment_version(&boss).await;
    let pem = public_key(&app).await;
    let mut tasks = Vec::new();
    for (key, value) in [("w-one", PLAINTEXT), ("w-other", "the-other-task-s-value")] {
        let declared = json!({"secret_slot_declarations": ["API_TOKEN"]});
        let (task, version) = runnable(&boss, &ready, WORK, declared).await;
        let enable = format!("/chatrooms/{lab}/granted-jobs/{task}/enable");
        assert_eq!(boss.post(&enable, json!({})).await.0, 200);
        let body = write_body(
            "company",
            &company,
            &task,
            "API_TOKEN",
            python_seal(&pem, value),
        );
        assert_eq!(secret_post(&boss, "/secrets", key, body).await.0, 200);
        tasks.push((uuid::Uuid::parse_str(&task).unwrap(), version));
    }
    // The other task's binding names the first task's value (a read model gone
    // wrong): its run receives nothing.
    sqlx::query(
        "UPDATE secret_bindings SET value_version_id =
                (SELECT value_version_id FROM secret_bindings WHERE task_id = $1)
          WHERE task_id = $2",
    )
    .bind(tasks[0].0)
    .bind(tasks[1].0)
    .execute(&app.db.pool)
    .await
    .unwrap();
    let body = json!({"task_version_id": tasks[1].1, "input": {}});
    let (status, run) = submit(&member, &lab, "r-other", body).await;
    assert_eq!(status, 200, "{run}");
    let done = finished(&member, &lab, run["id"].as_str().unwrap()).await;
    assert_eq!(
        (done["status"].as_str(), done["error_code"].as_str()),
        (Some("customer_failed"), Some("secret_unavailable")),
        "{done}"
    );
}
