//! Public links: idempotent minting, revoke, a new token after a revoke, forged and
//! revoked tokens answer 404.

use super::{finished, runnable, submit};
use crate::environments::callers;
use crate::support::{TestApp, assert_code};
use crate::tasks::ready_environment_version;
use serde_json::json;

#[tokio::test]
async fn public_links_are_idempotent_revocable_and_unguessable() {
    let app = TestApp::spawn().await;
    let (seed, boss, _, member) = callers(&app).await;
    let lab = seed.room("acme", "lab").to_string();
    let ready = ready_environment_version(&boss).await;
    let (_, version) = runnable(&boss, &ready, "echo the-log-line\n", json!({})).await;
    let (_, run) = submit(
        &member,
        &lab,
        "k",
        json!({"task_version_id": version, "input": {}}),
    )
    .await;
    let id = run["id"].as_str().unwrap();
    finished(&member, &lab, id).await;
    let path = format!("/chatrooms/{lab}/runs/{id}/log/public-link");

    let (status, first) = member.post(&path, json!({})).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["object_kind"], "log");
    assert_eq!(first["revoked"], false);
    assert!(
        first["token"].as_str().unwrap().len() >= 43,
        "at least 128 random bits"
    );
    let (_, again) = member.post(&path, json!({})).await;
    assert_eq!(again["token"], first["token"], "minting is idempotent");
    let url = first["url"].as_str().unwrap();
    assert!(url.ends_with(&format!(
        "/public/sandbox/artifacts/{}",
        first["token"].as_str().unwrap()
    )));
    let body = app
        .client
        .get(url)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(body.contains("the-log-line"));

    // No output was written: no output link.
    assert_eq!(
        member
            .post(
                &format!("/chatrooms/{lab}/runs/{id}/output/public-link"),
                json!({})
            )
            .await
            .0,
        404
    );

    let (status, revoked) = member.send(reqwest::Method::DELETE, &path, None).await;
    assert_eq!(status, 200, "{revoked}");
    assert_eq!(revoked["revoked"], true);
    assert_eq!(app.client.get(url).send().await.unwrap().status(), 404);
    let (_, fresh) = member.post(&path, json!({})).await;
    assert_ne!(fresh["token"], first["token"]);
    assert_eq!(
        app.client
            .get(fresh["url"].as_str().unwrap())
            .send()
            .await
            .unwrap()
            .status(),
        200
    );

    // Forged tokens.
    let base = url.rsplit_once('/').unwrap().0;
    for forged in [
        "x",
        "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
    ] {
        let response = app
            .client
            .get(format!("{base}/{forged}"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 404);
    }
    // Strangers to the room cannot mint.
    let globex = crate::environments::Caller {
        app: &app,
        token: seed.token("globex", "ceo"),
    };
    assert_eq!(globex.post(&path, json!({})).await.0, 404);

    // A retry made before the expiry (its run waits for no slot of ours here).
    let retry = format!("/chatrooms/{lab}/runs/{id}/retry");
    let (status, retried) = super::post_keyed(&member, &retry, "before", None).await;
    assert_eq!(status, 200, "{retried}");

    // Past the company's run content retention the contents expire: links and
    // replays stop working, the flags say so.
    sqlx::query("UPDATE runs SET terminal_at = now() - interval '31 days' WHERE id = $1::uuid")
        .bind(id)
        .execute(&app.db.pool)
        .await
        .unwrap();
    api::runtime::janitor::sweep(&app.state.runtime)
        .await
        .unwrap();
    let (_, content) = member
        .get(&format!("/chatrooms/{lab}/runs/{id}/content"))
        .await;
    assert_eq!(
        (content["state"].as_str(), content["has_log"].as_bool()),
        (Some("expired"), Some(false))
    );
    assert_eq!(
        app.client
            .get(fresh["url"].as_str().unwrap())
            .send()
            .await
            .unwrap()
            .status(),
        404
    );
    assert_eq!(member.post(&path, json!({})).await.0, 404);
    assert_code(
        &super::post_keyed(
            &member,
            &format!("/chatrooms/{lab}/runs/{id}/retry"),
            "after",
            None,
        )
        .await,
        409,
        "retry_input_unavailable",
    );
    // The retry made before answers again with its key, whatever expired since.
    let (status, again) = super::post_keyed(&member, &retry, "before", None).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["id"], retried["id"]);
    let other = Some(json!({"input": {"other": true}}));
    let (status, conflict) = super::post_keyed(&member, &retry, "before", other).await;
    assert_eq!(status, 409, "{conflict}");
}
