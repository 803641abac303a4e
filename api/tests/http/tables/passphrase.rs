//! The client-access passphrase (spec `custom-tables.md` section 2, "ending client
//! access", and section 8): managers ask social media clients for a passphrase,
//! clients give it at most 5 times per 300 seconds, a new passphrase locks them out
//! again, and a deployment keeps it behind a redacted marker.

use super::deployment::{deploy, export};
use super::fixture::{Tables, code};
use crate::support::As;
use reqwest::Method;
use serde_json::{Value, json};

async fn client_reads(t: &Tables, table: &str) -> u16 {
    t.call(Method::GET, &format!("{table}/records"), "line1", None)
        .await
        .0
}

#[tokio::test]
async fn clients_give_the_passphrase_before_they_reach_a_table() {
    let t = Tables::new().await;
    let table = t.table("company", "boss", "Orders").await;
    let client = t.client();
    let (s, body) = t
        .call(
            Method::PUT,
            &format!("{table}/client-permissions/{client}"),
            "boss",
            Some(json!({"can_read": "all"})),
        )
        .await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(client_reads(&t, &table).await, 200);
    let access = format!("{table}/client-access");
    let patch = |body: Value| t.call(Method::PATCH, &access, "boss", Some(body));

    let got = patch(json!({"enabled": true, "passphrase_enabled": true})).await;
    assert_eq!(
        (got.0, code(&got)),
        (400, "table_config_invalid"),
        "{}",
        got.1
    );
    let got =
        patch(json!({"enabled": true, "passphrase_enabled": true, "passphrase": "short"})).await;
    assert_eq!((got.0, code(&got)), (400, "table_config_invalid"));
    let (s, _) = t
        .call(
            Method::PATCH,
            &access,
            "member",
            Some(json!({"enabled": true, "passphrase": "correct horse"})),
        )
        .await;
    assert_eq!(s, 403);
    let (s, body) =
        patch(json!({"enabled": true, "passphrase_enabled": true, "passphrase": "correct horse"}))
            .await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(
        body,
        json!({"enabled": true, "passphrase_enabled": true}),
        "the passphrase is never answered"
    );
    assert_eq!(
        client_reads(&t, &table).await,
        404,
        "locked until the client gives it"
    );

    let unlock = format!("{access}/unlock");
    let give = |passphrase: &str| {
        t.call(
            Method::POST,
            &unlock,
            "line1",
            Some(json!({"passphrase": passphrase})),
        )
    };
    let got = give("wrong horse").await;
    assert_eq!((got.0, code(&got)), (403, "passphrase_invalid"));
    let (s, body) = give("correct horse").await;
    assert_eq!((s, body), (200, json!({"unlocked": true})));
    assert_eq!(client_reads(&t, &table).await, 200);
    let (s, _) = t
        .call(
            Method::POST,
            &unlock,
            "member",
            Some(json!({"passphrase": "correct horse"})),
        )
        .await;
    assert_eq!(s, 403, "users give no passphrase");
    // A user outside a room does not learn that the room's table exists.
    let lab = t.table("chatroom:lab", "boss", "Lab orders").await;
    let (s, body) = t
        .call(
            Method::PATCH,
            &format!("{lab}/client-access"),
            "boss",
            Some(
                json!({"enabled": true, "passphrase_enabled": true, "passphrase": "correct horse"}),
            ),
        )
        .await;
    assert_eq!(s, 200, "{body}");
    let lab_unlock = format!("{lab}/client-access/unlock");
    for (user, status) in [("member", 403), ("outsider", 404)] {
        let (s, _) = t
            .call(
                Method::POST,
                &lab_unlock,
                user,
                Some(json!({"passphrase": "correct horse"})),
            )
            .await;
        assert_eq!(s, status, "{user}");
    }
    let (s, _) = t
        .call(
            Method::POST,
            &unlock,
            "ceo",
            Some(json!({"passphrase": "correct horse"})),
        )
        .await;
    assert_eq!(s, 404);

    // Five attempts per 300 seconds per table and client, whatever they give.
    for _ in 0..3 {
        assert_eq!(give("wrong horse").await.0, 403);
    }
    let response = t
        .app
        .request(Method::POST, &unlock)
        .api_key(&t.seed.key("acme", "line"))
        .json(&json!({"passphrase": "correct horse"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 429);
    let retry: u64 = response.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=300).contains(&retry));
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["detail"]["code"], "passphrase_rate_limited");

    // The same passphrase again changes nothing; a new one locks clients out again.
    let before = t.app.event_count().await;
    let (s, _) = patch(json!({"enabled": true, "passphrase": "correct horse"})).await;
    assert_eq!(s, 200);
    assert_eq!(t.app.event_count().await, before);
    assert_eq!(client_reads(&t, &table).await, 200);
    let (s, _) = patch(json!({"enabled": true, "passphrase": "battery staple"})).await;
    assert_eq!(s, 200);
    assert_eq!(client_reads(&t, &table).await, 404);
    let (s, body) = patch(json!({"enabled": true, "passphrase_enabled": false})).await;
    assert_eq!(
        (s, body),
        (200, json!({"enabled": true, "passphrase_enabled": false}))
    );
    assert_eq!(client_reads(&t, &table).await, 200);
    let got = give("battery staple").await;
    assert_eq!(got.0, 404, "no passphrase to give");
}

#[tokio::test]
async fn a_deployment_keeps_the_passphrase_behind_a_redacted_marker() {
    let t = Tables::new().await;
    let table = t.table("company", "boss", "Orders").await;
    let (s, _) = t
        .call(
            Method::PATCH,
            &format!("{table}/client-access"),
            "boss",
            Some(
                json!({"enabled": true, "passphrase_enabled": true, "passphrase": "correct horse"}),
            ),
        )
        .await;
    assert_eq!(s, 200);
    let document = export(&t, "company").await;
    assert!(!document.contains("argon2"), "no hash leaves the service");
    let row: Value = document
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| r["kind"] == "client_access")
        .unwrap();
    assert_eq!(row["passphrase_enabled"], true);
    assert_eq!(row["passphrase"], "<redacted>");

    // The marker keeps the scope's passphrase.
    let (s, plan) = deploy(&t, "company", "plan", "boss", &document).await;
    assert_eq!(s, 200);
    assert_eq!(plan["changes"], json!([]), "{plan}");
    // Where none is stored, the marker is a plan error until a real one replaces it.
    let (s, plan) = deploy(&t, "department:rnd", "plan", "boss", &document).await;
    assert_eq!(s, 200);
    assert!(
        plan["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("redacted marker"),
        "{plan}"
    );
    let got = deploy(&t, "department:rnd", "apply", "boss", &document).await;
    assert_eq!((got.0, code(&got)), (422, "deployment_plan_invalid"));
    let real = document.replace("<redacted>", "correct horse");
    let (s, applied) = deploy(&t, "department:rnd", "apply", "boss", &real).await;
    assert_eq!(s, 200, "{applied}");
    assert_eq!(export(&t, "department:rnd").await, document);
    let (s, plan) = deploy(&t, "department:rnd", "plan", "boss", &real).await;
    assert_eq!(s, 200);
    assert_eq!(
        plan["changes"],
        json!([]),
        "the same real passphrase changes nothing: {plan}"
    );
    // Turning it off in the document ends it.
    let off = document.replace(
        "\"passphrase_enabled\":true",
        "\"passphrase_enabled\":false",
    );
    let (s, applied) = deploy(&t, "company", "apply", "boss", &off).await;
    assert_eq!(s, 200, "{applied}");
    assert_eq!(applied["changes"][0]["fields"], json!(["passphrase"]));
}
