//! The tool gate: the five tools load only for a trusted principal (never a
//! restricted key) with a valid turn naming that principal, in a room it can see
//! whose jobs list (set or auto-detected) holds `sandbox`.

use super::{Credential, call, enabled, listed, refused, rpc, turn};
use crate::environments::callers;
use crate::support::{As, TURN_KEY, TestApp, json};
use crate::tasks::ready_environment_version;
use api::agent::turn::{TurnClaims, TurnKeys};
use domain::principal::PrincipalType::{SocialMediaClient, User};
use reqwest::Method;
use serde_json::json;

const FIVE: [&str; 5] = [
    "sandbox_job_menu",
    "sandbox_submit_job",
    "sandbox_submitted_jobs",
    "sandbox_job_status",
    "sandbox_cancel_job",
];

#[tokio::test]
async fn tools_load_only_with_a_trusted_turn_in_a_room_with_the_sandbox_job() {
    let app = TestApp::spawn().await;
    let (seed, boss, dm, member) = callers(&app).await;
    let lab = seed.room("acme", "lab");
    let member_id = seed.user("acme", "member");
    let m = Credential::Jwt(&member.token);
    let good = turn(&app, lab, 1, (User, member_id), true);

    let (status, _) = rpc(&app, None, Some(&good), "tools/list", json!({})).await;
    assert_eq!(status, 418);
    let hello = json!({"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "test", "version": "0"}});
    let (status, init) = rpc(&app, Some(m), None, "initialize", hello.clone()).await;
    assert_eq!(status, 200, "{init}");
    assert!(
        init["result"]["capabilities"]["tools"].is_object(),
        "{init}"
    );
    // Revisions before structured tool results are not spoken.
    let mut old = hello;
    old["protocolVersion"] = json!("2024-11-05");
    let (_, refused_version) = rpc(&app, Some(m), None, "initialize", old).await;
    assert!(refused_version["error"].is_object(), "{refused_version}");

    // Nothing is enabled in the room and its jobs are auto-detected: no job.
    assert!(listed(&app, m, Some(&good)).await.is_empty());
    refused(
        &call(&app, m, &good, "sandbox_job_menu", json!({})).await,
        "unauthorized",
    );
    let patch = async |jobs: serde_json::Value| {
        let path = format!("/private/chatrooms/setting/jobs/{lab}");
        let request = app.request(Method::PATCH, &path).bearer_token(&dm.token);
        let (status, body) = json(request.json(&json!({"jobs": jobs})).send().await.unwrap()).await;
        assert_eq!(status, 200, "{body}");
    };
    patch(json!(["sandbox"])).await;
    assert_eq!(listed(&app, m, Some(&good)).await, FIVE);

    // Without a turn, with someone else's, an expired one, one signed with another
    // key, a login token or a room the caller cannot see: nothing loads.
    assert!(listed(&app, m, None).await.is_empty());
    let dm_turn = turn(&app, lab, 1, (User, seed.user("acme", "dm")), true);
    let now = chrono::Utc::now().timestamp();
    let claims = |exp: i64| TurnClaims {
        chatroom_id: lab,
        message_id: "m".into(),
        message_seq: 2,
        principal_type: User,
        principal_id: member_id,
        human: true,
        iat: now - 700,
        exp,
    };
    let expired = TurnKeys::new(TURN_KEY.as_bytes())
        .mint(claims(now - 1))
        .unwrap();
    let stranger = TurnKeys::new(b"another-turn-key-another-turn-key-000")
        .mint(claims(now + 600))
        .unwrap();
    let ops = seed.room("acme", "ops-room");
    let elsewhere = turn(&app, ops, 1, (User, member_id), true);
    for bad in [&dm_turn, &expired, &stranger, &member.token, &elsewhere] {
        assert!(listed(&app, m, Some(bad)).await.is_empty(), "{bad}");
        refused(
            &call(&app, m, bad, "sandbox_job_status", json!({})).await,
            "unauthorized",
        );
    }
    // A restricted key never loads the tools, even with its user's turn.
    let bot = seed.key("acme", "bot");
    assert!(
        listed(&app, Credential::Key(&bot), Some(&good))
            .await
            .is_empty()
    );
    // A social media client loads them with its own turn.
    let line = seed.key("acme", "line");
    let client = seed.0.companies["acme"].social_clients["line1"].id;
    let client_turn = turn(&app, lab, 3, (SocialMediaClient, client), false);
    assert_eq!(
        listed(&app, Credential::Key(&line), Some(&client_turn)).await,
        FIVE
    );

    // An explicit empty list removes the job; `null` auto-detects it from the
    // room's enabled tasks.
    patch(json!([])).await;
    assert!(listed(&app, m, Some(&good)).await.is_empty());
    patch(json!(null)).await;
    assert!(listed(&app, m, Some(&good)).await.is_empty());
    let ready = ready_environment_version(&boss).await;
    enabled(&boss, &dm, &lab.to_string(), &ready, "true\n", json!({})).await;
    assert_eq!(listed(&app, m, Some(&good)).await, FIVE);
}
