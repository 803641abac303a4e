//! The resources the matrix calls its routes on, built through the API.
//!
//! Everything is owned by department `rnd` (so its manager is the owner a cell
//! tests), except what a rule needs elsewhere: Quick Run only takes company-owned or
//! curated environment versions, and one task belongs to `ops` so that its manager
//! is a task owner who does not manage the room. Destructive routes get resources of
//! their own (a spare environment, version, task, drafts, a second grant and
//! binding), so the order of rows never matters for authorization. Two real builds
//! (in parallel) and two real runs are all the execution the matrix needs.

use super::world::matrix_directory;
use crate::environments::{Caller, SANDBOX, busybox_context};
use crate::runs::{finished, post_keyed};
use crate::support::{As, Seed, TestApp, json};
use domain::environments::archive::ArchiveFormat;
use reqwest::Method;
use serde_json::{Value, json};

/// A `source_digest` for versions that never need bytes.
const DIGEST: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000000";

/// What a run of the matrix leaves behind: an output, a log and one artifact.
const WORK: &str = "echo report > \"$SERVICE_ARTIFACTS_DIR/report.txt\"\n\
                    printf '{\"ok\":true}' > \"$SERVICE_OUTPUT_FILE\"\n";

/// Ids of the matrix world (strings, as paths and bodies take them).
#[derive(Debug, Default)]
pub struct World {
    /// Department `rnd` (owns the resources) and `ops`.
    pub rnd: String,
    /// Department `ops`.
    pub ops: String,
    /// Room `lab` (department `rnd`).
    pub lab: String,
    /// Room `ops-room` (department `ops`).
    pub ops_room: String,
    /// An `rnd` environment with a ready version, its completed build attempt and
    /// the completed upload the version came from.
    pub env: String,
    /// The ready version of [`World::env`].
    pub env_version: String,
    /// Its build attempt.
    pub attempt: String,
    /// The completed upload session of [`World::env`].
    pub upload: String,
    /// An open upload session of [`World::env`] (abort consumes it).
    pub open_upload: String,
    /// A draft version of [`World::env`] (archive consumes it).
    pub spare_env_version: String,
    /// An `rnd` environment archive consumes.
    pub spare_env: String,
    /// A curated environment (every company reads it).
    pub curated_env: String,
    /// A ready company-owned version (Quick Run and the `ops` task pin it).
    pub company_version: String,
    /// A company-owned version that is not built (Quick Run stops at 409).
    pub unbuilt_company_version: String,
    /// An `rnd` task: published version, drafts, grants and a binding in `lab`.
    pub task: String,
    /// Its published version.
    pub version: String,
    /// A draft edits go to.
    pub draft: String,
    /// A draft publish consumes.
    pub publishable: String,
    /// A draft archive consumes.
    pub archivable: String,
    /// A grant of [`World::task`] to department `ops` (revoke consumes it).
    pub grant: String,
    /// The binding of [`World::task`] in `lab`.
    pub binding: String,
    /// A second `rnd` task enabled in `lab` (disable and revoke consume it).
    pub task2: String,
    /// The binding of [`World::task2`] in `lab`.
    pub binding2: String,
    /// An `rnd` task archive consumes.
    pub spare_task: String,
    /// A task department `ops` owns.
    pub ops_task: String,
    /// Its published version.
    pub ops_version: String,
    /// The binding in `lab` of that task.
    pub ops_binding: String,
    /// A completed run in `lab`, submitted with the sandbox key; its version is
    /// archived since, so retry and submit stop at 409 instead of queueing runs.
    pub run: String,
    /// The archived version of [`World::run`].
    pub run_version: String,
    /// The run's artifact.
    pub artifact: String,
    /// A Quick Run in `lab` (the room manager's), its version archived since.
    pub quick_run: String,
    /// The hidden task of that Quick Run.
    pub hidden_task: String,
    /// A secret binding of [`World::task`]'s slot `API_TOKEN` for room `lab`.
    pub secret: String,
    /// An approval of [`World::version`] by room `lab` (revoke consumes it).
    pub approval: String,
}

/// Sends a request with an API key.
async fn keyed(app: &TestApp, key: &str, path: &str, idempotency: &str, body: Value) -> Value {
    let response = app
        .request(Method::POST, &format!("{SANDBOX}{path}"))
        .api_key(key)
        .header("idempotency-key", idempotency)
        .json(&body)
        .send()
        .await
        .unwrap();
    let (status, body) = json(response).await;
    assert_eq!(status, 200, "{path}: {body}");
    body
}

/// POSTs and asserts a 200; returns the answer's string field `key`.
async fn created(caller: &Caller<'_>, path: &str, body: Value, key: &str) -> String {
    let (status, answer) = caller.post(path, body).await;
    assert_eq!(status, 200, "{path}: {answer}");
    answer[key]
        .as_str()
        .unwrap_or_else(|| panic!("{path}: no {key} in {answer}"))
        .to_string()
}

/// A department task with one published version on `env_version`; returns
/// (task, version).
async fn published(
    boss: &Caller<'_>,
    department: &str,
    env_version: &str,
    work: &str,
) -> (String, String) {
    let task = created(
        boss,
        "/tasks",
        json!({"name": "matrix task", "owner_scope": "department", "owner_id": department}),
        "id",
    )
    .await;
    let fields =
        json!({"environment_version_id": env_version, "work_script": work, "timeout_seconds": 60});
    let version = created(boss, &format!("/tasks/{task}/versions"), fields, "id").await;
    let path = format!("/tasks/{task}/versions/{version}/publish");
    created(boss, &path, json!({}), "id").await;
    (task, version)
}

/// Shares a task with a target; returns the grant.
async fn share(boss: &Caller<'_>, task: &str, kind: &str, target: &str) -> String {
    let body = json!({"target_kind": kind, "target_id": target});
    created(boss, &format!("/tasks/{task}/shares"), body, "id").await
}

/// Enables a task in a room at a version; returns the binding.
async fn bind(manager: &Caller<'_>, room: &str, task: &str, version: &str) -> String {
    let body = json!({"chatroom_id": room, "task_id": task, "task_version_id": version});
    created(manager, "/bindings", body, "id").await
}

/// A draft of `task` on `env_version`.
async fn draft(boss: &Caller<'_>, task: &str, env_version: &str) -> String {
    let fields = json!({"environment_version_id": env_version, "work_script": "true\n"});
    created(boss, &format!("/tasks/{task}/versions"), fields, "id").await
}

/// Polls a build attempt to `completed`.
async fn built(boss: &Caller<'_>, env: &str, version: &str, attempt: &str) {
    let done = boss.finished(env, version, attempt).await;
    assert_eq!(done["terminal_class"], "completed", "{done}");
}

impl World {
    /// A secret of room `lab` for [`World::task`] and an approval of its version.
    async fn secrets(&mut self, app: &TestApp, boss: &Caller<'_>) {
        let pem = crate::secrets::public_key(app).await;
        let sealed = crate::secrets::rust_seal(&pem, b"matrix-secret");
        let body =
            crate::secrets::write_body("chatroom", &self.lab, &self.task, "API_TOKEN", sealed);
        let (status, written) = post_keyed(boss, "/secrets", "setup", Some(body)).await;
        assert_eq!(status, 200, "{written}");
        self.secret = written["secret_binding"]["id"]
            .as_str()
            .unwrap()
            .to_string();
        let (_, version) = boss
            .get(&format!("/tasks/{}/versions/{}", self.task, self.version))
            .await;
        let body = json!({"consumer_scope": "chatroom", "consumer_id": self.lab,
            "task_id": self.task, "task_version_id": self.version,
            "task_version_digest": version["canonical_digest"], "slot_names": ["API_TOKEN"],
            "risk_accepted": true});
        self.approval = created(boss, "/secret-approvals", body, "id").await;
    }

    /// Applies the matrix directory and builds every resource.
    pub async fn build(app: &TestApp) -> (Seed, World) {
        let seed = Seed(app.apply(matrix_directory()).await);
        let boss = Caller {
            app,
            token: seed.token("acme", "boss"),
        };
        let mut w = World {
            rnd: seed.department("acme", "rnd").to_string(),
            ops: seed.department("acme", "ops").to_string(),
            lab: seed.room("acme", "lab").to_string(),
            ops_room: seed.room("acme", "ops-room").to_string(),
            ..World::default()
        };
        w.environments(&boss).await;
        w.tasks(&boss, &seed).await;
        w.runs(app, &boss, &seed).await;
        w.secrets(app, &boss).await;
        // Its build is queued, not awaited: reading it needs no image.
        let published = api::admin::curated::publish(
            &app.state,
            "operator",
            "curated",
            "",
            ArchiveFormat::TarGz,
            busybox_context("", &[]),
        )
        .await
        .unwrap();
        w.curated_env = published.environment_id.to_string();
        (seed, w)
    }

    /// Environments: the `rnd` one and a company one, built in parallel.
    async fn environments(&mut self, boss: &Caller<'_>) {
        let department =
            json!({"name": "rnd env", "owner_scope": "department", "owner_id": self.rnd});
        self.env = created(boss, "/environments", department.clone(), "id").await;
        self.spare_env = created(boss, "/environments", department, "id").await;
        let (status, completed) = boss.upload(&self.env, busybox_context("", &[])).await;
        assert_eq!(status, 200, "{completed}");
        self.upload = completed["session_id"].as_str().unwrap().to_string();
        let versions = format!("/environments/{}/versions", self.env);
        let from_upload = json!({"owned_object_id": completed["owned_object_id"]});
        self.env_version = created(boss, &versions, from_upload, "id").await;
        self.spare_env_version =
            created(boss, &versions, json!({"source_digest": DIGEST}), "id").await;
        let init = json!({"declared_bytes": 10, "archive_format": "tar.gz"});
        let uploads = format!("/environments/{}/context-uploads", self.env);
        self.open_upload = created(boss, &uploads, init, "id").await;

        let company_env = boss.environment("company env").await;
        let company_version = boss.version(&company_env, busybox_context("", &[])).await;
        let versions = format!("/environments/{company_env}/versions");
        self.unbuilt_company_version =
            created(boss, &versions, json!({"source_digest": DIGEST}), "id").await;

        self.attempt = boss.build(&self.env, &self.env_version).await["id"]
            .as_str()
            .unwrap()
            .to_string();
        let company_attempt = boss.build(&company_env, &company_version).await;
        built(boss, &self.env, &self.env_version, &self.attempt).await;
        let company_attempt = company_attempt["id"].as_str().unwrap();
        built(boss, &company_env, &company_version, company_attempt).await;
        self.company_version = company_version;
    }

    /// Tasks, drafts, grants and bindings.
    async fn tasks(&mut self, boss: &Caller<'_>, seed: &Seed) {
        let (task, version) = published(boss, &self.rnd, &self.env_version, "true\n").await;
        self.draft = draft(boss, &task, &self.env_version).await;
        self.publishable = draft(boss, &task, &self.env_version).await;
        self.archivable = draft(boss, &task, &self.env_version).await;
        share(boss, &task, "chatroom", &self.lab).await;
        self.grant = share(boss, &task, "department", &self.ops).await;
        let dm = Caller {
            app: boss.app,
            token: seed.token("acme", "dm"),
        };
        self.binding = bind(&dm, &self.lab, &task, &version).await;
        (self.task, self.version) = (task, version);

        let (task2, version2) = published(boss, &self.rnd, &self.env_version, "true\n").await;
        share(boss, &task2, "chatroom", &self.lab).await;
        self.binding2 = bind(&dm, &self.lab, &task2, &version2).await;
        self.task2 = task2;
        self.spare_task = published(boss, &self.rnd, &self.env_version, "true\n")
            .await
            .0;

        // A department's environment is pinnable only by that department's tasks.
        let company_version = &self.company_version;
        let (ops_task, ops_version) = published(boss, &self.ops, company_version, "true\n").await;
        share(boss, &ops_task, "chatroom", &self.lab).await;
        self.ops_binding = bind(&dm, &self.lab, &ops_task, &ops_version).await;
        self.ops_task = ops_task;
        self.ops_version = ops_version;
    }

    /// A completed run (sandbox key) with its links minted, and a Quick Run (room
    /// manager); then their versions are archived.
    async fn runs(&mut self, app: &TestApp, boss: &Caller<'_>, seed: &Seed) {
        let (run_task, run_version) = published(boss, &self.rnd, &self.env_version, WORK).await;
        share(boss, &run_task, "chatroom", &self.lab).await;
        let lab = self.lab.clone();
        let submit = json!({"task_version_id": run_version, "input": {"n": 1}});
        let key = seed.key("acme", "bot");
        let run = keyed(
            app,
            &key,
            &format!("/chatrooms/{lab}/runs"),
            "setup",
            submit,
        )
        .await;
        self.run = run["id"].as_str().unwrap().to_string();
        let rm = Caller {
            app,
            token: seed.token("acme", "rm"),
        };
        let quick = json!({"name": "quick", "environment_version_id": self.company_version,
            "startup_script": "", "work_script": "true\n", "ordinary_env": {},
            "input": {}, "timeout_seconds": 60});
        let path = format!("/chatrooms/{lab}/quick-run");
        let (status, quick) = post_keyed(&rm, &path, "setup", Some(quick)).await;
        assert_eq!(status, 200, "{quick}");
        self.quick_run = quick["run"]["id"].as_str().unwrap().to_string();
        self.hidden_task = quick["task_id"].as_str().unwrap().to_string();

        let done = finished(boss, &lab, &self.run).await;
        assert_eq!(done["status"], "completed", "{done}");
        let done = finished(boss, &lab, &self.quick_run).await;
        assert_eq!(done["status"], "completed", "{done}");
        let run_path = format!("/chatrooms/{lab}/runs/{}", self.run);
        let (_, artifacts) = boss.get(&format!("{run_path}/artifacts")).await;
        self.artifact = artifacts["items"][0]["id"].as_str().unwrap().to_string();
        // Revoking answers 404 until a link was minted once.
        let artifact_link = format!("{run_path}/artifacts/{}/public-link", self.artifact);
        for link in [
            format!("{run_path}/log/public-link"),
            format!("{run_path}/output/public-link"),
            artifact_link,
        ] {
            created(boss, &link, json!({}), "token").await;
        }
        for (task, version) in [
            (run_task.as_str(), run_version.as_str()),
            (
                quick["task_id"].as_str().unwrap(),
                quick["task_version_id"].as_str().unwrap(),
            ),
        ] {
            let path = format!("/tasks/{task}/versions/{version}/archive");
            created(boss, &path, json!({}), "id").await;
        }
        self.run_version = run_version;
    }
}
