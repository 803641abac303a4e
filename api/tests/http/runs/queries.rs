//! Run management queries: `GET /runs` across rooms and the per-task history of
//! company managers; archiving a task cancels its queued runs.

use super::{runnable, submit};
use crate::environments::{Caller, callers};
use crate::support::{TestApp, assert_validation};
use crate::tasks::ready_environment_version;
use serde_json::json;

#[tokio::test]
async fn run_history_is_filtered_by_visibility_and_archive_cancels_queued_runs() {
    let app = TestApp::spawn().await;
    let (seed, boss, dm, member) = callers(&app).await;
    app.set_limits(seed.company("acme"), |l| l.run_concurrency_limit = 0)
        .await;
    let lab = seed.room("acme", "lab").to_string();
    let ops = seed.room("acme", "ops-room").to_string();
    let outsider = Caller {
        app: &app,
        token: seed.token("acme", "outsider"),
    };
    let ready = ready_environment_version(&boss).await;
    let (task, version) = runnable(&boss, &ready, "echo\n", json!({})).await;
    let body = json!({"task_version_id": version, "input": {}});
    let (_, in_lab) = submit(&member, &lab, "a", body.clone()).await;
    let (_, in_ops) = submit(&outsider, &ops, "b", body.clone()).await;
    let (_, by_boss) = submit(&boss, &lab, "c", body.clone()).await;

    // Visibility: a company manager sees every room; others their rooms.
    let (status, all) = boss.get("/runs").await;
    assert_eq!(status, 200, "{all}");
    assert_eq!(all["total"], 3);
    // Newest first, each with its place in the company's queue (one query per page).
    let positions: Vec<i64> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|run| run["queue_position"].as_i64().unwrap())
        .collect();
    assert_eq!(positions, [3, 2, 1]);
    assert_eq!(all["items"][0]["id"], by_boss["id"]);
    let (_, mine) = member.get("/runs").await;
    assert_eq!(mine["total"], 2, "{mine}");
    let (_, own) = member.get("/runs?submitted_by_me=true").await;
    assert_eq!(own["items"][0]["id"], in_lab["id"]);
    assert_eq!(own["total"], 1);
    let (_, theirs) = outsider.get("/runs").await;
    assert_eq!(theirs["items"][0]["id"], in_ops["id"]);
    let (_, filtered) = boss
        .get(&format!(
            "/runs?chatroom_id[]={ops}&chatroom_id[]={lab}&status[]=queued&page_size=2"
        ))
        .await;
    assert_eq!(filtered["total"], 3);
    assert_eq!(filtered["items"].as_array().unwrap().len(), 2);
    let (_, rest) = boss
        .get(&format!("/runs?chatroom_id[]={ops}&chatroom_id[]={lab}&status[]=queued&page_size=2&page_token={}",
            filtered["next_page_token"].as_str().unwrap()))
        .await;
    assert_eq!(rest["items"][0]["id"], in_lab["id"], "oldest last");
    let (_, none) = boss.get("/runs?queued_after=2999-01-01T00:00:00Z").await;
    assert_eq!(none["total"], 0);
    // A forged cursor or a filter PostgreSQL cannot hold is refused, not a 500.
    let forged =
        "WyItMTAwMDAwLTAxLTAxVDAwOjAwOjAwWiIsIjAwMDAwMDAwLTAwMDAtMDAwMC0wMDAwLTAwMDAwMDAwMDAwMCJd";
    let refused = boss.get(&format!("/runs?page_token={forged}")).await;
    assert_validation(&refused, "value_error", &["query", "page_token"]);
    let refused = boss.get("/runs?queued_after=-100000-01-01T00:00:00Z").await;
    assert_validation(&refused, "value_error", &["query", "queued_after"]);

    // Per-task history: company managers only, offset paging, filters.
    let history = format!("/tasks/{task}/runs");
    assert_eq!(dm.get(&history).await.0, 403);
    let (status, rows) = boss.get(&history).await;
    assert_eq!(status, 200, "{rows}");
    assert_eq!(rows.as_array().unwrap().len(), 3);
    assert_eq!(rows[0]["run_id"], by_boss["id"]);
    assert_eq!(rows[0]["method"], "manual");
    assert_eq!(rows[0]["executor_kind"], "internal_user");
    assert_eq!(rows[0]["source_kind"], "department");
    let (_, page) = boss
        .get(&format!("{history}?order=asc&offset=1&limit=1"))
        .await;
    assert_eq!(page[0]["run_id"], in_ops["id"]);
    let (_, count) = boss
        .get(&format!("{history}/numOfData?chatroom_id={lab}"))
        .await;
    assert_eq!(count, json!({"num": 2}));
    let (_, count) = boss.get(&format!("{history}/numOfData?method=agent")).await;
    assert_eq!(count, json!({"num": 0}));
    assert_eq!(boss.get(&format!("{history}?method=robot")).await.0, 422);
    assert_eq!(boss.get(&format!("{history}?limit=101")).await.0, 422);

    // Archiving the task cancels its queued runs.
    assert_eq!(
        boss.post(&format!("/tasks/{task}/archive"), json!({}))
            .await
            .0,
        200
    );
    let (_, after) = boss.get("/runs?status[]=cancelled").await;
    assert_eq!(after["total"], 3);
    // Unknown statuses, however unusual their characters, are a 422, never a 500.
    for odd in ["bogus", "%C3%A9t%C3%A9", "%00", "%01%7F", "queued%0A"] {
        let (status, refused) = boss.get(&format!("/runs?status[]={odd}")).await;
        assert_eq!(status, 422, "{odd}: {refused}");
        let (status, refused) = boss.get(&format!("/tasks/{task}/runs?status={odd}")).await;
        assert_eq!(status, 422, "{odd}: {refused}");
    }
}
