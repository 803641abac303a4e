//! Auditors and operators against a running server: requests keep succeeding while
//! every projection is rebuilt, and no secret ever reaches the exported log.

use crate::support::{As, JWT_SECRET, TestApp, json};
use projections::audit::export::{ExportFilter, Exporter};
use projections::read_models;
use projections::rebuild::{Outcome, Rebuild, Target};
use reqwest::Method;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio_util::sync::CancellationToken;

const SETTINGS: &str = "/private/module/sandbox/settings";

async fn digests(app: &TestApp) -> BTreeMap<String, String> {
    let mut conn = app.db.pool.acquire().await.unwrap();
    let mut all = BTreeMap::new();
    for projection in read_models::all() {
        all.extend(
            projections::digest::digest(&mut conn, "public", projection.tables())
                .await
                .unwrap(),
        );
    }
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_keep_succeeding_during_a_rebuild_and_the_model_is_unchanged() {
    let app = TestApp::spawn().await;
    let seed = app.seed().await;
    let boss = seed.token("acme", "boss");
    let key = seed.key("acme", "full");
    // The first read records the default policy; every later read only reads.
    let (status, _) = json(
        app.request(Method::GET, SETTINGS)
            .bearer_token(&boss)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200);
    let before = digests(&app).await;

    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..4)
        .map(|n| {
            let (client, base, boss, key, stop) = (
                app.client.clone(),
                app.base.clone(),
                boss.clone(),
                key.clone(),
                stop.clone(),
            );
            tokio::spawn(async move {
                let mut statuses = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let request = client.get(format!("{base}{SETTINGS}"));
                    // Half the readers authenticate with a JWT, half with an API key:
                    // both read the directory tables the rebuild replaces.
                    let request = if n % 2 == 0 {
                        request.bearer_token(&boss)
                    } else {
                        request.api_key(&key)
                    };
                    statuses.push(request.send().await.unwrap().status().as_u16());
                }
                statuses
            })
        })
        .collect();
    for projection in read_models::all() {
        let job = Rebuild::start(&app.db.pool, projection, Target::Swap)
            .await
            .unwrap()
            .with_batch(2);
        let outcome = job
            .run(&CancellationToken::new(), |_, _| {
                std::thread::sleep(std::time::Duration::from_millis(10))
            })
            .await
            .unwrap();
        assert!(matches!(outcome, Outcome::Swapped(_)), "{outcome:?}");
    }
    stop.store(true, Ordering::Relaxed);
    let mut served = 0;
    for reader in readers {
        let statuses = reader.await.unwrap();
        assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
        served += statuses.len();
    }
    assert!(served > 10, "requests ran during the rebuild ({served})");
    assert_eq!(
        digests(&app).await,
        before,
        "the rebuilt model equals the old one"
    );
}

/// Every event type's example payload (from the registry) names no secret field
/// except a digest, and a log produced by issuing keys, minting tokens and changing
/// settings contains none of the secrets involved.
#[tokio::test]
async fn no_secret_ever_appears_in_an_export() {
    for aggregate in domain::registry::aggregates() {
        for example in &aggregate.examples {
            assert_no_secret_fields(&example.payload, &example.event_type);
        }
    }

    let app = TestApp::spawn().await;
    let seed = app.seed().await;
    let boss = seed.token("acme", "boss");
    let body = json!({"run_content_retention_days": 45, "policy_version": 1});
    let (status, _) = json(
        app.request(Method::PUT, SETTINGS)
            .bearer_token(&boss)
            .json(&body)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200);

    let mut conn = app.db.pool.acquire().await.unwrap();
    let mut exporter = Exporter::start(&mut conn, ExportFilter::default())
        .await
        .unwrap();
    let mut lines = String::new();
    let mut types = std::collections::BTreeSet::new();
    loop {
        let page = exporter.next_page(&mut conn).await.unwrap();
        if page.is_empty() {
            break;
        }
        for event in page {
            assert_no_secret_fields(&event.payload, &event.event_type);
            types.insert(event.event_type.clone());
            lines.push_str(&serde_json::to_string(&event).unwrap());
            lines.push('\n');
        }
    }
    assert!(
        types.contains("ApiKeyIssued") && types.contains("PolicyUpdated"),
        "{types:?}"
    );
    let mut secrets = vec![JWT_SECRET.to_string(), boss];
    for company in seed.0.companies.values() {
        secrets.extend(company.api_keys.values().filter_map(|k| k.key.clone()));
        secrets.extend(company.users.values().map(|u| u.token.clone()));
    }
    assert!(secrets.len() > 5);
    for secret in &secrets {
        assert!(
            !lines.contains(secret.as_str()),
            "a secret is in the export"
        );
        // Not even the part after a prefix.
        let tail = &secret[secret.len().saturating_sub(20)..];
        assert!(!lines.contains(tail), "part of a secret is in the export");
    }
    assert!(!lines.contains("PRIVATE KEY"));
}

/// Spec fields that name secret slots and their policies (never hold their values).
const SLOT_NAME_FIELDS: &[&str] = &[
    "secret_slot_declarations",
    "secret_slot_policies",
    "secret_slots",
    // A run's pins by slot name: scopes and value version ids, never a value.
    "slot_sources",
    // A public read token's id: in its URL and the moderators' list. For a
    // secretless token the spec makes the id itself the capability, so the log
    // (like the list) can open what such a token publishes; a token with a secret
    // records only the secret's digest (`secret_sha256`).
    "token_id",
];

/// Fields that would hold a secret must be digests: `*_sha256` with 64 hex digits.
fn assert_no_secret_fields(value: &Value, event_type: &str) {
    match value {
        Value::Object(fields) => {
            for (name, field) in fields {
                // The payload's outer key is the event type (`SecretBound`), not a field.
                if SLOT_NAME_FIELDS.contains(&name.as_str()) {
                    continue;
                }
                if name == event_type {
                    assert_no_secret_fields(field, event_type);
                    continue;
                }
                let lower = name.to_ascii_lowercase();
                let sensitive = ["secret", "password", "token", "private", "credential"]
                    .iter()
                    .any(|word| lower.contains(word));
                // A flag (`secretless`) cannot hold a secret.
                if sensitive && !field.is_boolean() {
                    let digest = lower.ends_with("_sha256")
                        && field.as_str().is_some_and(|h| {
                            h.len() == 64 && h.chars().all(|c| c.is_ascii_hexdigit())
                        });
                    assert!(digest, "{event_type}.{name} may hold a secret: {field}");
                }
                assert_no_secret_fields(field, event_type);
            }
        }
        Value::Array(items) => items
            .iter()
            .for_each(|item| assert_no_secret_fields(item, event_type)),
        _ => {}
    }
}
