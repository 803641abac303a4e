//! Proposals: a version that requires confirmation is proposed, and only a strictly
//! later human turn of the same principal commits it with its own receipt; every
//! refusal of the agent table; superseding, cancelling, replaying, the kill switch
//! in the middle of a commit; and proposals surviving a restart.

use super::{Credential, call, call_at, enabled, refused, turn};
use crate::environments::callers;
use crate::general::switch;
use crate::runs::finished;
use crate::support::{JWT_SECRET, TURN_KEY, TestApp};
use crate::tasks::ready_environment_version;
use domain::principal::PrincipalType::User;
use serde_json::{Value, json};
use std::process::{Command, Stdio};
use std::time::Duration;

const SUBMIT: &str = "sandbox_submit_job";

fn commit(receipt: &Value) -> Value {
    json!({"mode": "commit", "proposal_receipt": receipt})
}

#[tokio::test]
async fn a_proposal_is_committed_only_by_a_later_human_turn_with_its_own_receipt() {
    let app = TestApp::spawn().await;
    let (seed, boss, dm, member) = callers(&app).await;
    let lab = seed.room("acme", "lab");
    let ready = ready_environment_version(&boss).await;
    let confirm = json!({"requires_confirmation": true});
    let (task, version) = enabled(
        &boss,
        &dm,
        &lab.to_string(),
        &ready,
        "echo confirmed\n",
        confirm,
    )
    .await;
    let member_id = seed.user("acme", "member");
    let m = Credential::Jwt(&member.token);
    let at = |seq: i64, human: bool| turn(&app, lab, seq, (User, member_id), human);
    let request =
        |n: i64| json!({"mode": "request", "task_version_id": version, "input": {"n": n}});

    let a = call(&app, m, &at(5, true), SUBMIT, request(1)).await;
    assert_eq!(
        (a["status"].as_str(), a["kind"].as_str()),
        (Some("ok"), Some("prepared")),
        "{a}"
    );
    assert_eq!(a["requires_confirmation"], true);
    assert_eq!(a["task_id"], task.as_str());
    assert!(a["summary"].as_str().unwrap().contains("job"), "{a}");
    let receipt = &a["proposal_receipt"];
    assert_eq!(receipt.as_str().unwrap().matches('.').count(), 4);

    let mut with_input = commit(receipt);
    with_input["input"] = json!({});
    refused(
        &call(&app, m, &at(6, true), SUBMIT, with_input).await,
        "validation_error",
    );
    refused(
        &call(&app, m, &at(5, true), SUBMIT, commit(receipt)).await,
        "same_turn",
    );
    refused(
        &call(&app, m, &at(4, true), SUBMIT, commit(receipt)).await,
        "not_later",
    );
    refused(
        &call(&app, m, &at(6, false), SUBMIT, commit(receipt)).await,
        "confirmation_rejected",
    );
    let bare = commit(&a["proposal_id"]);
    refused(
        &call(&app, m, &at(6, true), SUBMIT, bare).await,
        "forged_receipt",
    );
    let mut tampered = receipt.as_str().unwrap().to_string();
    let last = tampered.pop().unwrap();
    tampered.push(if last == 'A' { 'B' } else { 'A' });
    refused(
        &call(&app, m, &at(6, true), SUBMIT, commit(&json!(tampered))).await,
        "forged_receipt",
    );
    // Someone else's receipt is not theirs to commit.
    let dm_turn = turn(&app, lab, 6, (User, seed.user("acme", "dm")), true);
    let d = Credential::Jwt(&dm.token);
    refused(
        &call(&app, d, &dm_turn, SUBMIT, commit(receipt)).await,
        "not_found",
    );

    // The pending proposal is listed with a fresh receipt.
    let mine = call(&app, m, &at(6, true), "sandbox_submitted_jobs", json!({})).await;
    assert_eq!(
        mine["pending_proposals"][0]["proposal_id"], a["proposal_id"],
        "{mine}"
    );
    assert!(mine["pending_proposals"][0]["proposal_receipt"].is_string());

    // A newer request supersedes it.
    let b = call(&app, m, &at(6, true), SUBMIT, request(2)).await;
    assert_eq!(b["kind"], "prepared");
    refused(
        &call(&app, m, &at(7, true), SUBMIT, commit(receipt)).await,
        "proposal_not_pending",
    );
    // Asking again for the superseded proposal does not revive it (nor supersede
    // the pending one).
    let again = call(&app, m, &at(5, true), SUBMIT, request(1)).await;
    refused(&again, "proposal_not_pending");
    let won = call(
        &app,
        m,
        &at(7, true),
        SUBMIT,
        commit(&b["proposal_receipt"]),
    )
    .await;
    assert_eq!(won["kind"], "submitted", "{won}");
    assert_eq!(won["proposal_id"], b["proposal_id"]);
    assert_eq!(won["submission_source"], "agent");
    assert_eq!(won["task_version_id"], version.as_str());
    assert_eq!(won["run_status"], "queued");
    let run = won["run_id"].clone();
    let replay = call(
        &app,
        m,
        &at(7, true),
        SUBMIT,
        commit(&b["proposal_receipt"]),
    )
    .await;
    assert_eq!(
        (replay["kind"].as_str(), &replay["run_id"]),
        (Some("replay"), &run)
    );
    refused(
        &call(
            &app,
            m,
            &at(8, true),
            SUBMIT,
            commit(&b["proposal_receipt"]),
        )
        .await,
        "already_committed",
    );
    // A turn that committed one proposal commits no other.
    let c = call(&app, m, &at(7, true), SUBMIT, request(3)).await;
    refused(
        &call(
            &app,
            m,
            &at(7, true),
            SUBMIT,
            commit(&c["proposal_receipt"]),
        )
        .await,
        "receipt_reused",
    );
    let done = finished(&member, &lab.to_string(), run.as_str().unwrap()).await;
    assert_eq!(
        (done["status"].as_str(), done["submission_source"].as_str()),
        (Some("completed"), Some("agent"))
    );

    // Cancelling the pending proposal.
    let cancelled = call(&app, m, &at(8, true), "sandbox_cancel_job", json!({})).await;
    assert_eq!(cancelled["kind"], "proposal_cancelled", "{cancelled}");
    assert_eq!(cancelled["proposal_id"], c["proposal_id"]);
    refused(
        &call(
            &app,
            m,
            &at(9, true),
            SUBMIT,
            commit(&c["proposal_receipt"]),
        )
        .await,
        "proposal_not_pending",
    );

    // The kill switch fails a commit transiently: the proposal stays committable.
    let d_proposal = call(&app, m, &at(9, true), SUBMIT, request(4)).await;
    let acme = seed.company("acme");
    switch(&app, Some(acme), false).await;
    let off = call(
        &app,
        m,
        &at(10, true),
        SUBMIT,
        commit(&d_proposal["proposal_receipt"]),
    )
    .await;
    refused(&off, "provider_unavailable");
    switch(&app, Some(acme), true).await;
    let on = call(
        &app,
        m,
        &at(10, true),
        SUBMIT,
        commit(&d_proposal["proposal_receipt"]),
    )
    .await;
    assert_eq!(on["kind"], "submitted", "{on}");

    // A proposal whose staged input is gone cannot be confirmed, and stays pending.
    let e = call(&app, m, &at(11, true), SUBMIT, request(5)).await;
    let inputs = app.data_dir().join("objects/runs/inputs");
    for file in walkdir::WalkDir::new(&inputs)
        .into_iter()
        .filter_map(Result::ok)
    {
        if file.file_type().is_file() && std::fs::read(file.path()).unwrap() == br#"{"n":5}"# {
            std::fs::remove_file(file.path()).unwrap();
        }
    }
    let lost = call(
        &app,
        m,
        &at(12, true),
        SUBMIT,
        commit(&e["proposal_receipt"]),
    )
    .await;
    refused(&lost, "confirmation_input_unavailable");
    let mine = call(&app, m, &at(12, true), "sandbox_submitted_jobs", json!({})).await;
    assert_eq!(
        mine["pending_proposals"][0]["proposal_id"], e["proposal_id"],
        "{mine}"
    );

    let kinds: Vec<String> = sqlx::query_scalar(
        "SELECT DISTINCT event_type FROM events WHERE aggregate_type = 'agent_proposal' ORDER BY 1",
    )
    .fetch_all(&app.db.pool)
    .await
    .unwrap();
    assert_eq!(
        kinds,
        [
            "ProposalCancelled",
            "ProposalCommitAbandoned",
            "ProposalCommitStarted",
            "ProposalCommitted",
            "ProposalPrepared",
            "ProposalSuperseded"
        ]
    );
}

#[tokio::test]
async fn a_proposal_and_its_receipt_survive_a_restart() {
    let app = TestApp::without_executor().await;
    let (seed, boss, dm, member) = callers(&app).await;
    let lab = seed.room("acme", "lab");
    let ready = ready_environment_version(&boss).await;
    let confirm = json!({"requires_confirmation": true});
    let (_, version) = enabled(&boss, &dm, &lab.to_string(), &ready, "true\n", confirm).await;
    let member_id = seed.user("acme", "member");
    let m = Credential::Jwt(&member.token);
    let request = json!({"mode": "request", "task_version_id": version, "input": {}});
    let prepared = call(
        &app,
        m,
        &turn(&app, lab, 1, (User, member_id), true),
        SUBMIT,
        request,
    )
    .await;
    assert_eq!(prepared["kind"], "prepared", "{prepared}");

    // Another server process on the same database and keys commits it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut other = Command::new(env!("CARGO_BIN_EXE_sandbox-api"))
        .arg("serve")
        .env("DATABASE_URL", &app.db.url)
        .env("SANDBOX_DATA_DIR", app.data_dir())
        .env("SANDBOX_LISTEN", format!("127.0.0.1:{port}"))
        .env("SANDBOX_JWT_SECRET", JWT_SECRET)
        .env("SANDBOX_TURN_KEY", TURN_KEY)
        .env("SANDBOX_RUN_SLOTS", "0")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the server binary starts");
    let base = format!("http://127.0.0.1:{port}");
    let started = std::time::Instant::now();
    while app
        .client
        .get(format!("{base}/healthz"))
        .send()
        .await
        .is_err()
    {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the server never listened"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let later = turn(&app, lab, 2, (User, member_id), true);
    let committed = call_at(
        &app.client,
        &base,
        m,
        &later,
        SUBMIT,
        commit(&prepared["proposal_receipt"]),
    )
    .await;
    other.kill().unwrap();
    other.wait().unwrap();
    assert_eq!(committed["kind"], "submitted", "{committed}");
    let run: Value = json!(committed["run_id"]);
    let (status, detail) = member
        .get(&format!("/chatrooms/{lab}/runs/{}", run.as_str().unwrap()))
        .await;
    assert_eq!(status, 200, "{detail}");
    assert_eq!(detail["submission_source"], "agent");
}

/// Writes one record through the run's writeback credential.
const WRITER: &str = r#"
wget -q -O - --header "Authorization: Bearer $SERVICE_CT_WRITEBACK_TOKEN" \
     --header 'Content-Type: application/json' \
     --post-data '{"op":"create","data":{"name":"from the agent"}}' "$SERVICE_CT_WRITEBACK_URL"
"#;

#[tokio::test]
async fn a_writeback_version_is_always_proposed_and_writes_as_the_confirming_member() {
    let t = crate::tables::fixture::Tables::new().await;
    let app = &t.app;
    let caller = |user: &str| crate::runs::table_caller(&t, user);
    let (boss, dm, member) = (caller("boss"), caller("dm"), caller("member"));
    let table = t.table("company", "boss", "leads").await;
    t.column(&table, json!({"name": "name", "type": "string"}))
        .await;
    let table_id = table.rsplit('/').next().unwrap().to_string();
    let permissions = async |insert: bool| {
        let body = json!({"can_read": "all", "can_insert": insert, "can_edit": "none"});
        let path = format!("{table}/default-permissions");
        let (status, answer) = t
            .call(reqwest::Method::PATCH, &path, "boss", Some(body))
            .await;
        assert_eq!(status, 200, "{answer}");
    };
    permissions(false).await;
    let ready = ready_environment_version(&boss).await;
    let rnd = t.department("rnd").to_string();
    let task = json!({"name": "lead writer", "owner_scope": "department", "owner_id": rnd});
    let (status, task) = dm.post("/tasks", task).await;
    assert_eq!(status, 200, "{task}");
    let task = task["id"].as_str().unwrap().to_string();
    let policy =
        json!({"kind": "custom_table_writeback", "table_id": table_id, "allowed_ops": "create"});
    let fields = json!({"environment_version_id": ready, "work_script": WRITER,
                        "timeout_seconds": 120, "output_policy": policy});
    let (status, version) = dm.post(&format!("/tasks/{task}/versions"), fields).await;
    assert_eq!(status, 200, "{version}");
    let version = version["id"].as_str().unwrap().to_string();
    let (status, published) = boss
        .post(
            &format!("/tasks/{task}/versions/{version}/publish"),
            json!({}),
        )
        .await;
    assert_eq!(status, 200, "{published}");
    let share = json!({"target_kind": "company", "target_id": t.seed.company("acme")});
    assert_eq!(
        boss.post(&format!("/tasks/{task}/shares"), share).await.0,
        200
    );
    let lab = t.seed.room("acme", "lab");
    let enable = format!("/chatrooms/{lab}/granted-jobs/{task}/enable");
    let (status, body) = dm.post(&enable, json!({"task_version_id": version})).await;
    assert_eq!(status, 200, "{body}");

    let m = Credential::Jwt(&member.token);
    let at = |seq: i64| turn(app, lab, seq, (User, t.user("member")), true);
    let request = json!({"mode": "request", "task_version_id": version, "input": {}});
    // A member who may not create the table's records cannot even propose.
    refused(
        &call(app, m, &at(1), SUBMIT, request.clone()).await,
        "unauthorized",
    );
    permissions(true).await;
    let prepared = call(app, m, &at(1), SUBMIT, request).await;
    assert_eq!(prepared["kind"], "prepared", "{prepared}");
    assert_eq!(prepared["requires_confirmation"], false);
    let committed = call(
        app,
        m,
        &at(2),
        SUBMIT,
        commit(&prepared["proposal_receipt"]),
    )
    .await;
    assert_eq!(committed["kind"], "submitted", "{committed}");
    let run = committed["run_id"].as_str().unwrap();
    let done = finished(&member, &lab.to_string(), run).await;
    assert_eq!(done["status"], "completed", "{done}");
    let user = format!("user:{}", t.user("member"));
    let written = crate::runs::named_records(&t, &table).await;
    assert_eq!(written, [("from the agent".to_string(), user)]);
}

#[tokio::test]
async fn the_janitor_expires_proposals_and_settles_stalled_commits() {
    use domain::agent::proposal::{AgentProposal, ProposalCommand, ProposalTerms, Turn};
    use domain::directory::PrincipalRef;
    let app = TestApp::without_executor().await;
    let seed = app.seed().await;
    let long_ago = chrono::Utc::now() - chrono::Duration::minutes(10);
    let mut meta = api::admin::operator_metadata("test");
    meta.time = long_ago;
    let terms = |id: uuid::Uuid, expires_at| ProposalTerms {
        proposal_id: id,
        company_id: seed.company("acme"),
        chatroom_id: seed.room("acme", "lab"),
        principal: PrincipalRef {
            kind: User,
            id: seed.user("acme", "member"),
        },
        task_id: uuid::Uuid::new_v4(),
        task_version_id: uuid::Uuid::new_v4(),
        input: domain::runs::run::StoredObject {
            key: "runs/inputs/x.json".into(),
            byte_size: 2,
            digest: "sha256:00".into(),
        },
        timeout_seconds: 60,
        origin: Turn {
            message_id: "m1".into(),
            message_seq: 1,
        },
        summary: "run".into(),
        requires_confirmation: true,
        expires_at,
    };
    let (expiring, stalled) = (uuid::Uuid::new_v4(), uuid::Uuid::new_v4());
    let bus = &app.state.bus;
    let run = async |id: uuid::Uuid, command| {
        bus.execute::<AgentProposal>(&id.to_string(), command, &meta)
            .await
            .unwrap();
    };
    run(
        expiring,
        ProposalCommand::Prepare(Box::new(terms(expiring, long_ago))),
    )
    .await;
    let later = long_ago + chrono::Duration::hours(1);
    run(
        stalled,
        ProposalCommand::Prepare(Box::new(terms(stalled, later))),
    )
    .await;
    let begin = ProposalCommand::BeginCommit {
        run_id: uuid::Uuid::new_v4(),
        turn: Turn {
            message_id: "m2".into(),
            message_seq: 2,
        },
        now: long_ago,
    };
    run(stalled, begin).await;

    api::runtime::janitor::sweep(&app.state.runtime)
        .await
        .unwrap();
    let state = async |id: uuid::Uuid| -> String {
        sqlx::query_scalar("SELECT state FROM agent_proposals WHERE id = $1")
            .bind(id)
            .fetch_one(&app.db.pool)
            .await
            .unwrap()
    };
    assert_eq!(state(expiring).await, "expired");
    // The stalled commit created no run: the proposal is committable again.
    assert_eq!(state(stalled).await, "prepared");
}
