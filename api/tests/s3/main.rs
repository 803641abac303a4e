//! Objects in S3 (issue 28): a `sandbox-api serve` process with
//! `SANDBOX_OBJECT_STORE=s3://bucket/prefix` against a real S3-compatible server
//! (moto) uploads a build context larger than one multipart part, builds from it,
//! runs a task that leaves two artifacts and serves the second through a public
//! link, a byte range of the run's bundle read from the bucket. Nothing lands in
//! the data directory's local store. The short-lived URLs the Kubernetes executor
//! hands its pods are signed against the same server.

mod moto;
#[path = "../process/mod.rs"]
mod process;
#[path = "../crash_loop/setup.rs"]
mod setup;

use futures::TryStreamExt;
use moto::Moto;
use nix::sys::signal::Signal;
use object_store::path::Path as StorePath;
use object_store::{ObjectMeta, ObjectStore};
use process::{data_dir, serve, signal};
use projections::testing::TestDatabase;
use reqwest::Method;
use serde_json::{Value, json};
use setup::{busybox_context, call, directory, prepare};
use std::time::{Duration, Instant};

const SECRET: &str = "s3-objects-secret-s3-objects-secret!!";
const SANDBOX: &str = "/private/module/sandbox";
const TABLES: &str = "/private/module/custom_tables/company";
const BUCKET: &str = "sandbox-objects";
const PREFIX: &str = "deployment-a";

/// Leaves `a.bin` (70,000 bytes) and `b.txt` in the artifacts directory: `b.txt`
/// starts 70,000 bytes into the bundle.
const WORK: &str = r#"
head -c 70000 /dev/zero | tr '\0' 'a' > "$SERVICE_ARTIFACTS_DIR/a.bin"
printf 'the second artifact\n' > "$SERVICE_ARTIFACTS_DIR/b.txt"
"#;

/// 12 MiB that gzip cannot shrink: the context spans three 5 MiB parts.
fn ballast() -> Vec<u8> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    (0..12 << 20)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

async fn get(base: &str, token: &str, path: &str) -> Value {
    let client = reqwest::Client::new();
    let (status, body) = call(&client, base, token, Method::GET, path, None, None)
        .await
        .expect("the server answers");
    assert_eq!(status, 200, "{path}: {body}");
    body
}

/// Every object the service stored under the prefix.
async fn stored(moto: &Moto) -> Vec<ObjectMeta> {
    let prefix = StorePath::from(PREFIX);
    moto.client(BUCKET)
        .list(Some(&prefix))
        .try_collect()
        .await
        .unwrap()
}

#[tokio::test]
async fn objects_live_in_an_s3_bucket() {
    let moto = Moto::start(BUCKET).await;
    let db = TestDatabase::fresh().await;
    let (token, room) = directory(&db.pool).await;
    let data = data_dir();
    let location = format!("s3://{BUCKET}/{PREFIX}");
    let aws = moto.env();
    let mut env: Vec<(&str, &str)> = aws.iter().map(|(k, v)| (*k, v.as_str())).collect();
    env.extend([
        ("DATABASE_URL", db.url.as_str()),
        ("SANDBOX_OBJECT_STORE", location.as_str()),
        ("SANDBOX_JWT_SECRET", SECRET),
    ]);
    let mut server = serve(data.path(), &env).await;
    let base = server.base.clone();

    let context = busybox_context(&ballast());
    assert!(context.len() > 10 << 20);
    let (version, _, _) = prepare(&base, &token, context.clone(), WORK).await;
    // The upload went up in parts (S3's multipart API), then was copied to its key.
    let requests = moto.requests();
    let started = requests
        .iter()
        .filter(|r| r.starts_with("POST ") && r.contains("?uploads"))
        .count();
    let parts = requests
        .iter()
        .filter(|r| r.starts_with("PUT ") && r.contains("partNumber="))
        .count();
    assert!(
        started >= 1 && parts >= 3,
        "multipart uploads: {requests:#?}"
    );
    let kept = stored(&moto).await;
    assert!(
        kept.iter().any(|o| o.size == context.len() as u64),
        "the build context is in the bucket"
    );

    let client = reqwest::Client::new();
    let submitted = call(
        &client,
        &base,
        &token,
        Method::POST,
        &format!("{SANDBOX}/chatrooms/{room}/runs"),
        Some(json!({"task_version_id": version, "input": {}})),
        Some("s3-run"),
    )
    .await
    .unwrap();
    assert_eq!(submitted.0, 200, "{}", submitted.1);
    let run = submitted.1["id"].as_str().unwrap().to_string();
    let deadline = Instant::now() + Duration::from_secs(180);
    let detail = loop {
        let detail = get(
            &base,
            &token,
            &format!("{SANDBOX}/chatrooms/{room}/runs/{run}"),
        )
        .await;
        if !detail["terminal_at"].is_null() {
            break detail;
        }
        assert!(Instant::now() < deadline, "the run did not end: {detail}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    assert_eq!(detail["status"], "completed", "{detail}");

    let artifacts = get(
        &base,
        &token,
        &format!("{SANDBOX}/chatrooms/{room}/runs/{run}/artifacts"),
    )
    .await;
    let second = artifacts["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["relative_path"] == "b.txt")
        .unwrap_or_else(|| panic!("b.txt in {artifacts}"));
    let artifact = second["id"].as_str().unwrap();
    let (status, link) = call(
        &client,
        &base,
        &token,
        Method::POST,
        &format!("{SANDBOX}/chatrooms/{room}/runs/{run}/artifacts/{artifact}/public-link"),
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
    assert_eq!(fetched.status(), 200);
    assert_eq!(
        fetched.text().await.unwrap(),
        "the second artifact\n",
        "the link serves its byte range of the bundle"
    );

    let keys = stored_keys(&moto).await;
    assert!(
        keys.iter().all(|k| k.starts_with(&format!("{PREFIX}/"))),
        "{keys:?}"
    );
    assert!(keys.len() >= 4, "context, log, output and bundle: {keys:?}");
    let local = data.path().join("objects");
    assert!(
        !local.exists() || std::fs::read_dir(&local).unwrap().next().is_none(),
        "nothing in the local store"
    );
    assert!(signal(&mut server, Signal::SIGTERM).await.success());
}

#[tokio::test]
async fn signed_urls_move_bytes_without_credentials() {
    let moto = Moto::start(BUCKET).await;
    let scratch = tempfile::tempdir().unwrap();
    let objects = api::objects::Objects::s3(moto.client(BUCKET), PREFIX, scratch.path()).unwrap();
    let ttl = Duration::from_secs(300);
    let key = "runs/c/r/transfer/results.tar";
    let put = objects.signed_url(Method::PUT, key, ttl).await.unwrap();
    let client = reqwest::Client::new();
    let stored = client.put(&put).body("the results").send().await.unwrap();
    assert!(stored.status().is_success(), "{}", stored.status());
    let in_bucket = stored_keys(&moto).await;
    assert_eq!(in_bucket, [format!("{PREFIX}/{key}")], "under the prefix");
    let get = objects.signed_url(Method::GET, key, ttl).await.unwrap();
    assert!(
        get.contains("X-Amz-Signature=") && get.contains("X-Amz-Expires=300"),
        "{get}"
    );
    let fetched = client.get(&get).send().await.unwrap();
    assert_eq!(fetched.text().await.unwrap(), "the results");
    assert_eq!(
        objects.get_bytes(key).await.unwrap(),
        "the results".as_bytes()
    );
    let local =
        api::objects::Objects::open(None, &scratch.path().join("objects"), scratch.path()).unwrap();
    assert!(
        local.signed_url(Method::GET, key, ttl).await.is_err(),
        "a local store signs nothing"
    );
}

async fn stored_keys(moto: &Moto) -> Vec<String> {
    stored(moto)
        .await
        .iter()
        .map(|o| o.location.to_string())
        .collect()
}
