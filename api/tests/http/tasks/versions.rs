//! Task versions: drafts, publish against a built environment, immutability,
//! archive, and the owner and borrower views.

use super::{company_task, draft, draft_environment_version, ready_environment_version};
use crate::environments::callers;
use crate::support::{As, TestApp, assert_code};
use reqwest::Method;
use serde_json::{Value, json};

/// Every field a draft can carry.
fn full_fields(environment_version_id: &str) -> Value {
    json!({
        "environment_version_id": environment_version_id,
        "startup_script": "set -e\n",
        "work_script": "cat \"$SERVICE_INPUTS_FILE\" > \"$SERVICE_OUTPUT_FILE\"\n",
        "ordinary_env": {"MODE": "fast"},
        "input_instructions": "send a number",
        "input_example": "{\"n\": 3}",
        "input_schema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        "work_command": ". /workspace/work.sh && echo done",
        "timeout_seconds": 600,
        "secret_slot_declarations": ["API_TOKEN", {"name": "DB_PASSWORD"}],
        "requires_confirmation": true
    })
}

const OWNER_ONLY: &[&str] = &[
    "startup_script",
    "work_script",
    "ordinary_env",
    "secret_slot_declarations",
    "output_policy",
    "source_digest",
];

#[tokio::test]
async fn a_task_goes_from_draft_to_published_against_a_built_environment() {
    let app = TestApp::spawn().await;
    let (seed, boss, dm, member) = callers(&app).await;
    let ready = ready_environment_version(&boss).await;
    let unbuilt = draft_environment_version(&boss).await;
    let task = company_task(&boss, "echo").await;

    let (status, version) = draft(&boss, &task, full_fields(&unbuilt)).await;
    assert_eq!(status, 200, "{version}");
    assert_eq!(version["state"], "draft");
    assert_eq!(version["version_number"], 1);
    assert_eq!(
        version["input_example"],
        json!({"n": 3}),
        "text JSON comes back as a value"
    );
    let id = version["id"].as_str().unwrap();
    let path = format!("/tasks/{task}/versions/{id}");
    assert_code(
        &boss.post(&format!("{path}/publish"), json!({})).await,
        409,
        "environment_version_not_ready",
    );
    let (status, edited) = boss
        .send(
            Method::PATCH,
            &path,
            Some(json!({"environment_version_id": ready, "work_command": null})),
        )
        .await;
    assert_eq!(status, 200, "{edited}");
    assert_eq!(edited["work_command"], Value::Null);
    assert_eq!(edited["environment_name"], "ready");
    assert_eq!(
        edited["startup_script"], "set -e\n",
        "untouched fields stay"
    );

    app.set_limits(seed.company("acme"), |l| l.timeout_ceiling_seconds = 300)
        .await;
    let ceiling = boss.post(&format!("{path}/publish"), json!({})).await;
    assert_eq!(
        assert_code(&ceiling, 422, "timeout_exceeds_ceiling")["ceiling"],
        300
    );
    app.set_limits(seed.company("acme"), |l| l.timeout_ceiling_seconds = 86_400)
        .await;

    let (status, published) = boss.post(&format!("{path}/publish"), json!({})).await;
    assert_eq!(status, 200, "{published}");
    assert_eq!(published["state"], "published");
    assert_eq!(published["content_state"], "active");
    assert!(
        published["canonical_digest"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    assert!(
        published["content_hash"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    assert!(published["published_at"].is_string());
    assert_eq!(published["update_available"], false);
    assert_code(
        &boss.post(&format!("{path}/publish"), json!({})).await,
        409,
        "illegal_state_transition",
    );
    assert_code(
        &boss
            .send(Method::PATCH, &path, Some(json!({"timeout_seconds": 60})))
            .await,
        409,
        "illegal_state_transition",
    );

    let (_, second) = draft(
        &boss,
        &task,
        json!({"environment_version_id": ready, "work_script": "true"}),
    )
    .await;
    let second_id = second["id"].as_str().unwrap();
    assert_eq!(second["version_number"], 2);
    boss.post(
        &format!("/tasks/{task}/versions/{second_id}/publish"),
        json!({}),
    )
    .await;
    assert_eq!(boss.get(&path).await.1["update_available"], true);
    assert_eq!(
        boss.get(&format!("/tasks/{task}")).await.1["latest_published_version_id"],
        second_id
    );

    let (_, borrowed) = member.get(&path).await;
    assert_eq!(borrowed["update_available"], true);
    let (status, archived) = boss.post(&format!("{path}/archive"), json!({})).await;
    assert_eq!(status, 200, "{archived}");
    assert_eq!(archived["state"], "archived");
    assert_code(
        &boss.post(&format!("{path}/archive"), json!({})).await,
        409,
        "illegal_state_transition",
    );
    let (_, active) = boss.get(&format!("/tasks/{task}/versions")).await;
    assert_eq!(active["items"].as_array().unwrap().len(), 1);
    let (_, all) = boss
        .get(&format!("/tasks/{task}/versions?lifecycle=all"))
        .await;
    assert_eq!(all["items"].as_array().unwrap().len(), 2);

    let (_, third) = draft(&boss, &task, json!({"environment_version_id": ready})).await;
    boss.post(&format!("/tasks/{task}/archive"), json!({}))
        .await;
    let (_, after) = boss
        .get(&format!("/tasks/{task}/versions?lifecycle=all"))
        .await;
    assert!(
        after["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|v| v["state"] == "archived"),
        "archiving the task archives every version: {after}"
    );
    assert_code(
        &draft(&boss, &task, json!({"environment_version_id": ready})).await,
        409,
        "task_archived",
    );
    assert_eq!(third["state"], "draft");

    let policy_task = company_task(&boss, "writer").await;
    let created = app
        .request(Method::POST, "/private/module/custom_tables/company/tables")
        .bearer_token(&boss.token)
        .json(&json!({"name": "outputs"}))
        .send()
        .await
        .unwrap();
    let (status, table) = crate::support::json(created).await;
    assert_eq!(status, 201, "{table}");
    let table = table["id"].as_str().unwrap();
    let (status, with_policy) = draft(
        &boss,
        &policy_task,
        json!({"environment_version_id": ready,
               "output_policy": {"kind": "custom_table_writeback", "table_id": table, "allowed_ops": "create"}}),
    )
    .await;
    assert_eq!(status, 200, "{with_policy}");
    assert_eq!(
        with_policy["output_policy"]["kind"],
        "custom_table_writeback"
    );
    assert_code(
        &boss
            .post(
                &format!(
                    "/tasks/{policy_task}/versions/{}/publish",
                    with_policy["id"].as_str().unwrap()
                ),
                json!({}),
            )
            .await,
        409,
        "output_policy_owner_scope_unsupported",
    );

    // A department task may publish a writeback policy while its table exists, by a
    // publisher who may make every write it allows (the company table's manager).
    let rnd = seed.department("acme", "rnd").to_string();
    let (_, rnd_task) = dm
        .post(
            "/tasks",
            json!({"name": "rnd writer", "owner_scope": "department", "owner_id": rnd}),
        )
        .await;
    let rnd_task = rnd_task["id"].as_str().unwrap();
    let policy = json!({"kind": "custom_table_writeback", "table_id": table, "allowed_ops": "create,update"});
    let (_, kept) = draft(
        &dm,
        rnd_task,
        json!({"environment_version_id": ready, "output_policy": policy}),
    )
    .await;
    let (_, orphan) = draft(
        &dm,
        rnd_task,
        json!({"environment_version_id": ready, "output_policy": policy}),
    )
    .await;
    let (status, published) = boss
        .post(
            &format!(
                "/tasks/{rnd_task}/versions/{}/publish",
                kept["id"].as_str().unwrap()
            ),
            json!({}),
        )
        .await;
    assert_eq!(status, 200, "{published}");
    let deleted = app
        .request(
            Method::DELETE,
            &format!("/private/module/custom_tables/company/tables/{table}"),
        )
        .bearer_token(&boss.token)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status().as_u16(), 200);
    assert_code(
        &dm.post(
            &format!(
                "/tasks/{rnd_task}/versions/{}/publish",
                orphan["id"].as_str().unwrap()
            ),
            json!({}),
        )
        .await,
        409,
        "output_policy_unsatisfiable",
    );
}

#[tokio::test]
async fn owners_and_borrowers_see_different_fields() {
    let app = TestApp::spawn().await;
    let (_, boss, _, member) = callers(&app).await;
    let ready = ready_environment_version(&boss).await;
    let task = company_task(&boss, "echo").await;
    let (_, version) = draft(&boss, &task, full_fields(&ready)).await;
    let id = version["id"].as_str().unwrap();
    let path = format!("/tasks/{task}/versions/{id}");
    assert_eq!(member.get(&path).await.0, 404, "borrowers never see drafts");
    assert!(
        member.get(&format!("/tasks/{task}/versions")).await.1["items"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    boss.post(&format!("{path}/publish"), json!({})).await;

    let (_, owner) = boss.get(&path).await;
    for field in OWNER_ONLY {
        assert!(
            owner.get(field).is_some(),
            "the owner sees {field}: {owner}"
        );
    }
    assert_eq!(owner["startup_script"], "set -e\n");
    assert_eq!(owner["ordinary_env"], json!({"MODE": "fast"}));
    assert_eq!(
        owner["secret_slot_declarations"],
        json!([{"name": "API_TOKEN"}, {"name": "DB_PASSWORD"}])
    );
    assert_eq!(owner["output_policy"], Value::Null);
    assert_eq!(owner["work_command"], ". /workspace/work.sh && echo done");
    assert_eq!(owner["source_visible"], true);

    for borrowed in [
        member.get(&path).await.1,
        member.get(&format!("/tasks/{task}/versions")).await.1["items"][0].clone(),
    ] {
        for field in OWNER_ONLY {
            assert!(
                borrowed.get(field).is_none(),
                "a borrower never sees {field}: {borrowed}"
            );
        }
        assert!(
            borrowed.get("work_command").is_some(),
            "work_command is present"
        );
        assert_eq!(borrowed["work_command"], Value::Null);
        assert_eq!(borrowed["source_visible"], false);
        for shared in [
            "id",
            "task_id",
            "version_number",
            "state",
            "content_state",
            "environment_version_id",
            "environment_id",
            "environment_name",
            "input_instructions",
            "input_example",
            "input_schema",
            "timeout_seconds",
            "requires_confirmation",
            "secret_slot_names",
            "canonical_digest",
            "content_hash",
            "update_available",
        ] {
            assert_eq!(
                borrowed[shared], owner[shared],
                "{shared} is the same for both"
            );
        }
        assert_eq!(
            borrowed["secret_slot_names"],
            json!(["API_TOKEN", "DB_PASSWORD"])
        );
    }
    assert_eq!(
        member.post(&format!("{path}/archive"), json!({})).await.0,
        404
    );
}
