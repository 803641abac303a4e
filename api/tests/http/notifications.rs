//! The notification center: build and run notifications addressed to the right
//! users, the unread filter and count, read marks, paging, and the live stream.

use crate::environments::{Caller, callers};
use crate::runs::{runnable, submit};
use crate::support::{As, TestApp, json};
use crate::tasks::ready_environment_version;
use futures::StreamExt;
use reqwest::Method;
use serde_json::{Value, json as body};
use std::time::Duration;

const CENTER: &str = "/private/module/notifications";

async fn get(caller: &Caller<'_>, path: &str) -> (u16, Value) {
    let request = caller
        .app
        .request(Method::GET, path)
        .bearer_token(&caller.token);
    json(request.send().await.unwrap()).await
}

async fn mark(caller: &Caller<'_>, payload: Value) -> (u16, Value) {
    let request = caller
        .app
        .request(Method::POST, &format!("{CENTER}/read"))
        .bearer_token(&caller.token)
        .json(&payload);
    json(request.send().await.unwrap()).await
}

fn events(page: &Value) -> Vec<String> {
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["event"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn users_read_their_notifications_mark_them_and_stream_new_ones() {
    let app = TestApp::without_executor().await;
    let (seed, boss, dm, member) = callers(&app).await;
    let lab = seed.room("acme", "lab").to_string();
    let ready = ready_environment_version(&boss).await;
    let (_, version) = runnable(&boss, &ready, "echo hi\n", body!({})).await;

    // The stream opened before the run ends delivers its notification.
    let stream = app
        .request(Method::GET, &format!("{CENTER}/stream"))
        .bearer_token(&member.token)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status().as_u16(), 200);
    assert!(
        stream.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let (status, run) = submit(
        &member,
        &lab,
        "k1",
        body!({"task_version_id": version, "input": {}}),
    )
    .await;
    assert_eq!(status, 200, "{run}");
    let run_id = run["id"].as_str().unwrap().to_string();
    let (status, cancelled) = member
        .post(&format!("/chatrooms/{lab}/runs/{run_id}/cancel"), body!({}))
        .await;
    assert_eq!(status, 200, "{cancelled}");
    let mut chunks = stream.bytes_stream();
    let mut seen = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !seen.contains("run_terminal") {
        let chunk = tokio::time::timeout_at(deadline, chunks.next())
            .await
            .expect("the stream delivers the run's notification")
            .unwrap()
            .unwrap();
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(seen.contains("event: notification"), "{seen}");
    assert!(seen.contains(&run_id), "{seen}");

    // The submitter sees the run; every company user sees the company
    // environment's build; another company sees nothing.
    let (status, page) = get(&member, CENTER).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(events(&page), vec!["run_terminal", "build_ready"], "{page}");
    let terminal = &page["items"][0];
    assert_eq!(terminal["type"], "sandbox_event");
    assert_eq!(terminal["payload"]["run_id"], run_id.as_str());
    assert_eq!(terminal["payload"]["terminal_class"], "cancelled");
    assert_eq!(terminal["read"], false);
    assert_eq!(events(&get(&dm, CENTER).await.1), vec!["build_ready"]);
    // A company manager is addressed twice by the build (as a company user and as
    // a manager); they see it, and count it, once.
    assert_eq!(events(&get(&boss, CENTER).await.1), vec!["build_ready"]);
    assert_eq!(
        get(&boss, &format!("{CENTER}/unread-count")).await.1["unread"],
        1
    );
    let ceo = Caller {
        app: &app,
        token: seed.token("globex", "ceo"),
    };
    assert_eq!(get(&ceo, CENTER).await.1["items"], body!([]));

    // Paging and read marks.
    let (_, first) = get(&member, &format!("{CENTER}?page_size=1")).await;
    assert_eq!(events(&first), vec!["run_terminal"]);
    let token = first["next_page_token"].as_str().unwrap();
    let (_, second) = get(&member, &format!("{CENTER}?page_size=1&page_token={token}")).await;
    assert_eq!(events(&second), vec!["build_ready"]);
    assert_eq!(second["next_page_token"], Value::Null);
    assert_eq!(
        get(&member, &format!("{CENTER}/unread-count")).await.1["unread"],
        2
    );
    let (status, after) = mark(&member, body!({"ids": [terminal["id"]]})).await;
    assert_eq!((status, after["unread"].clone()), (200, body!(1)));
    assert_eq!(
        events(&get(&member, &format!("{CENTER}?unread=true")).await.1),
        vec!["build_ready"]
    );
    let build_id = page["items"][1]["id"].clone();
    assert_eq!(
        mark(&ceo, body!({"ids": [build_id]})).await.0,
        404,
        "not addressed to them"
    );
    assert_eq!(mark(&member, body!({})).await.0, 400);
    assert_eq!(mark(&member, body!({"ids": [], "all": true})).await.0, 400);
    assert_eq!(mark(&member, body!({"all": true})).await.1["unread"], 0);
    assert_eq!(
        get(&dm, &format!("{CENTER}/unread-count")).await.1["unread"],
        1,
        "their own marks"
    );
    let (_, read) = get(&member, CENTER).await;
    assert!(
        read["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|n| n["read"] == true)
    );

    // A notification raised after the mark is unread even when its event time is
    // earlier (a run whose end was recorded with an older clock).
    let company = seed.company("acme");
    let member_id: uuid::Uuid = member.get("/me").await.1["principal_id"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    sqlx::query(
        "WITH n AS (
             INSERT INTO notifications (id, company_id, kind, recipients, payload, created_at, position)
             SELECT $1, $2, 'run_terminal', $3, '{}', now() - interval '1 hour', max(position) + 1
               FROM notifications
             RETURNING id, company_id, created_at, position)
         INSERT INTO notification_recipients (notification_id, company_id, scope, target_id, created_at, position)
         SELECT id, company_id, 'user', $4, created_at, position FROM n",
    )
    .bind(uuid::Uuid::new_v4())
    .bind(company)
    .bind(body!([{"scope": "user", "id": member_id}]))
    .bind(member_id)
    .execute(&app.db.pool)
    .await
    .unwrap();
    assert_eq!(
        get(&member, &format!("{CENTER}/unread-count")).await.1["unread"],
        1
    );

    // Social media clients have no inbox; no credentials is 418.
    let client = app
        .request(Method::GET, CENTER)
        .api_key(&seed.key("acme", "line"))
        .send()
        .await
        .unwrap();
    assert_eq!(client.status().as_u16(), 403);
    let anonymous = app.request(Method::GET, CENTER).send().await.unwrap();
    assert_eq!(anonymous.status().as_u16(), 418);
}
