//! Secret writes refuse plaintext, missing or broken envelopes, short values, bad
//! slot names, missing keys and callers who do not manage the consumer scope, and
//! a refused write changes nothing.

use super::{public_key, rust_seal, secret_post, write_body};
use crate::environments::{Caller, callers};
use crate::support::{As, Options, TestApp};
use crate::tasks::company_task;
use reqwest::Method;
use serde_json::{Value, json};

/// The one validation entry of a slug refusal.
fn assert_slug(status: u16, body: &Value, slug: &str) {
    assert_eq!(status, 422, "{body}");
    let entry = &body["detail"][0];
    assert_eq!(entry["type"], slug, "{body}");
    assert_eq!(entry["msg"], format!("validation_error:{slug}"), "{body}");
    assert!(
        entry.get("input").is_none() && entry.get("ctx").is_none(),
        "{body}"
    );
}

#[tokio::test]
async fn bad_writes_are_refused_and_change_nothing() {
    let app = TestApp::spawn().await;
    let (seed, boss, dm, member) = callers(&app).await;
    let company = seed.company("acme").to_string();
    let lab = seed.room("acme", "lab").to_string();
    let task = company_task(&boss, "job").await;
    let pem = public_key(&app).await;
    let good = rust_seal(&pem, b"correct horse");
    let body = |scope: &str, consumer: &str, sealed: Value| {
        write_body(scope, consumer, &task, "API_TOKEN", sealed)
    };
    let before = app.event_count().await;

    let (status, missing_key) = secret_post(
        &boss,
        "/secrets",
        "",
        body("company", &company, good.clone()),
    )
    .await;
    assert_eq!(status, 422);
    assert_eq!(missing_key["detail"]["code"], "idempotency_key_required");

    let mut plaintext = body("company", &company, good.clone());
    plaintext["value"] = json!("hunter2-plain");
    let (status, refused) = secret_post(&boss, "/secrets", "k1", plaintext).await;
    assert_slug(status, &refused, "sandbox_plaintext_value_rejected");
    assert!(!refused.to_string().contains("hunter2-plain"), "{refused}");

    // A value sent where the envelope belongs is refused without being echoed.
    let misplaced = body("company", &company, json!("hunter2-misplaced"));
    let (status, refused) = secret_post(&boss, "/secrets", "k1b", misplaced).await;
    assert_eq!(status, 422, "{refused}");
    assert_eq!(refused["detail"][0]["type"], "type_error", "{refused}");
    assert!(!refused.to_string().contains("hunter2"), "{refused}");

    let mut empty = body("company", &company, Value::Null);
    empty["value"] = json!("");
    let (status, refused) = secret_post(&boss, "/secrets", "k2", empty).await;
    assert_slug(status, &refused, "sandbox_encrypted_value_required");

    let broken = json!({"encrypted_key": "AAAA", "iv": "AAAA", "ciphertext": "AAAA"});
    let (status, refused) =
        secret_post(&boss, "/secrets", "k3", body("company", &company, broken)).await;
    assert_slug(status, &refused, "sandbox_encrypted_value_undecryptable");

    let short = rust_seal(&pem, b"abc");
    let (status, refused) =
        secret_post(&boss, "/secrets", "k4", body("company", &company, short)).await;
    assert_slug(status, &refused, "sandbox_value_too_short");

    let long = rust_seal(&pem, &[b'x'; 64 * 1024 + 1]);
    let (status, refused) =
        secret_post(&boss, "/secrets", "k4b", body("company", &company, long)).await;
    assert_eq!(status, 422, "{refused}");
    assert_eq!(
        refused["detail"][0]["type"], "too_long",
        "values are at most 64 KiB"
    );

    let mut bad_slot = body("company", &company, good.clone());
    bad_slot["slot_name"] = json!("1-bad");
    let (status, _) = secret_post(&boss, "/secrets", "k5", bad_slot).await;
    assert_eq!(status, 422);

    // Consumer-scope managers only: a member is refused, a department manager
    // manages its own department only, another company's room does not exist.
    let (status, _) = secret_post(
        &member,
        "/secrets",
        "k6",
        body("chatroom", &lab, good.clone()),
    )
    .await;
    assert_eq!(status, 403);
    let ops = seed.department("acme", "ops").to_string();
    let (status, _) = secret_post(
        &dm,
        "/secrets",
        "k7",
        body("department", &ops, good.clone()),
    )
    .await;
    assert_eq!(status, 403);
    let hq = seed.room("globex", "hq").to_string();
    let (status, _) =
        secret_post(&boss, "/secrets", "k8", body("chatroom", &hq, good.clone())).await;
    assert_eq!(status, 404);
    let (status, _) = secret_post(
        &boss,
        "/secrets/rotate",
        "k9",
        body("company", &company, good.clone()),
    )
    .await;
    assert_eq!(status, 404, "nothing bound to rotate");
    let revoke = json!({"consumer_scope": "company", "consumer_id": company, "task_id": task,
                        "slot_name": "API_TOKEN"});
    let (status, _) = secret_post(&boss, "/secrets/revoke", "k10", revoke).await;
    assert_eq!(status, 404, "nothing bound to revoke");

    // A sandbox-scoped key is refused at the first gate.
    let (status, _) = app
        .request(Method::POST, "/private/module/sandbox/secrets")
        .api_key(&seed.key("acme", "bot"))
        .json(&body("chatroom", &lab, good.clone()))
        .send()
        .await
        .map(|r| (r.status().as_u16(), ()))
        .unwrap();
    assert_eq!(status, 403);

    assert_eq!(app.event_count().await, before, "refusals record nothing");
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM secret_values")
        .fetch_one(&app.db.pool)
        .await
        .unwrap();
    assert_eq!(rows, 0, "refusals store nothing");

    // A department manager writes for its department.
    let rnd = seed.department("acme", "rnd").to_string();
    let (status, written) =
        secret_post(&dm, "/secrets", "k11", body("department", &rnd, good)).await;
    assert_eq!(status, 200, "{written}");
    assert_eq!(written["state"], "applied");
}

async fn refused_by(options: Options, code_or_slug: &str) {
    let app = TestApp::spawn_with(options).await;
    let seed = app.seed().await;
    let boss = Caller {
        app: &app,
        token: seed.token("acme", "boss"),
    };
    let company = seed.company("acme").to_string();
    let task = company_task(&boss, "job").await;
    let sealed = json!({"encrypted_key": "AAAA", "iv": "AAAA", "ciphertext": "AAAA"});
    let (status, body) = secret_post(
        &boss,
        "/secrets",
        "k1",
        write_body("company", &company, &task, "API_TOKEN", sealed),
    )
    .await;
    if status == 503 {
        assert_eq!(body["detail"]["code"], code_or_slug, "{body}");
    } else {
        assert_slug(status, &body, code_or_slug);
    }
}

#[tokio::test]
async fn an_unconfigured_store_or_transit_key_refuses_writes() {
    refused_by(
        Options {
            secret_store: false,
            ..Options::default()
        },
        "sandbox_secretstore_unconfigured",
    )
    .await;
    refused_by(
        Options {
            secret_pepper: false,
            ..Options::default()
        },
        "sandbox_secret_pepper_missing",
    )
    .await;
    refused_by(
        Options {
            transit_key: false,
            ..Options::default()
        },
        "sandbox_transit_keypair_missing",
    )
    .await;
}

#[tokio::test]
async fn fifty_parallel_writes_with_one_key_make_one_write() {
    let app = TestApp::spawn().await;
    let (seed, boss, _, _) = callers(&app).await;
    let company = seed.company("acme").to_string();
    let task = company_task(&boss, "job").await;
    let pem = public_key(&app).await;
    let body = write_body(
        "company",
        &company,
        &task,
        "API_TOKEN",
        rust_seal(&pem, b"correct horse battery staple"),
    );
    let same = (0..50).map(|_| secret_post(&boss, "/secrets", "one-key", body.clone()));
    let answers = futures::future::join_all(same).await;
    let first = &answers[0].1;
    for (status, answer) in &answers {
        assert_eq!(*status, 200, "{answer}");
        assert_eq!(
            answer["id"], first["id"],
            "every request answers the one write"
        );
    }
    let differing = (0..10).map(|n| {
        let value = format!("correct horse battery staple {n}");
        let body = write_body(
            "company",
            &company,
            &task,
            "API_TOKEN",
            rust_seal(&pem, value.as_bytes()),
        );
        secret_post(&boss, "/secrets", "contested", body)
    });
    let answers = futures::future::join_all(differing).await;
    assert_eq!(
        answers.iter().filter(|(s, _)| *s == 200).count(),
        1,
        "{answers:?}"
    );
    for (status, answer) in answers.iter().filter(|(s, _)| *s != 200) {
        assert_eq!(*status, 409, "{answer}");
        assert_eq!(answer["detail"]["code"], "idempotency_conflict");
    }
}

#[tokio::test]
async fn a_revoke_shreds_a_rotation_that_raced_it() {
    let app = TestApp::spawn().await;
    let (seed, boss, _, _) = callers(&app).await;
    let company = seed.company("acme").to_string();
    let task = company_task(&boss, "job").await;
    let pem = public_key(&app).await;
    let body = || {
        write_body(
            "company",
            &company,
            &task,
            "API_TOKEN",
            rust_seal(&pem, b"correct horse battery staple"),
        )
    };
    let revoke = json!({"consumer_scope": "company", "consumer_id": company,
                        "task_id": task, "slot_name": "API_TOKEN"});
    for round in 0..30 {
        let (status, bound) = secret_post(&boss, "/secrets", &format!("w{round}"), body()).await;
        assert_eq!(status, 200, "{bound}");
        // Each rotation either lands before the revoke, or finds the slot revoked.
        let keys: Vec<String> = (0..3).map(|n| format!("r{round}-{n}")).collect();
        let rotations = keys
            .iter()
            .map(|key| secret_post(&boss, "/secrets/rotate", key, body()));
        let key = format!("v{round}");
        let revoking = secret_post(&boss, "/secrets/revoke", &key, revoke.clone());
        let (rotated, (status, revoked)) =
            tokio::join!(futures::future::join_all(rotations), revoking);
        assert_eq!(status, 200, "{revoked}");
        for (status, answer) in rotated {
            assert!(
                status == 200 || status == 404 || status == 409,
                "{status} {answer}"
            );
        }
        let left: i64 = sqlx::query_scalar("SELECT count(*) FROM secret_values")
            .fetch_one(&app.db.pool)
            .await
            .unwrap();
        assert_eq!(left, 0, "round {round}: a revoked slot keeps a value");
    }
}
