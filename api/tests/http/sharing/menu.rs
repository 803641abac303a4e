//! The whole path of the issue: the owner shares, a room manager enables, members,
//! social clients and restricted keys read the menu; disable, re-enable, rename and
//! revoke reach the menu; `/me` hints.

use super::{published_task, with_key};
use crate::environments::{Caller, callers};
use crate::support::{TestApp, assert_code};
use crate::tasks::ready_environment_version;
use reqwest::Method;
use serde_json::json;

#[tokio::test]
async fn owner_shares_manager_enables_members_and_restricted_keys_read_the_menu() {
    let app = TestApp::spawn().await;
    let (seed, boss, dm, member) = callers(&app).await;
    let outsider = Caller {
        app: &app,
        token: seed.token("acme", "outsider"),
    };
    let lab = seed.room("acme", "lab");
    let ops_room = seed.room("acme", "ops-room");
    let rnd = seed.department("acme", "rnd");
    let ready = ready_environment_version(&boss).await;
    let (task, version) = published_task(&boss, "weekly report", &ready).await;
    let (_, other_task_version) = published_task(&boss, "another", &ready).await;
    let _ = other_task_version;

    // Nothing is granted yet.
    let menu = format!("/chatrooms/{lab}/menu");
    assert_eq!(member.get(&menu).await.1["items"], json!([]));
    assert_code(
        &dm.post(
            &format!("/chatrooms/{lab}/granted-jobs/{task}/enable"),
            json!({}),
        )
        .await,
        409,
        "task_not_shared_to_room",
    );

    // The owner shares to the room's department, with one owner-filled slot.
    let (status, grant) = boss
        .post(
            &format!("/tasks/{task}/shares"),
            json!({"target_kind": "department", "target_id": rnd,
                   "secret_slot_policies": {"API_TOKEN": "owner"}}),
        )
        .await;
    assert_eq!(status, 200, "{grant}");
    assert_eq!(grant["state"], "active");
    assert_eq!(grant["generation"], 1);

    // Granted but not enabled: a room manager sees it, the menu does not.
    let (status, jobs) = dm.get(&format!("/chatrooms/{lab}/granted-jobs")).await;
    assert_eq!(status, 200, "{jobs}");
    assert_eq!(jobs["truncated"], false);
    let items = jobs["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{jobs}");
    assert_eq!(items[0]["task_id"], task.as_str());
    assert_eq!(items[0]["enabled"], false);
    assert_eq!(items[0]["share_target_kind"], "department");
    assert_eq!(items[0]["latest_published_version_id"], version.as_str());
    assert_eq!(items[0]["secret_slots"][0]["policy"], "owner");
    assert_eq!(items[0]["secret_slots"][1]["policy"], "borrower");
    assert_eq!(member.get(&menu).await.1["items"], json!([]));

    // Members cannot enable; a manager of another department's room cannot see it.
    let enable = format!("/chatrooms/{lab}/granted-jobs/{task}/enable");
    assert_eq!(member.post(&enable, json!({})).await.0, 403);
    assert_eq!(
        member
            .get(&format!("/chatrooms/{lab}/granted-jobs"))
            .await
            .0,
        403
    );
    assert_eq!(
        dm.post(
            &format!("/chatrooms/{ops_room}/granted-jobs/{task}/enable"),
            json!({})
        )
        .await
        .0,
        404
    );

    // The room manager enables (the newest published version by default).
    let (status, item) = dm.post(&enable, json!({})).await;
    assert_eq!(status, 200, "{item}");
    assert_eq!(item["enabled"], true);
    assert_eq!(item["task_version_id"], version.as_str());
    assert_eq!(item["authority_applicable"], true);
    let first_binding = item["binding_id"].as_str().unwrap().to_string();
    let (status, again) = dm.post(&enable, json!({"task_version_id": version})).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(
        again["binding_id"],
        first_binding.as_str(),
        "enable is idempotent"
    );

    // Every member reads the same menu.
    let (status, page) = member.get(&menu).await;
    assert_eq!(status, 200, "{page}");
    let items = page["items"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    let entry = &items[0];
    assert_eq!(entry["task_id"], task.as_str());
    assert_eq!(entry["task_name"], "weekly report");
    assert_eq!(entry["task_version_id"], version.as_str());
    assert!(
        entry["task_version_digest"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    assert_eq!(entry["input_schema"]["properties"]["n"]["type"], "integer");
    assert_eq!(
        entry["secret_slots"],
        json!([
            {"name": "API_TOKEN", "policy": "owner", "borrower_bound": false, "owner_bound": false, "effective_source": "missing"},
            {"name": "DB_PASSWORD", "policy": "borrower", "borrower_bound": false, "owner_bound": false, "effective_source": "missing"}
        ])
    );
    assert!(
        entry["runtime_contract"].get("work_command").is_none(),
        "{entry}"
    );
    assert!(!entry.to_string().contains("secret-command"));
    assert!(
        entry["secret_use_risk_warning"]
            .as_str()
            .unwrap()
            .contains("API_TOKEN")
    );
    assert_eq!(dm.get(&menu).await.1, page);
    assert_eq!(
        boss.get(&menu).await.1,
        page,
        "a company manager reads any room"
    );
    let line = seed.key("acme", "line");
    assert_eq!(with_key(&app, &line, Method::GET, &menu).await.1, page);

    // A restricted key reads its room's menu and gets 403 for another room.
    let bot = seed.key("acme", "bot");
    assert_eq!(
        with_key(&app, &bot, Method::GET, &menu).await,
        (200, page.clone())
    );
    let other_menu = format!("/chatrooms/{ops_room}/menu");
    assert_eq!(with_key(&app, &bot, Method::GET, &other_menu).await.0, 403);
    assert_eq!(outsider.get(&menu).await.0, 404, "not a member of the room");
    let globex = Caller {
        app: &app,
        token: seed.token("globex", "ceo"),
    };
    assert_eq!(globex.get(&menu).await.0, 404, "another company's room");

    // A rename reaches the menu.
    let (status, _) = boss
        .send(
            Method::PATCH,
            &format!("/tasks/{task}"),
            Some(json!({"name": "daily report"})),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        member.get(&menu).await.1["items"][0]["task_name"],
        "daily report"
    );

    // Disable keeps the share; re-enabling is a new binding.
    let (status, disabled) = dm
        .post(
            &format!("/chatrooms/{lab}/granted-jobs/{task}/disable"),
            json!({}),
        )
        .await;
    assert_eq!(status, 200, "{disabled}");
    assert_eq!(disabled["enabled"], false);
    assert_eq!(disabled["share_grant_id"], grant["id"]);
    assert_eq!(member.get(&menu).await.1["items"], json!([]));
    let (_, item) = dm.post(&enable, json!({})).await;
    assert_ne!(item["binding_id"], first_binding.as_str());
    assert_eq!(
        member.get(&menu).await.1["items"].as_array().unwrap().len(),
        1
    );

    // Revoking the share revokes the bindings it carried.
    let grant_id = grant["id"].as_str().unwrap();
    let (status, revoked) = boss
        .post(
            &format!("/tasks/{task}/shares/{grant_id}/revoke"),
            json!({"reason": "done"}),
        )
        .await;
    assert_eq!(status, 200, "{revoked}");
    assert_eq!(revoked["state"], "revoked");
    assert_eq!(member.get(&menu).await.1["items"], json!([]));
    let (_, history) = dm
        .get(&format!("/chatrooms/{lab}/bindings?lifecycle=all"))
        .await;
    let reasons: Vec<&str> = history["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["revoke_reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons, ["share_revoked", "disabled"], "{history}");
    assert_eq!(
        dm.get(&format!("/chatrooms/{lab}/bindings")).await.1["items"],
        json!([])
    );
    assert_code(
        &dm.post(&enable, json!({})).await,
        409,
        "task_not_shared_to_room",
    );

    // A company share reaches every room; resharing is a new generation.
    let (status, company_grant) = boss
        .post(
            &format!("/tasks/{task}/shares"),
            json!({"target_kind": "company", "target_id": seed.company("acme")}),
        )
        .await;
    assert_eq!(status, 200, "{company_grant}");
    let (status, item) = dm.post(&enable, json!({})).await;
    assert_eq!(status, 200, "{item}");
    assert_eq!(item["share_target_kind"], "company");
    assert_eq!(item["secret_slots"][0]["policy"], "borrower");
}

#[tokio::test]
async fn me_hints_at_manageable_rooms_and_creatable_scopes() {
    let app = TestApp::spawn().await;
    let (seed, boss, dm, member) = callers(&app).await;
    let (status, me) = boss.get("/me").await;
    assert_eq!(status, 200, "{me}");
    assert_eq!(me["manageable_chatroom_scope"]["scope"], "company");
    assert_eq!(me["manageable_chatroom_scope"]["chatroom_ids"], json!([]));
    let scopes: Vec<&str> = me["creatable_owner_scopes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["owner_scope"].as_str().unwrap())
        .collect();
    assert_eq!(scopes, ["company", "department"]);
    assert_eq!(
        me["creatable_owner_scopes"][1]["owner_ids"]
            .as_array()
            .unwrap()
            .len(),
        2
    );

    let (_, me) = dm.get("/me").await;
    assert_eq!(me["manageable_chatroom_scope"]["scope"], "chatroom");
    assert_eq!(
        me["manageable_chatroom_scope"]["chatroom_ids"],
        json!([seed.room("acme", "lab")])
    );
    assert_eq!(
        me["creatable_owner_scopes"],
        json!([{"owner_scope": "department", "owner_ids": [seed.department("acme", "rnd")], "truncated": false}])
    );
    assert_eq!(me["is_company_manager"], false);

    let (_, me) = member.get("/me").await;
    assert_eq!(me["manageable_chatroom_scope"]["chatroom_ids"], json!([]));
    assert_eq!(me["creatable_owner_scopes"], json!([]));
    let (status, me) = with_key(&app, &seed.key("acme", "line"), Method::GET, "/me").await;
    assert_eq!(status, 200, "{me}");
    assert_eq!(me["principal_type"], "social_media_client");
    assert_eq!(me["manageable_chatroom_scope"]["chatroom_ids"], json!([]));
    assert_eq!(
        with_key(&app, &seed.key("acme", "bot"), Method::GET, "/me")
            .await
            .0,
        403
    );
}

#[tokio::test]
async fn menu_pages_over_names_of_any_length() {
    let app = TestApp::spawn().await;
    let (seed, boss, dm, member) = callers(&app).await;
    let lab = seed.room("acme", "lab");
    let ready = ready_environment_version(&boss).await;
    // 256 characters, most of three UTF-8 bytes, between "a" and "zz".
    let long = format!("m{}", "語".repeat(255));
    let mut tasks = Vec::new();
    for name in ["a", long.as_str(), "zz"] {
        let (task, version) = published_task(&boss, name, &ready).await;
        let share = json!({"target_kind": "chatroom", "target_id": lab});
        assert_eq!(
            boss.post(&format!("/tasks/{task}/shares"), share).await.0,
            200
        );
        let enable = format!("/chatrooms/{lab}/granted-jobs/{task}/enable");
        let enabled = dm.post(&enable, json!({"task_version_id": version})).await;
        assert_eq!(enabled.0, 200, "{}", enabled.1);
        tasks.push(task);
    }
    let mut seen = Vec::new();
    let mut path = format!("/chatrooms/{lab}/menu?page_size=1");
    loop {
        let (status, page) = member.get(&path).await;
        assert_eq!(status, 200, "{page}");
        seen.push(page["items"][0]["task_id"].as_str().unwrap().to_string());
        let Some(token) = page["next_page_token"].as_str() else {
            break;
        };
        assert!(token.len() <= 512, "{} characters", token.len());
        path = format!("/chatrooms/{lab}/menu?page_size=1&page_token={token}");
    }
    assert_eq!(seen, tasks);
}
