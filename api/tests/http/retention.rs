//! Retention notices and image storage cleanup: the janitor warns a run's
//! submitter a day before its contents expire, removes the images of archived
//! environment versions nothing pinned for the company's retention, and a curated
//! environment's new version is announced to the companies pinning it; an
//! expired run's shared inputs file goes only when no submission stages it again.

use crate::environments::{Caller, built_image, busybox_context, callers};
use crate::runs::{runnable, submit};
use crate::support::{As, TestApp, json};
use crate::tasks::{company_task, draft};
use api::runtime::buildah::Buildah;
use domain::environments::archive::ArchiveFormat;
use reqwest::Method;
use serde_json::{Value, json as body};

const CENTER: &str = "/private/module/notifications";

/// The caller's notifications of one kind, newest first.
async fn notified(caller: &Caller<'_>, kind: &str) -> Vec<Value> {
    let request = caller
        .app
        .request(Method::GET, CENTER)
        .bearer_token(&caller.token);
    let (status, page) = json(request.send().await.unwrap()).await;
    assert_eq!(status, 200, "{page}");
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["event"] == kind)
        .cloned()
        .collect()
}

async fn sweep(app: &TestApp) {
    api::runtime::janitor::sweep(&app.state.runtime)
        .await
        .unwrap();
}

/// A run of `member` in `lab` of a version `boss` published, cancelled (so ended);
/// answers its id.
async fn ended_run(boss: &Caller<'_>, member: &Caller<'_>, lab: &str) -> String {
    let ready = crate::tasks::ready_environment_version(boss).await;
    let (_, version) = runnable(boss, &ready, "echo hi\n", body!({})).await;
    let (status, run) = submit(
        member,
        lab,
        "k1",
        body!({"task_version_id": version, "input": {}}),
    )
    .await;
    assert_eq!(status, 200, "{run}");
    let run_id = run["id"].as_str().unwrap().to_string();
    let path = format!("/chatrooms/{lab}/runs/{run_id}/cancel");
    assert_eq!(member.post(&path, body!({})).await.0, 200);
    run_id
}

#[tokio::test]
async fn the_submitter_is_warned_a_day_before_run_contents_expire() {
    let app = TestApp::without_executor().await;
    let (seed, boss, _, member) = callers(&app).await;
    let lab = seed.room("acme", "lab").to_string();
    let run_id = ended_run(&boss, &member, &lab).await;
    let backdate = |age: &'static str| {
        sqlx::query("UPDATE runs SET terminal_at = now() - $2::interval WHERE id = $1::uuid")
            .bind(run_id.clone())
            .bind(age)
            .execute(&app.db.pool)
    };

    // Two days before the end of the 30 days: nothing yet.
    backdate("28 days").await.unwrap();
    sweep(&app).await;
    assert!(notified(&member, "run_content_expiring").await.is_empty());

    // Within the last day: one warning, however often the janitor passes.
    backdate("29 days 12 hours").await.unwrap();
    sweep(&app).await;
    sweep(&app).await;
    let warned = notified(&member, "run_content_expiring").await;
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert_eq!(warned[0]["payload"]["run_id"], run_id.as_str());
    assert!(warned[0]["payload"]["expires_at"].is_string());
    assert!(
        notified(&boss, "run_content_expiring").await.is_empty(),
        "only the submitter"
    );
    let (_, content) = member
        .get(&format!("/chatrooms/{lab}/runs/{run_id}/content"))
        .await;
    assert_eq!(content["state"], "active", "still readable until the end");

    // Past it: expired.
    backdate("31 days").await.unwrap();
    sweep(&app).await;
    assert_eq!(notified(&member, "run_content_expired").await.len(), 1);
}

/// A company whose operator set limits before it recorded a policy has a settings
/// row without one: its runs keep the default 30 days, not the row's empty 0.
#[tokio::test]
async fn operator_limits_alone_do_not_shorten_retention() {
    let app = TestApp::without_executor().await;
    let (seed, boss, _, member) = callers(&app).await;
    app.set_limits(seed.company("acme"), |l| l.run_concurrency_limit = 5)
        .await;
    let lab = seed.room("acme", "lab").to_string();
    let run_id = ended_run(&boss, &member, &lab).await;
    sqlx::query("UPDATE runs SET terminal_at = now() - interval '2 days' WHERE id = $1::uuid")
        .bind(&run_id)
        .execute(&app.db.pool)
        .await
        .unwrap();

    sweep(&app).await;
    let (_, content) = member
        .get(&format!("/chatrooms/{lab}/runs/{run_id}/content"))
        .await;
    assert_eq!(content["state"], "active", "{content}");
    assert!(notified(&member, "run_content_expired").await.is_empty());
    assert!(notified(&member, "run_content_expiring").await.is_empty());
}

#[tokio::test]
async fn images_unreferenced_past_their_retention_are_removed_and_their_owners_told() {
    let app = TestApp::without_executor().await;
    let (seed, boss, _, member) = callers(&app).await;
    let buildah = Buildah::new(&app.state.runtime.builder);
    let env = boss.environment("retained").await;
    let (_, kept_image) = built_image(&app, &boss, &env, "").await;
    let (pinned, pinned_image) = built_image(&app, &boss, &env, "").await;
    let (unpinned, unpinned_image) = built_image(&app, &boss, &env, "").await;
    let task = company_task(&boss, "pinning").await;
    let fields = body!({"environment_version_id": pinned, "work_script": "true\n",
                        "timeout_seconds": 60});
    let (status, task_version) = draft(&boss, &task, fields).await;
    assert_eq!(status, 200, "{task_version}");
    for version in [&pinned, &unpinned] {
        let path = format!("/environments/{env}/versions/{version}/archive");
        let (status, archived) = boss.post(&path, body!({})).await;
        assert_eq!(status, 200, "{archived}");
    }
    let age = |days: i64| {
        sqlx::query(
            "UPDATE environment_versions SET updated_at = now() - make_interval(days => $2)
              WHERE id = ANY($1::uuid[])",
        )
        .bind(vec![pinned.clone(), unpinned.clone()])
        .bind(days as i32)
        .execute(&app.db.pool)
    };

    // Within the company's 30 days nothing goes.
    age(29).await.unwrap();
    sweep(&app).await;
    assert!(buildah.image_exists(&unpinned_image).await);

    // Past them: the archived, unpinned image goes; the one a live task version
    // pins and the one not archived stay.
    age(31).await.unwrap();
    sweep(&app).await;
    assert!(!buildah.image_exists(&unpinned_image).await);
    assert!(buildah.image_exists(&pinned_image).await);
    assert!(buildah.image_exists(&kept_image).await);
    let (status, version) = boss
        .get(&format!("/environments/{env}/versions/{unpinned}"))
        .await;
    assert_eq!((status, version["state"].as_str()), (200, Some("archived")));
    let told = notified(&member, "image_storage_cleanup_completed").await;
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(told[0]["payload"]["version_id"], unpinned.as_str());
    assert_eq!(told[0]["payload"]["environment_id"], env.as_str());
    let globex = Caller {
        app: &app,
        token: seed.token("globex", "ceo"),
    };
    assert!(
        notified(&globex, "image_storage_cleanup_completed")
            .await
            .is_empty()
    );

    // Once the pinning task version is archived, its image follows after the
    // retention counted from that archive.
    let id = task_version["id"].as_str().unwrap();
    let path = format!("/tasks/{task}/versions/{id}/archive");
    let (status, archived) = boss.post(&path, body!({})).await;
    assert_eq!(status, 200, "{archived}");
    sweep(&app).await;
    assert!(buildah.image_exists(&pinned_image).await, "archived today");
    sqlx::query(
        "UPDATE task_versions SET updated_at = now() - interval '31 days' WHERE id = $1::uuid",
    )
    .bind(id)
    .execute(&app.db.pool)
    .await
    .unwrap();
    sweep(&app).await;
    assert!(!buildah.image_exists(&pinned_image).await);
    assert_eq!(
        notified(&member, "image_storage_cleanup_completed")
            .await
            .len(),
        2
    );
}

#[tokio::test]
async fn a_curated_environment_s_new_version_is_announced_to_the_companies_pinning_it() {
    let app = TestApp::spawn().await;
    let (seed, boss, _, member) = callers(&app).await;
    let first = api::admin::curated::publish(
        &app.state,
        "operator",
        "curated",
        "",
        ArchiveFormat::TarGz,
        busybox_context("", &[]),
    )
    .await
    .unwrap();
    let env = first.environment_id.to_string();
    let built = boss
        .finished(
            &env,
            &first.version_id.to_string(),
            &first.attempt_id.to_string(),
        )
        .await;
    assert_eq!(built["status"], "completed", "{built}");
    let task = company_task(&boss, "on curated").await;
    let fields = body!({"environment_version_id": first.version_id, "work_script": "true\n",
                        "timeout_seconds": 60});
    let (status, drafted) = draft(&boss, &task, fields).await;
    assert_eq!(status, 200, "{drafted}");

    let second = api::admin::curated::publish_version(
        &app.state,
        "operator",
        first.environment_id,
        ArchiveFormat::TarGz,
        busybox_context("", &[]),
    )
    .await
    .unwrap();
    assert_eq!(second.environment_id, first.environment_id);
    let finished = boss
        .finished(
            &env,
            &second.version_id.to_string(),
            &second.attempt_id.to_string(),
        )
        .await;
    assert_eq!(finished["status"], "completed", "{finished}");

    let told = notified(&member, "curated_environment_published").await;
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(told[0]["payload"]["environment_id"], env.as_str());
    assert_eq!(
        told[0]["payload"]["version_id"],
        second.version_id.to_string()
    );
    assert_eq!(told[0]["payload"]["environment_name"], "curated");
    let globex = Caller {
        app: &app,
        token: seed.token("globex", "ceo"),
    };
    assert!(
        notified(&globex, "curated_environment_published")
            .await
            .is_empty(),
        "globex pins nothing"
    );

    // A company environment is not curated: no new version of it this way.
    let own = boss.environment("own").await;
    let refused = api::admin::curated::publish_version(
        &app.state,
        "operator",
        own.parse().unwrap(),
        ArchiveFormat::TarGz,
        busybox_context("", &[]),
    )
    .await;
    assert!(refused.is_err());
}

/// Submits `input` to `version` in `lab` under `key` and cancels the run (so it
/// ends at once); answers its id.
async fn cancelled_run(member: &Caller<'_>, lab: &str, version: &str, key: &str) -> String {
    let body = body!({"task_version_id": version, "input": {"n": 1}});
    let (status, run) = submit(member, lab, key, body).await;
    assert_eq!(status, 200, "{run}");
    cancelled(member, lab, run["id"].as_str().unwrap()).await
}

/// Cancels a run and waits for its end.
async fn cancelled(member: &Caller<'_>, lab: &str, run_id: &str) -> String {
    let path = format!("/chatrooms/{lab}/runs/{run_id}/cancel");
    assert_eq!(member.post(&path, body!({})).await.0, 200);
    crate::runs::finished(member, lab, run_id).await;
    run_id.to_string()
}

/// Moves a run's end past the default retention.
async fn past_retention(app: &TestApp, run_id: &str) {
    sqlx::query("UPDATE runs SET terminal_at = now() - interval '31 days' WHERE id = $1::uuid")
        .bind(run_id)
        .execute(&app.db.pool)
        .await
        .unwrap();
}

/// Sets a file's modification time two hours back.
fn aged(file: &std::path::Path) {
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(2 * 3600);
    let handle = std::fs::File::options().write(true).open(file).unwrap();
    handle.set_modified(old).unwrap();
}

#[tokio::test]
async fn an_expired_run_s_input_is_kept_when_staged_again_and_deleted_under_its_lock() {
    let app = TestApp::spawn().await;
    let (seed, boss, _, member) = callers(&app).await;
    let lab = seed.room("acme", "lab").to_string();
    let ready = crate::tasks::ready_environment_version(&boss).await;
    let (_, version) = runnable(&boss, &ready, "echo hi\n", body!({})).await;
    let first = cancelled_run(&member, &lab, &version, "first").await;
    let (key, company): (String, uuid::Uuid) =
        sqlx::query_as("SELECT input_key, company_id FROM runs WHERE id = $1::uuid")
            .bind(&first)
            .fetch_one(&app.db.pool)
            .await
            .unwrap();
    let file = app.data_dir().join("objects").join(&key);

    // A retry puts its source's input file in place again, as freshly staged: a
    // sweep that does not see the retry yet (its read model row not written; here
    // its contents marked expired) keeps the file written two hours ago.
    aged(&file);
    let retry = format!("/chatrooms/{lab}/runs/{first}/retry");
    let (status, retried) = crate::runs::post_keyed(&member, &retry, "again", None).await;
    assert_eq!(status, 200, "{retried}");
    let retried = cancelled(&member, &lab, retried["id"].as_str().unwrap()).await;
    sqlx::query("UPDATE runs SET content_state = 'expired' WHERE id = $1::uuid")
        .bind(&retried)
        .execute(&app.db.pool)
        .await
        .unwrap();
    past_retention(&app, &first).await;
    sweep(&app).await;
    assert!(file.exists(), "the retry's input stays");

    // Past retention, held by no other run, written two hours ago: the file goes,
    // but not while a submission of the same bytes holds its lock.
    let last = cancelled_run(&member, &lab, &version, "last").await;
    aged(&file);
    past_retention(&app, &last).await;
    let held = api::admission::object_lock(&app.db.pool, company, &key)
        .await
        .unwrap();
    let runtime = app.state.runtime.clone();
    let sweeping = tokio::spawn(async move { api::runtime::janitor::sweep(&runtime).await });
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(file.exists(), "the janitor waits for the lock");
    assert!(!sweeping.is_finished());
    drop(held);
    sweeping.await.unwrap().unwrap();
    assert!(!file.exists(), "then deletes the expired run's input");
}
