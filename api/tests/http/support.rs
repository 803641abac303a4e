//! The test server and its typed request helpers.

use api::admin::directory::{Applied, Applier, DirectoryFile};
use api::admin::operator_metadata;
use api::config::{Config, LogFormat, SecretKeyMode, TransitKeyMode};
use api::state::AppState;
use domain::catalog::Provider;
use projections::testing::TestDatabase;
use reqwest::{Method, RequestBuilder, Response};
use serde_json::{Value, json};
use std::path::PathBuf;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// The JWT secret of every test server.
pub const JWT_SECRET: &str = "test-secret-test-secret-test-secret-0123";

/// The agent turn key of every test server.
pub const TURN_KEY: &str = "test-turn-key-test-turn-key-test-turn-key";

/// A running server with its own database and data directory.
pub struct TestApp {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    /// Shared state (pool, bus).
    pub state: AppState,
    /// The database.
    pub db: TestDatabase,
    /// HTTP client.
    pub client: reqwest::Client,
    cancel: CancellationToken,
    _data: tempfile::TempDir,
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// Options of a test server.
pub struct Options {
    /// Provider.
    pub provider: Provider,
    /// Kill switch.
    pub enabled: bool,
    /// Whether the transit key exists.
    pub transit_key: bool,
    /// Whether the secret store has its key-encryption key.
    pub secret_store: bool,
    /// Whether the secret store has its pepper.
    pub secret_pepper: bool,
    /// Runs executed at once (0: no executor in this server).
    pub run_slots: usize,
    /// How long a command waits for the read models.
    pub read_wait_timeout: std::time::Duration,
    /// Whether the trigger pass takes a `now` from the operator.
    pub allow_clock_override: bool,
    /// Whether this server starts its workers (builder, executor, janitor); a
    /// test without them leaves the work to a server process of its own.
    pub workers: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            provider: Provider::Onprem,
            enabled: true,
            transit_key: true,
            secret_store: true,
            secret_pepper: true,
            run_slots: 4,
            read_wait_timeout: std::time::Duration::from_secs(10),
            allow_clock_override: true,
            workers: true,
        }
    }
}

/// A transit key generated once per test process and copied into each data dir.
fn cached_transit_key() -> PathBuf {
    static KEY: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    KEY.get_or_init(|| {
        let dir = std::env::temp_dir().join("sandbox-test-keys");
        api::keys::TransitKey::load_or_generate(&dir).expect("test transit key");
        dir.join("transit_key.pem")
    })
    .clone()
}

/// Most bytes of server log kept for the leak checks.
const CAPTURE_CAP: usize = 64 << 20;

static CAPTURED: std::sync::Mutex<Vec<u8>> = std::sync::Mutex::new(Vec::new());

/// Collects the servers' log lines (see [`captured_log`]).
struct Capture;

impl std::io::Write for Capture {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let mut captured = CAPTURED.lock().unwrap_or_else(|e| e.into_inner());
        if captured.len() + bytes.len() <= CAPTURE_CAP {
            captured.extend_from_slice(bytes);
        }
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Logs `RUST_LOG` (default `warn`) to the test output, and everything the service's
/// crates log at debug level into a buffer the leak checks read.
fn init_logging() {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::{EnvFilter, Layer, fmt};
    let shown = EnvFilter::new(std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".into()));
    let captured = EnvFilter::new("warn,api=debug,projections=debug,domain=debug,tower_http=debug");
    let _ = tracing_subscriber::registry()
        .with(fmt::layer().with_test_writer().with_filter(shown))
        .with(
            fmt::layer()
                .with_ansi(false)
                .with_writer(|| Capture)
                .with_filter(captured),
        )
        .try_init();
}

/// Every line the servers of this test process logged so far (debug level and
/// up, of the service's own crates and its HTTP layer).
pub fn captured_log() -> String {
    String::from_utf8_lossy(&CAPTURED.lock().unwrap_or_else(|e| e.into_inner())).into_owned()
}

fn key_mode(present: bool) -> SecretKeyMode {
    if present {
        SecretKeyMode::DataDir
    } else {
        SecretKeyMode::Off
    }
}

impl TestApp {
    /// A server with default options.
    pub async fn spawn() -> Self {
        Self::spawn_with(Options::default()).await
    }

    /// A server whose runs stay queued (no executor): what a queued run holds
    /// stays held, and nothing races the test for it.
    pub async fn without_executor() -> Self {
        Self::spawn_with(Options {
            run_slots: 0,
            ..Options::default()
        })
        .await
    }

    /// The whole database as `pg_dump` writes it (for leak checks).
    pub fn pg_dump(&self) -> String {
        let dump = std::process::Command::new("pg_dump")
            .arg(format!("--dbname={}", self.db.url))
            .output()
            .expect("pg_dump runs");
        assert!(
            dump.status.success(),
            "{}",
            String::from_utf8_lossy(&dump.stderr)
        );
        String::from_utf8_lossy(&dump.stdout).into_owned()
    }

    /// A server with the given options.
    pub async fn spawn_with(options: Options) -> Self {
        init_logging();
        let db = TestDatabase::fresh().await;
        let data = tempfile::tempdir().expect("temp dir");
        if options.transit_key {
            std::fs::copy(cached_transit_key(), data.path().join("transit_key.pem"))
                .expect("copy key");
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().unwrap();
        let config = Config {
            role: api::config::Role::All,
            object_store: None,
            executor: api::config::ExecutorKind::Buildah,
            registry: None,
            kube_namespace: "sandbox-runs".into(),
            kube_tools_image: String::new(),
            kube_object_store_cidrs: Vec::new(),
            build_egress_allow: Vec::new(),
            data_dir: data.path().to_path_buf(),
            database_url: Some(db.url.clone()),
            listen: addr,
            base_url: None,
            provider: options.provider,
            regions: Vec::new(),
            enabled: options.enabled,
            jwt_secret: Some(JWT_SECRET.into()),
            turn_key: Some(TURN_KEY.into()),
            receipt_key: None,
            transit_key: if options.transit_key {
                TransitKeyMode::Generate
            } else {
                TransitKeyMode::Off
            },
            secret_store: key_mode(options.secret_store),
            secret_pepper: key_mode(options.secret_pepper),
            log_format: LogFormat::Text,
            region_job_quotas: Vec::new(),
            build_slots: 2,
            run_slots: options.run_slots,
            buildah: "buildah".into(),
            build_timeout: std::time::Duration::from_secs(300).into(),
            read_wait_timeout: options.read_wait_timeout.into(),
            trigger_interval: std::time::Duration::from_secs(2).into(),
            allow_clock_override: options.allow_clock_override,
        };
        let cancel = CancellationToken::new();
        let started = AppState::start(&config, db.pool.clone(), cancel.clone())
            .await
            .expect("state");
        if options.workers {
            api::runtime::start(&started.state.runtime)
                .await
                .expect("workers start");
        }
        let app = api::server::app(started.state.clone());
        let shutdown = cancel.clone();
        tokio::spawn(async move {
            let stopped = async move { shutdown.cancelled().await };
            api::server::serve_router(listener, app, stopped)
                .await
                .unwrap();
        });
        Self {
            base: format!("http://{addr}"),
            state: started.state,
            db,
            client: reqwest::Client::new(),
            cancel,
            _data: data,
        }
    }

    /// Applies a directory file through the operator path.
    pub async fn apply(&self, file: Value) -> Applied {
        let file: DirectoryFile = serde_json::from_value(file).expect("directory file");
        let applier = Applier {
            bus: &self.state.bus,
            jwt: &self.state.jwt,
            token_ttl: chrono::Duration::hours(1),
            metadata: operator_metadata("test"),
        };
        applier.apply(&file).await.expect("apply directory")
    }

    /// The standard two-company directory.
    pub async fn seed(&self) -> Seed {
        Seed(self.apply(standard_directory()).await)
    }

    /// A request to a path below the base URL.
    pub fn request(&self, method: Method, path: &str) -> RequestBuilder {
        self.client
            .request(method, format!("{}{}", self.base, path))
    }

    /// Changes a company's operator limits (as `sandboxctl` would).
    pub async fn set_limits(
        &self,
        company: Uuid,
        change: impl FnOnce(&mut domain::settings::OperatorLimits),
    ) {
        use domain::settings::{CompanySettings, SettingsCommand};
        let mut limits = self
            .state
            .bus
            .load::<CompanySettings>(&company.to_string())
            .await
            .unwrap()
            .limits;
        change(&mut limits);
        self.state
            .bus
            .execute::<CompanySettings>(
                &company.to_string(),
                SettingsCommand::SetOperatorLimits {
                    company_id: company,
                    limits,
                },
                &operator_metadata("test"),
            )
            .await
            .unwrap();
    }

    /// The server's data directory (objects, buildah storage).
    pub fn data_dir(&self) -> &std::path::Path {
        self._data.path()
    }

    /// Starts `sandbox-api serve` (its own process, with its workers) on this
    /// app's database and data directory.
    pub fn server_process(&self) -> std::process::Child {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        std::process::Command::new(env!("CARGO_BIN_EXE_sandbox-api"))
            .arg("serve")
            .env("DATABASE_URL", &self.db.url)
            .env("SANDBOX_DATA_DIR", self.data_dir())
            .env("SANDBOX_LISTEN", format!("127.0.0.1:{port}"))
            .env("SANDBOX_JWT_SECRET", JWT_SECRET)
            .env("SANDBOX_RUN_SLOTS", "2")
            .env("RUST_LOG", "warn")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("the server binary starts")
    }

    /// Whether a process with exactly this command line runs on this host (the
    /// work of a run or a build).
    pub fn running_command(cmdline: &[&str]) -> bool {
        let wanted: Vec<u8> = cmdline
            .iter()
            .flat_map(|arg| [arg.as_bytes(), b"\0"].concat())
            .collect();
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|entry| std::fs::read(entry.ok()?.path().join("cmdline")).ok())
            .any(|found| found == wanted)
    }

    /// The number of events in the log.
    pub async fn event_count(&self) -> i64 {
        sqlx::query_scalar("SELECT count(*) FROM events")
            .fetch_one(&self.db.pool)
            .await
            .unwrap()
    }
}

/// The standard directory: company `acme` (department `rnd` with room `lab`,
/// department `ops` with room `ops-room`, users boss/dm/member/outsider, keys, a
/// LINE client) and company `globex` (its own manager and room).
pub fn standard_directory() -> Value {
    json!({"companies": [
        {"ref": "acme", "name": "Acme",
         "departments": [{"ref": "rnd", "name": "R&D"}, {"ref": "ops", "name": "Ops"}],
         "chatrooms": [{"ref": "lab", "name": "lab", "department": "rnd"},
                       {"ref": "ops-room", "name": "ops room", "department": "ops"}],
         "users": [
            {"ref": "boss", "username": "boss", "role": 3},
            {"ref": "dm", "username": "dm", "role": 1, "departments": ["rnd"], "manages_departments": ["rnd"],
             "chatrooms": ["lab"], "manages_chatrooms": ["lab"]},
            {"ref": "member", "username": "member", "role": 1, "departments": ["rnd"], "chatrooms": ["lab"]},
            {"ref": "outsider", "username": "outsider", "role": 1, "departments": ["ops"], "chatrooms": ["ops-room"]}],
         "api_keys": [
            {"ref": "bot", "user": "member", "scope": "sandbox", "chatrooms": ["lab"], "domains": ["*"]},
            {"ref": "full", "user": "boss", "scope": "full", "domains": ["*"]},
            {"ref": "web", "user": "boss", "scope": "full", "domains": ["app.acme.test"]},
            {"ref": "line", "social_client": "line1", "scope": "full", "domains": ["*"]}],
         "social_clients": [{"ref": "line1", "platform": "line", "platform_user_id": "U1", "chatrooms": ["lab"]}]},
        {"ref": "globex", "name": "Globex",
         "chatrooms": [{"ref": "hq", "name": "hq"}],
         "users": [{"ref": "ceo", "username": "ceo", "role": 5, "chatrooms": ["hq"], "manages_chatrooms": ["hq"]}],
         "api_keys": []}
    ]})
}

/// Credentials and ids of the standard directory.
pub struct Seed(pub Applied);

impl Seed {
    /// A user's JWT.
    pub fn token(&self, company: &str, user: &str) -> String {
        self.0.companies[company].users[user].token.clone()
    }

    /// A user's id.
    pub fn user(&self, company: &str, user: &str) -> Uuid {
        self.0.companies[company].users[user].id
    }

    /// An API key's secret.
    pub fn key(&self, company: &str, key: &str) -> String {
        self.0.companies[company].api_keys[key]
            .key
            .clone()
            .expect("key issued by this apply")
    }

    /// A department id.
    pub fn department(&self, company: &str, department: &str) -> Uuid {
        self.0.companies[company].departments[department]
    }

    /// A chatroom id.
    pub fn room(&self, company: &str, room: &str) -> Uuid {
        self.0.companies[company].chatrooms[room]
    }

    /// A company id.
    pub fn company(&self, company: &str) -> Uuid {
        self.0.companies[company].id
    }
}

/// Extension helpers on request builders.
pub trait As {
    /// Authenticates with a JWT.
    fn bearer_token(self, token: &str) -> Self;
    /// Authenticates with an API key.
    fn api_key(self, key: &str) -> Self;
}

impl As for RequestBuilder {
    fn bearer_token(self, token: &str) -> Self {
        self.header("authorization", format!("Bearer {token}"))
    }
    fn api_key(self, key: &str) -> Self {
        self.header("x-api-key", key)
    }
}

/// Status and JSON body of a response.
/// A `multipart/form-data` body with one `file` part: its content type and bytes.
pub fn multipart_file(filename: &str, mime: &str, bytes: &[u8]) -> (String, Vec<u8>) {
    let boundary = "sandbox-test-boundary-7f3a";
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\nContent-Type: {mime}\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(bytes);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

pub async fn json(response: Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, body)
}

/// Asserts a `{detail: {code}}` error and returns its detail.
pub fn assert_code(got: &(u16, Value), status: u16, code: &str) -> Value {
    assert_eq!(got.0, status, "status of {}", got.1);
    assert_eq!(got.1["detail"]["code"], code, "code of {}", got.1);
    got.1["detail"].clone()
}

/// Asserts a validation array whose first item has the given type and location.
pub fn assert_validation(got: &(u16, Value), kind: &str, loc: &[&str]) {
    assert_eq!(got.0, 422, "status of {}", got.1);
    let items = got.1["detail"]
        .as_array()
        .unwrap_or_else(|| panic!("validation array expected: {}", got.1));
    assert!(
        items
            .iter()
            .any(|item| item["type"] == kind && item["loc"] == json!(loc)),
        "no {kind} at {loc:?} in {}",
        got.1
    );
}
