//! Draft validation: field by field and as a job contract, each refusal with its
//! code and nothing changed.

use super::{company_task, draft, draft_environment_version};
use crate::environments::{Caller, callers};
use crate::support::{TestApp, assert_code, assert_validation};
use serde_json::{Value, json};

#[tokio::test]
async fn drafts_are_validated_field_by_field_and_as_a_job_contract() {
    let app = TestApp::spawn().await;
    let (seed, boss, dm, _) = callers(&app).await;
    let env = draft_environment_version(&boss).await;
    let task = company_task(&boss, "checks").await;
    let with = |extra: Value| {
        let mut body = json!({"environment_version_id": env});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        body
    };

    let contract = draft(
        &boss,
        &task,
        with(json!({
            "input_schema": {"type": "object", "properties": {"n": {"type": "integer"}}},
            "input_example": {"n": "three"},
            "work_command": format!("{}\u{0}", "x".repeat(4096)),
        })),
    )
    .await;
    let detail = assert_code(&contract, 422, "job_contract_invalid");
    let errors = detail["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 3, "{errors:?}");
    let not_json = draft(&boss, &task, with(json!({"input_example": "{not json"}))).await;
    assert_code(&not_json, 422, "job_contract_invalid");
    for schema in [
        json!("[1, 2]"),
        json!({"$schema": "http://json-schema.org/draft-07/schema#"}),
        json!({"type": "no-such-type"}),
        json!({"$ref": "https://example.com/remote.json"}),
        json!("{\"a\": \"\\u0000\"}"),
    ] {
        let got = draft(&boss, &task, with(json!({"input_schema": schema}))).await;
        assert_code(&got, 422, "job_contract_invalid");
    }
    let many = draft(&boss, &task, with(json!({
        "input_schema": {"type": "object", "properties": (0..30).map(|i| (format!("p{i}"), json!({"type": "integer"}))).collect::<serde_json::Map<_, _>>()},
        "input_example": (0..30).map(|i| (format!("p{i}"), json!("x"))).collect::<serde_json::Map<_, _>>(),
    })))
    .await;
    assert_eq!(
        assert_code(&many, 422, "job_contract_invalid")["errors"]
            .as_array()
            .unwrap()
            .len(),
        20
    );

    let (status, text_schema) = draft(
        &boss,
        &task,
        with(json!({"input_schema": "{\"type\": \"object\"}"})),
    )
    .await;
    assert_eq!(status, 200, "{text_schema}");
    assert_eq!(text_schema["input_schema"], json!({"type": "object"}));

    for (extra, field) in [
        (json!({"timeout_seconds": 0}), "timeout_seconds"),
        (json!({"timeout_seconds": 604_681}), "timeout_seconds"),
        (
            json!({"secret_slot_declarations": ["PATH"]}),
            "secret_slot_declarations",
        ),
        (
            json!({"secret_slot_declarations": [{"name": "SERVICE_OUTPUT_FILE"}]}),
            "secret_slot_declarations",
        ),
        (
            json!({"secret_slot_declarations": ["9lives"]}),
            "secret_slot_declarations",
        ),
        (
            json!({"ordinary_env": {"SERVICE_INPUTS_FILE": "/tmp/x"}}),
            "ordinary_env",
        ),
        (
            json!({"ordinary_env": {"BIG": "x".repeat(65 * 1024)}}),
            "ordinary_env",
        ),
        (
            json!({"input_instructions": "x".repeat(65 * 1024)}),
            "input_instructions",
        ),
        (
            json!({"work_script": "x".repeat((1 << 20) + 1)}),
            "work_script",
        ),
    ] {
        assert_validation(
            &draft(&boss, &task, with(extra)).await,
            "value_error",
            &["body", field],
        );
    }
    let big = "x".repeat(1 << 20);
    let (status, two_big) = draft(
        &boss,
        &task,
        with(json!({"startup_script": big, "work_script": big})),
    )
    .await;
    assert_eq!(status, 200, "two scripts of 1 MiB fit one request");
    assert_eq!(two_big["work_script"].as_str().unwrap().len(), 1 << 20);
    let huge = draft(
        &boss,
        &task,
        with(json!({"input_instructions": "x".repeat(4 << 20)})),
    )
    .await;
    assert_code(&huge, 413, "request_too_large");
    let many_names: serde_json::Map<String, Value> =
        (0..101).map(|i| (format!("V{i}"), json!("1"))).collect();
    assert_validation(
        &draft(&boss, &task, with(json!({"ordinary_env": many_names}))).await,
        "value_error",
        &["body", "ordinary_env"],
    );
    assert_validation(
        &draft(&boss, &task, json!({"work_script": "x"})).await,
        "missing",
        &["body", "environment_version_id"],
    );
    let unknown = draft(&boss, &task, with(json!({"script": "x"}))).await;
    assert_eq!(unknown.0, 422, "{}", unknown.1);

    assert_code(
        &draft(
            &boss,
            &task,
            with(json!({"output_policy": {"kind": "email"}})),
        )
        .await,
        422,
        "output_policy_invalid",
    );
    assert_code(
        &draft(&boss, &task, with(json!({"output_policy": {"kind": "custom_table_writeback", "table_id": uuid::Uuid::new_v4(), "allowed_ops": "create"}}))).await,
        422,
        "output_policy_table_not_found",
    );
    assert_code(
        &draft(&boss, &task, with(json!({"output_policy": {"kind": "custom_table_command", "command_id": uuid::Uuid::new_v4(), "chatroom_id": seed.room("acme", "lab"), "input_schema": {}}}))).await,
        422,
        "output_policy_command_not_found",
    );

    // Pins: another company's version, or a department environment from another department.
    let globex = Caller {
        app: &app,
        token: seed.token("globex", "ceo"),
    };
    let foreign = draft_environment_version(&globex).await;
    assert_validation(
        &draft(&boss, &task, json!({"environment_version_id": foreign})).await,
        "value_error",
        &["body", "environment_version_id"],
    );
    let ops = seed.department("acme", "ops").to_string();
    let rnd = seed.department("acme", "rnd").to_string();
    let (_, ops_env) = boss
        .post(
            "/environments",
            json!({"name": "ops env", "owner_scope": "department", "owner_id": ops}),
        )
        .await;
    let ops_version = boss
        .version(
            ops_env["id"].as_str().unwrap(),
            crate::environments::busybox_context("", &[]),
        )
        .await;
    let (_, rnd_task) = dm
        .post(
            "/tasks",
            json!({"name": "rnd", "owner_scope": "department", "owner_id": rnd}),
        )
        .await;
    let rnd_task = rnd_task["id"].as_str().unwrap();
    assert_validation(
        &draft(
            &dm,
            rnd_task,
            json!({"environment_version_id": ops_version}),
        )
        .await,
        "value_error",
        &["body", "environment_version_id"],
    );
    assert_eq!(
        draft(&boss, &task, json!({"environment_version_id": ops_version}))
            .await
            .0,
        200,
        "company tasks may pin department environments"
    );
    assert_eq!(
        draft(&dm, rnd_task, json!({"environment_version_id": env}))
            .await
            .0,
        200,
        "company environments are pinnable by all"
    );
    assert_eq!(
        draft(&dm, &task, json!({"environment_version_id": env}))
            .await
            .0,
        404,
        "dm does not own the company task"
    );
}
