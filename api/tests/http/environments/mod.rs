//! Environments, uploads, versions and builds over HTTP.

mod builds;
mod cancels;
mod catalog;
mod curated;
mod isolation;
mod restart;
mod uploads;
mod versions;

use crate::support::{As, TestApp, json};
use reqwest::Method;
use serde_json::{Value, json};
use std::io::Write;
use std::time::{Duration, Instant};

/// The sandbox prefix.
pub const SANDBOX: &str = "/private/module/sandbox";

/// A tar.gz context from (path, content) pairs.
pub fn tar_gz(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (path, content) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(content.len() as u64);
        header.set_mode(0o755);
        header.set_cksum();
        builder.append_data(&mut header, path, *content).unwrap();
    }
    let tar = builder.into_inner().unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&tar).unwrap();
    gz.finish().unwrap()
}

/// A buildable context: `FROM scratch` with a static busybox and a Dockerfile body.
pub fn busybox_context(extra_dockerfile: &str, extra_files: &[(&str, &[u8])]) -> Vec<u8> {
    let busybox = std::fs::read("/bin/busybox")
        .expect("busybox-static is installed (scripts/test.sh installs it)");
    let dockerfile = format!(
        "FROM scratch\nCOPY busybox /bin/busybox\nRUN [\"/bin/busybox\", \"--install\", \"-s\", \"/bin\"]\n{extra_dockerfile}"
    );
    let mut files: Vec<(&str, &[u8])> =
        vec![("Dockerfile", dockerfile.as_bytes()), ("busybox", &busybox)];
    files.extend_from_slice(extra_files);
    tar_gz(&files)
}

/// A request helper for one caller.
pub struct Caller<'a> {
    /// The server.
    pub app: &'a TestApp,
    /// The caller's JWT.
    pub token: String,
}

impl Caller<'_> {
    /// A JSON request.
    pub async fn send(&self, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut request = self
            .app
            .request(method, &format!("{SANDBOX}{path}"))
            .bearer_token(&self.token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        json(request.send().await.unwrap()).await
    }

    /// GET.
    pub async fn get(&self, path: &str) -> (u16, Value) {
        self.send(Method::GET, path, None).await
    }

    /// POST with a body.
    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.send(Method::POST, path, Some(body)).await
    }

    /// Creates a company environment and returns its id.
    pub async fn environment(&self, name: &str) -> String {
        let (status, body) = self.post("/environments", json!({"name": name})).await;
        assert_eq!(status, 200, "{body}");
        body["id"].as_str().unwrap().to_string()
    }

    /// Opens an upload, PUTs the bytes and completes it; returns the complete answer.
    pub async fn upload(&self, environment: &str, bytes: Vec<u8>) -> (u16, Value) {
        let (status, init) = self
            .post(
                &format!("/environments/{environment}/context-uploads"),
                json!({"declared_bytes": bytes.len(), "archive_format": "tar.gz"}),
            )
            .await;
        assert_eq!(status, 200, "{init}");
        let session = init["id"].as_str().unwrap();
        let put = self
            .app
            .request(
                Method::PUT,
                &format!("{SANDBOX}/environments/{environment}/context-uploads/{session}"),
            )
            .bearer_token(&self.token)
            .header(
                "X-Sandbox-Upload-Capability",
                init["capability"].as_str().unwrap(),
            )
            .header("content-type", "application/octet-stream")
            .body(bytes)
            .send()
            .await
            .unwrap();
        assert_eq!(put.status().as_u16(), 200);
        self.post(
            &format!("/environments/{environment}/context-uploads/{session}/complete"),
            json!({}),
        )
        .await
    }

    /// Uploads a context and creates a version from it; returns the version id.
    pub async fn version(&self, environment: &str, bytes: Vec<u8>) -> String {
        let (status, completed) = self.upload(environment, bytes).await;
        assert_eq!(status, 200, "{completed}");
        let (status, version) = self
            .post(
                &format!("/environments/{environment}/versions"),
                json!({"owned_object_id": completed["owned_object_id"]}),
            )
            .await;
        assert_eq!(status, 200, "{version}");
        version["id"].as_str().unwrap().to_string()
    }

    /// Starts a build and returns the attempt.
    pub async fn build(&self, environment: &str, version: &str) -> Value {
        let (status, attempt) = self
            .post(
                &format!("/environments/{environment}/versions/{version}/builds"),
                json!({}),
            )
            .await;
        assert_eq!(status, 200, "{attempt}");
        attempt
    }

    /// Uploads `context` as a new version of `environment`, builds it and waits:
    /// the version's id and its finished attempt.
    pub async fn build_context(&self, environment: &str, context: Vec<u8>) -> (String, Value) {
        let version = self.version(environment, context).await;
        let attempt = self.build(environment, &version).await;
        let finished = self
            .finished(environment, &version, attempt["id"].as_str().unwrap())
            .await;
        (version, finished)
    }

    /// Polls an attempt until it is terminal.
    pub async fn finished(&self, environment: &str, version: &str, attempt: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let (_, body) = self
                .get(&format!(
                    "/environments/{environment}/versions/{version}/builds/{attempt}"
                ))
                .await;
            if body["terminal_class"].is_string() {
                return body;
            }
            assert!(
                Instant::now() < deadline,
                "the build did not finish: {body}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// Callers of the standard directory.
pub async fn callers(app: &TestApp) -> (crate::support::Seed, Caller<'_>, Caller<'_>, Caller<'_>) {
    let seed = app.seed().await;
    let boss = Caller {
        app,
        token: seed.token("acme", "boss"),
    };
    let dm = Caller {
        app,
        token: seed.token("acme", "dm"),
    };
    let member = Caller {
        app,
        token: seed.token("acme", "member"),
    };
    (seed, boss, dm, member)
}

/// Builds a busybox version of `environment` with `steps` and waits for it to
/// complete: the version's id and its image.
pub async fn built_image(
    app: &TestApp,
    caller: &Caller<'_>,
    environment: &str,
    steps: &str,
) -> (String, String) {
    let (version, done) = caller
        .build_context(environment, busybox_context(steps, &[]))
        .await;
    assert_eq!(done["terminal_class"], "completed", "{done}");
    let image = recorded_image(app, &version).await;
    (version, image)
}

/// The image a ready version records.
pub async fn recorded_image(app: &TestApp, version: &str) -> String {
    sqlx::query_scalar("SELECT image FROM environment_versions WHERE id = $1::uuid")
        .bind(version)
        .fetch_one(&app.db.pool)
        .await
        .unwrap()
}
