//! The Kubernetes executor end to end (issue 28), against a simulated cluster
//! (`kubelet.rs`: an API server and a kubelet that runs each Job's pod from its own
//! spec), a registry (`registry.rs`) and a real S3-compatible server (moto): a
//! `sandbox-api serve` process with `SANDBOX_EXECUTOR=kubernetes` builds an
//! environment and pushes it to the registry, runs a task as a Job whose pod moves
//! its workspace and results through signed URLs, records a failing run's exit code,
//! and, killed while a run's Job is still working, re-attaches to it after its
//! restart (`RunReattached`) and records its end.

mod kubelet;
#[path = "../s3/moto.rs"]
mod moto;
#[path = "../process/mod.rs"]
mod process;
mod registry;
#[path = "../crash_loop/setup.rs"]
mod setup;

use api::runtime::buildah::StorageDriver;
use kubelet::{Simulated, Storage};
use moto::Moto;
use nix::sys::signal::Signal;
use object_store::ObjectStore;
use process::{Server, data_dir, serve, signal};
use projections::testing::TestDatabase;
use registry::Registry;
use reqwest::Method;
use serde_json::{Value, json};
use setup::{busybox_context, call, directory, prepare};
use std::path::Path;
use std::time::{Duration, Instant};

const SECRET: &str = "kube-cluster-secret-kube-cluster-secret!";
const SANDBOX: &str = "/private/module/sandbox";
const TABLES: &str = "/private/module/custom_tables/company";
const BUCKET: &str = "sandbox-objects";

const WORK: &str = r#"
echo "hello from the pod"
cat "$SERVICE_INPUTS_FILE"; echo
printf 'the output' > "$SERVICE_OUTPUT_FILE"
mkdir -p "$SERVICE_ARTIFACTS_DIR/sub"
echo report > "$SERVICE_ARTIFACTS_DIR/sub/report.txt"
ln -s /etc/passwd "$SERVICE_ARTIFACTS_DIR/leak"
if grep -q hold "$SERVICE_INPUTS_FILE"; then sleep 12; fi
if grep -q fail "$SERVICE_INPUTS_FILE"; then exit 3; fi
"#;

/// Everything the server process is started with.
struct World {
    env: Vec<(String, String)>,
    data: tempfile::TempDir,
}

impl World {
    async fn serve(&self) -> Server {
        let env: Vec<(&str, &str)> = self
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        serve(self.data.path(), &env).await
    }
}

async fn submit(
    base: &str,
    token: &str,
    room: &str,
    version: &str,
    input: Value,
    key: &str,
) -> String {
    let client = reqwest::Client::new();
    let path = format!("{SANDBOX}/chatrooms/{room}/runs");
    let body = json!({"task_version_id": version, "input": input});
    let (status, run) = call(
        &client,
        base,
        token,
        Method::POST,
        &path,
        Some(body),
        Some(key),
    )
    .await
    .unwrap();
    assert_eq!(status, 200, "{run}");
    run["id"].as_str().unwrap().to_string()
}

async fn detail(base: &str, token: &str, room: &str, run: &str) -> Option<Value> {
    let client = reqwest::Client::new();
    let path = format!("{SANDBOX}/chatrooms/{room}/runs/{run}");
    let (status, body) = call(&client, base, token, Method::GET, &path, None, None).await?;
    (status == 200).then_some(body)
}

/// Polls the run until `done` holds of its detail.
async fn until(
    base: &str,
    token: &str,
    room: &str,
    run: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        if let Some(detail) = detail(base, token, room, run).await
            && done(&detail)
        {
            return detail;
        }
        assert!(Instant::now() < deadline, "run {run} did not get there");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

fn ended(detail: &Value) -> bool {
    !detail["terminal_at"].is_null()
}

async fn public_text(base: &str, token: &str, path: &str) -> String {
    let client = reqwest::Client::new();
    let (status, link) = call(
        &client,
        base,
        token,
        Method::POST,
        path,
        Some(json!({})),
        None,
    )
    .await
    .unwrap();
    assert_eq!(status, 200, "{link}");
    let fetched = client
        .get(link["url"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    fetched.text().await.unwrap()
}

/// The run's recorded error code and exit code.
async fn ending(pool: &sqlx::PgPool, run: &str) -> (Option<String>, Option<i32>) {
    sqlx::query_as("SELECT error_code, exit_code FROM runs WHERE id = $1::uuid")
        .bind(run)
        .fetch_one(pool)
        .await
        .unwrap()
}

fn write(path: &Path, text: &str) -> String {
    std::fs::write(path, text).unwrap();
    path.display().to_string()
}

#[tokio::test]
async fn runs_execute_as_jobs_and_survive_their_worker() {
    let moto = Moto::start(BUCKET).await;
    let registry = Registry::start().await;
    let db = TestDatabase::fresh().await;
    let (token, room) = directory(&db.pool).await;
    let data = data_dir();
    let storage = Storage {
        root: data.path().join("buildah/root"),
        runroot: data.path().join("buildah/run"),
        driver: StorageDriver::of(&data.path().join("buildah")),
    };
    let cluster = Simulated::start(storage).await;
    let config = tempfile::tempdir().unwrap();
    let kubeconfig = config.path().join("kubeconfig");
    cluster.kubeconfig(&kubeconfig);
    let registries = format!(
        "[[registry]]\nlocation = \"{}\"\ninsecure = true\n",
        registry.host
    );
    let mut env: Vec<(String, String)> =
        moto.env().into_iter().map(|(k, v)| (k.into(), v)).collect();
    env.extend(
        [
            ("DATABASE_URL", db.url.clone()),
            ("SANDBOX_JWT_SECRET", SECRET.into()),
            ("SANDBOX_OBJECT_STORE", format!("s3://{BUCKET}/cluster")),
            ("SANDBOX_EXECUTOR", "kubernetes".into()),
            ("SANDBOX_REGISTRY", format!("{}/sandbox", registry.host)),
            ("SANDBOX_KUBE_OBJECT_STORE_CIDRS", "127.0.0.1/32".into()),
            ("KUBECONFIG", kubeconfig.display().to_string()),
            (
                "CONTAINERS_REGISTRIES_CONF",
                write(&config.path().join("registries.conf"), &registries),
            ),
        ]
        .map(|(k, v)| (k.to_string(), v)),
    );
    let world = World { env, data };
    let mut server = world.serve().await;
    let base = server.base.clone();

    // The build is pushed to the registry; runs name the pushed image.
    let (version, _, _) = prepare(&base, &token, busybox_context(&[]), WORK).await;
    let pushed = registry.manifests();
    assert!(
        pushed.iter().any(|m| m.starts_with("sandbox/sandbox-env/")),
        "{pushed:?}"
    );

    let first = submit(&base, &token, &room, &version, json!({"n": 1}), "first").await;
    let done = until(&base, &token, &room, &first, ended).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(ending(&db.pool, &first).await, (None, Some(0)));
    let runs = format!("{SANDBOX}/chatrooms/{room}/runs/{first}");
    let log = public_text(&base, &token, &format!("{runs}/log/public-link")).await;
    assert!(
        log.contains("hello from the pod") && log.contains(r#"{"n":1}"#),
        "{log}"
    );
    let output = public_text(&base, &token, &format!("{runs}/output/public-link")).await;
    assert_eq!(output, "the output");
    let client = reqwest::Client::new();
    let (_, artifacts) = call(
        &client,
        &base,
        &token,
        Method::GET,
        &format!("{runs}/artifacts"),
        None,
        None,
    )
    .await
    .unwrap();
    let items = artifacts["items"].as_array().unwrap();
    let paths: Vec<&str> = items
        .iter()
        .map(|a| a["relative_path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        ["sub/report.txt"],
        "the link is not collected: {artifacts}"
    );
    let artifact = items[0]["id"].as_str().unwrap();
    let report = public_text(
        &base,
        &token,
        &format!("{runs}/artifacts/{artifact}/public-link"),
    )
    .await;
    assert_eq!(report, "report\n");

    let failing = submit(
        &base,
        &token,
        &room,
        &version,
        json!({"fail": true}),
        "failing",
    )
    .await;
    let done = until(&base, &token, &room, &failing, ended).await;
    assert_eq!(done["status"], "customer_failed", "{done}");
    let exit = ending(&db.pool, &failing).await;
    assert_eq!(exit, (Some("exit_nonzero".into()), Some(3)));

    // Killed while the Job works: the next start re-attaches once the old worker's
    // heartbeat is stale.
    let held = submit(
        &base,
        &token,
        &room,
        &version,
        json!({"hold": true}),
        "held",
    )
    .await;
    until(&base, &token, &room, &held, |d| d["status"] == "running").await;
    signal(&mut server, Signal::SIGKILL).await;
    server = world.serve().await;
    let done = until(&server.base, &token, &room, &held, ended).await;
    assert_eq!(done["status"], "completed", "{done}");
    let reattached: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM events WHERE aggregate_id = $1 AND event_type = 'RunReattached'",
    )
    .bind(&held)
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!(reattached, 1);

    let (policies, deleted, left) = cluster.seen();
    assert!(!policies.is_empty());
    assert_eq!(
        policies[0]["spec"]["egress"][0]["to"][0]["ipBlock"]["cidr"],
        "127.0.0.1/32"
    );
    assert_eq!(
        deleted.len(),
        3,
        "every Job is removed after its run: {deleted:?}"
    );
    assert!(left.is_empty());
    let requests = moto.requests();
    let uploads = requests
        .iter()
        .filter(|r| {
            r.starts_with("PUT ") && r.contains("results.tar") && r.contains("X-Amz-Signature")
        })
        .count();
    assert_eq!(
        uploads, 3,
        "each pod put its results through its signed URL"
    );
    let prefix = object_store::path::Path::from("cluster");
    let transfers: Vec<String> =
        futures::TryStreamExt::try_collect::<Vec<_>>(moto.client(BUCKET).list(Some(&prefix)))
            .await
            .unwrap()
            .into_iter()
            .map(|o| o.location.to_string())
            .filter(|key| key.contains("/transfer/"))
            .collect();
    assert!(
        transfers.is_empty(),
        "transfer objects are removed: {transfers:?}"
    );
    assert!(signal(&mut server, Signal::SIGTERM).await.success());
}
