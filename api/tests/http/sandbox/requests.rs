//! The request each matrix row sends: the route's path filled with the world's ids
//! and a body valid enough to reach authorization (several routes parse or stage
//! their body first, so an invalid one would answer 422 to everyone and prove
//! nothing). An allowed caller may still get a business answer (409 on a consumed
//! resource, 429 on a rate limit); the matrix counts those as allowed.

use super::fixture::World;
use reqwest::Method;
use serde_json::{Value, json};

/// The body of a matrix request.
pub enum Payload {
    /// No body.
    Empty,
    /// A JSON body.
    Json(Value),
    /// Raw bytes with a content type and an optional extra header.
    Raw {
        /// `Content-Type`.
        content_type: String,
        /// The bytes.
        bytes: Vec<u8>,
        /// One more header.
        header: Option<(&'static str, &'static str)>,
    },
}

/// One request of a row.
pub struct Request {
    /// Method.
    pub method: Method,
    /// Path below the sandbox prefix.
    pub path: String,
    /// Body.
    pub body: Payload,
    /// Whether the route needs an `Idempotency-Key` (one per caller and row).
    pub keyed: bool,
}

/// A multipart body with one `file` part.
/// A multipart body whose `file` is an empty tar archive (two zero blocks).
fn bundle_file() -> Payload {
    let boundary = "matrix-boundary-7e2a";
    let mut bytes = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"b.tar\"\r\n\
         Content-Type: application/x-tar\r\n\r\n"
    )
    .into_bytes();
    bytes.extend_from_slice(&[0u8; 1024]);
    bytes.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    Payload::Raw {
        content_type: format!("multipart/form-data; boundary={boundary}"),
        bytes,
        header: None,
    }
}

fn script_file() -> Payload {
    let boundary = "matrix-boundary-5d1c";
    let bytes = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"work.sh\"\r\n\
         Content-Type: text/plain\r\n\r\necho matrix\n\r\n--{boundary}--\r\n"
    )
    .into_bytes();
    Payload::Raw {
        content_type: format!("multipart/form-data; boundary={boundary}"),
        bytes,
        header: None,
    }
}

/// The request of a row: `route` is `METHOD /path` as `/openapi.json` names it
/// below the sandbox prefix; `case` picks another resource for the same route.
pub fn request(w: &World, route: &str, case: Option<&str>) -> Request {
    let (method, template) = route.split_once(' ').expect("METHOD /path");
    let mut ids = Ids {
        environment_id: &w.env,
        env_version: &w.env_version,
        session_id: &w.upload,
        chatroom_id: &w.lab,
        task_id: &w.task,
        task_version: &w.version,
        grant_id: &w.grant,
        binding_id: &w.binding,
        run_id: &w.run,
    };
    match case {
        None => {}
        Some("curated") => ids.environment_id = &w.curated_env,
        Some("draft") => ids.task_version = &w.draft,
        Some("ops_task") => (ids.task_id, ids.binding_id) = (&w.ops_task, &w.ops_binding),
        Some("ops_room") => ids.chatroom_id = &w.ops_room,
        Some("hidden") => ids.task_id = &w.hidden_task,
        Some("quick_run") => ids.run_id = &w.quick_run,
        Some(other) => panic!("{route}: unknown case {other}"),
    }
    // Each destructive route gets a resource of its own.
    match route {
        "POST /environments/{environment_id}/archive" => ids.environment_id = &w.spare_env,
        "POST /environments/{environment_id}/versions/{version_id}/archive" => {
            ids.env_version = &w.spare_env_version
        }
        "POST /environments/{environment_id}/context-uploads/{session_id}/abort" => {
            ids.session_id = &w.open_upload
        }
        "POST /tasks/{task_id}/archive" => ids.task_id = &w.spare_task,
        "POST /tasks/{task_id}/versions/{version_id}/publish" => ids.task_version = &w.publishable,
        "POST /tasks/{task_id}/versions/{version_id}/archive" => ids.task_version = &w.archivable,
        "PATCH /tasks/{task_id}/versions/{version_id}"
        | "POST /tasks/{task_id}/versions/{version_id}/script-file" => ids.task_version = &w.draft,
        "POST /bindings/{binding_id}/revoke" if case.is_none() => ids.binding_id = &w.binding2,
        "POST /chatrooms/{chatroom_id}/granted-jobs/{task_id}/disable" => ids.task_id = &w.task2,
        _ => {}
    }
    let version = if template.starts_with("/environments") {
        ids.env_version
    } else {
        ids.task_version
    };
    let mut path = template
        .replace("{environment_id}", ids.environment_id)
        .replace("{version_id}", version)
        .replace("{session_id}", ids.session_id)
        .replace("{attempt_id}", &w.attempt)
        .replace("{task_id}", ids.task_id)
        .replace("{grant_id}", ids.grant_id)
        .replace("{binding_id}", ids.binding_id)
        .replace("{chatroom_id}", ids.chatroom_id)
        .replace("{run_id}", ids.run_id)
        .replace("{artifact_id}", &w.artifact)
        .replace("{secret_id}", &w.secret)
        .replace("{approval_id}", &w.approval);
    if route == "GET /secrets" {
        path.push_str(&format!("?consumer_scope=chatroom&consumer_id={}", w.lab));
    }
    if route.ends_with("/script-file") {
        path.push_str("?target=work");
    }
    let (body, keyed) = body(w, route, case);
    Request {
        method: method.parse().expect("method"),
        path,
        body,
        keyed,
    }
}

/// The ids a row's path is filled with.
struct Ids<'a> {
    environment_id: &'a str,
    env_version: &'a str,
    session_id: &'a str,
    chatroom_id: &'a str,
    task_id: &'a str,
    task_version: &'a str,
    grant_id: &'a str,
    binding_id: &'a str,
    run_id: &'a str,
}

/// The body of a route and whether it needs an `Idempotency-Key`.
fn body(w: &World, route: &str, case: Option<&str>) -> (Payload, bool) {
    let department = json!({"name": "matrix", "owner_scope": "department", "owner_id": w.rnd});
    let json = |value: Value| (Payload::Json(value), false);
    match route {
        "PUT /settings" => json(json!({"policy_version": 0})),
        "POST /environments" | "POST /tasks" => json(department),
        "PATCH /environments/{environment_id}" | "PATCH /tasks/{task_id}" => {
            json(json!({"name": "renamed"}))
        }
        "POST /environments/{environment_id}/context-uploads" => {
            json(json!({"declared_bytes": 10, "archive_format": "tar.gz"}))
        }
        "PUT /environments/{environment_id}/context-uploads/{session_id}" => (
            Payload::Raw {
                content_type: "application/octet-stream".into(),
                bytes: b"0123456789".to_vec(),
                header: Some(("x-sandbox-upload-capability", "not-the-capability")),
            },
            false,
        ),
        "POST /environments/{environment_id}/versions" => {
            json(json!({"source_digest": format!("sha256:{}", "1".repeat(64))}))
        }
        "POST /tasks/{task_id}/versions" => json(json!({
            "environment_version_id": w.env_version, "work_script": "true\n"})),
        "PATCH /tasks/{task_id}/versions/{version_id}" => json(json!({"timeout_seconds": 90})),
        "POST /tasks/{task_id}/versions/{version_id}/input-preview" => {
            json(json!({"input": {"n": 1}}))
        }
        "POST /tasks/{task_id}/script-uploads"
        | "POST /tasks/{task_id}/versions/{version_id}/script-file" => (script_file(), false),
        "POST /tasks/{task_id}/bundle-uploads" => (bundle_file(), false),
        "POST /tasks/{task_id}/shares" => {
            json(json!({"target_kind": "chatroom", "target_id": w.lab}))
        }
        "POST /bindings" => json(json!({
            "chatroom_id": w.lab, "task_id": w.task, "task_version_id": w.version})),
        "POST /bindings/{binding_id}/accept-version" if case == Some("ops_task") => {
            json(json!({"task_version_id": w.ops_version}))
        }
        "POST /bindings/{binding_id}/accept-version" => json(json!({"task_version_id": w.version})),
        "POST /chatrooms/{chatroom_id}/runs" => (
            Payload::Json(json!({"task_version_id": w.run_version, "input": {"n": 2}})),
            true,
        ),
        "POST /chatrooms/{chatroom_id}/runs/{run_id}/retry" => (Payload::Empty, true),
        "POST /chatrooms/{chatroom_id}/quick-run" => (
            Payload::Json(
                json!({"name": "quick", "environment_version_id": w.unbuilt_company_version,
                "startup_script": "", "work_script": "true\n", "ordinary_env": {},
                "input": {}, "timeout_seconds": 60}),
            ),
            true,
        ),
        // Secret writes reach authorization with an envelope that does not open,
        // revocations with an invalid slot name (422 after it either way).
        "POST /secrets" | "POST /secrets/rotate" => (
            Payload::Json(json!({"consumer_scope": "chatroom", "consumer_id": w.lab,
                "task_id": w.task, "slot_name": "API_TOKEN", "encrypted_value":
                {"encrypted_key": "AAAA", "iv": "AAAA", "ciphertext": "AAAA"}})),
            true,
        ),
        "POST /secrets/revoke" => (
            Payload::Json(json!({"consumer_scope": "chatroom", "consumer_id": w.lab,
                "task_id": w.task, "slot_name": "1-invalid"})),
            true,
        ),
        // A wrong digest: 409 after authorization.
        "POST /secret-approvals" | "POST /shared-task-secret-approvals" => json(json!({
            "consumer_scope": "chatroom", "consumer_id": w.lab, "task_id": w.task,
            "task_version_id": w.version, "task_version_digest": format!("sha256:{}", "0".repeat(64)),
            "slot_names": ["API_TOKEN"], "risk_accepted": true})),
        route if route.starts_with("POST ") => json(json!({})),
        _ => (Payload::Empty, false),
    }
}
