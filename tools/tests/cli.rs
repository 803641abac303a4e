//! `sandboxctl` as an operator runs it: a real process against a real database.

use projections::testing::TestDatabase;
use serde_json::{Value, json};
use std::process::Command;

struct Cli {
    db: TestDatabase,
    data: tempfile::TempDir,
}

impl Cli {
    async fn new() -> Self {
        Self {
            db: TestDatabase::empty().await,
            data: tempfile::tempdir().unwrap(),
        }
    }

    fn run(&self, args: &[&str]) -> (bool, String, String) {
        let output = Command::new(env!("CARGO_BIN_EXE_sandboxctl"))
            .args(args)
            .env("DATABASE_URL", &self.db.url)
            .env("SANDBOX_DATA_DIR", self.data.path())
            .env_remove("SANDBOX_JWT_SECRET")
            .output()
            .unwrap();
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stdout).to_string(),
            String::from_utf8_lossy(&output.stderr).to_string(),
        )
    }

    fn apply(&self, file: &Value) -> Value {
        let path = self.data.path().join("directory.json");
        std::fs::write(&path, file.to_string()).unwrap();
        let (ok, stdout, stderr) = self.run(&["directory", "apply", path.to_str().unwrap()]);
        assert!(ok, "{stderr}");
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
    }

    async fn events(&self) -> i64 {
        sqlx::query_scalar("SELECT count(*) FROM events")
            .fetch_one(&self.db.pool)
            .await
            .unwrap()
    }
}

fn directory() -> Value {
    json!({"companies": [{"ref": "acme", "name": "Acme",
      "departments": [{"ref": "rnd", "name": "R&D"}],
      "chatrooms": [{"ref": "lab", "name": "lab", "department": "rnd"}],
      "users": [
        {"ref": "boss", "username": "boss", "role": 3},
        {"ref": "dm", "username": "dm", "role": 1, "departments": ["rnd"], "manages_departments": ["rnd"], "chatrooms": ["lab"], "manages_chatrooms": ["lab"]},
        {"ref": "member", "username": "member", "role": 1, "departments": ["rnd"], "chatrooms": ["lab"]}],
      "api_keys": [
        {"ref": "bot", "user": "member", "scope": "sandbox", "chatrooms": ["lab"], "domains": ["*"]},
        {"ref": "full", "user": "boss", "scope": "full", "domains": ["*"]}],
      "social_clients": [{"ref": "line1", "platform": "line", "platform_user_id": "U1", "chatrooms": ["lab"]}]}]})
}

#[tokio::test]
async fn directory_apply_is_idempotent_and_prints_credentials_once() {
    let cli = Cli::new().await;
    let (ok, _, stderr) = cli.run(&["db", "migrate"]);
    assert!(ok, "{stderr}");
    let first = cli.apply(&directory());
    let acme = &first["companies"]["acme"];
    assert!(acme["id"].as_str().unwrap().parse::<uuid::Uuid>().is_ok());
    assert!(acme["departments"]["rnd"].is_string());
    assert!(acme["chatrooms"]["lab"].is_string());
    assert!(
        acme["users"]["boss"]["token"]
            .as_str()
            .unwrap()
            .split('.')
            .count()
            == 3
    );
    assert!(
        acme["api_keys"]["bot"]["key"]
            .as_str()
            .unwrap()
            .starts_with("sbx_")
    );
    assert!(acme["social_clients"]["line1"]["id"].is_string());
    let events = cli.events().await;
    assert!(events > 10);

    let second = cli.apply(&directory());
    assert_eq!(cli.events().await, events, "a second apply changes nothing");
    assert_eq!(second["companies"]["acme"]["id"], acme["id"]);
    assert_eq!(
        second["companies"]["acme"]["users"]["dm"]["id"],
        acme["users"]["dm"]["id"]
    );
    assert!(second["companies"]["acme"]["api_keys"]["bot"]["key"].is_null());
    assert_eq!(
        second["companies"]["acme"]["api_keys"]["bot"]["id"],
        acme["api_keys"]["bot"]["id"]
    );

    let members: i64 = sqlx::query_scalar("SELECT count(*) FROM chatroom_members WHERE is_member")
        .fetch_one(&cli.db.pool)
        .await
        .unwrap();
    assert_eq!(members, 3, "dm, member and the LINE client are in the lab");
}

#[tokio::test]
async fn a_changed_file_applies_only_the_difference() {
    let cli = Cli::new().await;
    cli.apply(&directory());
    let events = cli.events().await;
    let mut changed = directory();
    changed["companies"][0]["users"][2]["role"] = json!(3);
    cli.apply(&changed);
    assert_eq!(cli.events().await, events + 1);
    let role: i32 = sqlx::query_scalar("SELECT role FROM users WHERE username = 'member'")
        .fetch_one(&cli.db.pool)
        .await
        .unwrap();
    assert_eq!(role, 3);
}

#[tokio::test]
async fn token_mint_prints_a_token_for_a_directory_user() {
    let cli = Cli::new().await;
    let applied = cli.apply(&directory());
    let (ok, stdout, stderr) = cli.run(&[
        "token",
        "mint",
        "--company",
        "acme",
        "--user",
        "dm",
        "--ttl",
        "1h",
    ]);
    assert!(ok, "{stderr}");
    let secret = std::fs::read(cli.data.path().join("jwt.secret")).unwrap();
    let claims = api::auth::jwt::JwtKeys::new(secret.trim_ascii())
        .verify(stdout.trim())
        .expect("a valid token");
    assert_eq!(
        claims.sub.to_string(),
        applied["companies"]["acme"]["users"]["dm"]["id"]
            .as_str()
            .unwrap()
    );
    assert!(claims.exp - claims.iat <= 3600);
    let (ok, _, stderr) = cli.run(&["token", "mint", "--company", "acme", "--user", "nobody"]);
    assert!(!ok);
    assert!(stderr.contains("no user"), "{stderr}");
}

#[tokio::test]
async fn switch_turns_a_company_off_and_on_with_a_reason() {
    let cli = Cli::new().await;
    cli.apply(&directory());
    let (ok, stdout, stderr) =
        cli.run(&["switch", "off", "--company", "acme", "--reason", "billing"]);
    assert!(ok, "{stderr}");
    let acme = api::admin::directory::company_id("acme").to_string();
    assert_eq!(stdout.trim(), format!("{acme} off"));
    let (ok, stdout, stderr) = cli.run(&["switch", "status"]);
    assert!(ok, "{stderr}");
    let status: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        status["build_fence_retry_after_seconds"],
        serde_json::Value::Null
    );
    let rows = &status["switches"];
    assert_eq!(rows[0]["scope"], acme.as_str());
    assert_eq!(rows[0]["enabled"], false);
    assert_eq!(rows[0]["reason"], "billing");
    assert!(
        rows[0]["changed_by"]
            .as_str()
            .unwrap()
            .starts_with("operator:"),
        "{rows}"
    );
    let (ok, _, stderr) = cli.run(&["switch", "on", "--company", "acme", "--reason", " "]);
    assert!(!ok, "a reason is required: {stderr}");
    let (ok, stdout, _) = cli.run(&["switch", "on", "--reason", "all clear"]);
    assert!(ok);
    assert_eq!(stdout.trim(), "global on");
    let fence = [
        "switch",
        "fence-builds",
        "--retry-after",
        "300",
        "--reason",
        "stage image",
    ];
    let (ok, stdout, stderr) = cli.run(&fence);
    assert!(ok, "{stderr}");
    assert_eq!(stdout.trim(), "builds fenced");
    let (_, stdout, _) = cli.run(&["switch", "status"]);
    let status: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(status["build_fence_retry_after_seconds"], 300);
    let (ok, stdout, _) = cli.run(&["switch", "unfence-builds", "--reason", "done"]);
    assert!(ok);
    assert_eq!(stdout.trim(), "builds open");
}

#[tokio::test]
async fn token_mint_root_prints_an_operator_token_alone_on_one_line() {
    let cli = Cli::new().await;
    let (ok, stdout, stderr) = cli.run(&["token", "mint", "--root"]);
    assert!(ok, "{stderr}");
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    let secret = std::fs::read(cli.data.path().join("jwt.secret")).unwrap();
    let keys = api::auth::jwt::JwtKeys::new(secret.trim_ascii());
    assert!(keys.verify_operator(stdout.trim()));
    assert!(keys.verify(stdout.trim()).is_none(), "not a user's token");
    let (ok, _, stderr) = cli.run(&["token", "mint", "--root", "--user", "dm"]);
    assert!(!ok, "--root names no user: {stderr}");
    let (ok, _, stderr) = cli.run(&["token", "mint", "--company", "acme"]);
    assert!(!ok, "a user token names its user: {stderr}");
}

#[tokio::test]
async fn unknown_references_are_refused_with_a_clear_message() {
    let cli = Cli::new().await;
    let mut bad = directory();
    bad["companies"][0]["users"][1]["chatrooms"] = json!(["nowhere"]);
    let path = cli.data.path().join("bad.json");
    std::fs::write(&path, bad.to_string()).unwrap();
    let (ok, _, stderr) = cli.run(&["directory", "apply", path.to_str().unwrap()]);
    assert!(!ok);
    assert!(
        stderr.contains("unknown chatroom reference `nowhere`"),
        "{stderr}"
    );
}

#[tokio::test]
async fn without_a_database_the_cli_says_what_to_do() {
    let data = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_sandboxctl"))
        .args(["db", "migrate"])
        .env_remove("DATABASE_URL")
        .env("SANDBOX_DATA_DIR", data.path())
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("sandbox-api serve"));
}

fn busybox_context(path: &std::path::Path) {
    let busybox = std::fs::read("/bin/busybox").expect("busybox-static is installed");
    let dockerfile = b"FROM scratch\nCOPY busybox /bin/busybox\nRUN [\"/bin/busybox\", \"--install\", \"-s\", \"/bin\"]\n";
    let file = std::fs::File::create(path).unwrap();
    let gz = flate2::write::GzEncoder::new(file, flate2::Compression::fast());
    let mut tar = tar::Builder::new(gz);
    for (name, content) in [("Dockerfile", &dockerfile[..]), ("busybox", &busybox[..])] {
        let mut header = tar::Header::new_gnu();
        header.set_size(content.len() as u64);
        header.set_mode(0o755);
        header.set_cksum();
        tar.append_data(&mut header, name, content).unwrap();
    }
    tar.into_inner().unwrap().finish().unwrap();
}

#[tokio::test]
async fn publish_curated_creates_and_builds_an_operator_environment() {
    let cli = Cli::new().await;
    let context = cli.data.path().join("curated.tar.gz");
    busybox_context(&context);
    let (ok, stdout, stderr) = cli.run(&[
        "environments",
        "publish-curated",
        "--name",
        "busybox",
        "--context",
        context.to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    let published: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(published["state"], "ready", "{stdout}");
    let (kind, company): (String, Option<uuid::Uuid>) =
        sqlx::query_as("SELECT owner_kind, company_id FROM environments WHERE id = $1::uuid")
            .bind(published["environment_id"].as_str().unwrap())
            .fetch_one(&cli.db.pool)
            .await
            .unwrap();
    assert_eq!((kind.as_str(), company), ("system_curated", None));
    let (ok, _, stderr) = cli.run(&[
        "environments",
        "publish-curated",
        "--name",
        "x",
        "--context",
        "/etc/hostname",
    ]);
    assert!(!ok);
    assert!(stderr.contains(".tar.gz"), "{stderr}");

    // A new version of the same environment.
    let environment = published["environment_id"].as_str().unwrap();
    let (ok, stdout, stderr) = cli.run(&[
        "environments",
        "publish-curated",
        "--environment",
        environment,
        "--context",
        context.to_str().unwrap(),
        "--no-wait",
    ]);
    assert!(ok, "{stderr}");
    let second: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(second["environment_id"], environment);
    assert_ne!(second["version_id"], published["version_id"]);
    let number: i64 =
        sqlx::query_scalar("SELECT version_number FROM environment_versions WHERE id = $1::uuid")
            .bind(second["version_id"].as_str().unwrap())
            .fetch_one(&cli.db.pool)
            .await
            .unwrap();
    assert_eq!(number, 2);
    let (ok, _, stderr) = cli.run(&[
        "environments",
        "publish-curated",
        "--environment",
        &uuid::Uuid::new_v4().to_string(),
        "--context",
        context.to_str().unwrap(),
    ]);
    assert!(!ok);
    assert!(stderr.contains("not a curated environment"), "{stderr}");
}

#[tokio::test]
async fn scrub_names_a_version_that_does_not_exist() {
    let cli = Cli::new().await;
    let missing = uuid::Uuid::new_v4().to_string();
    let (ok, _, stderr) = cli.run(&["tasks", "scrub", "--version", &missing, "--reason", "test"]);
    assert!(!ok);
    assert!(
        stderr.contains(&format!("no task version {missing}")),
        "{stderr}"
    );
    let (ok, _, stderr) = cli.run(&["tasks", "scrub", "--version", &missing]);
    assert!(!ok, "a scrub needs a reason");
    assert!(stderr.contains("--reason"), "{stderr}");
}

#[tokio::test]
async fn runner_releases_are_withdrawn_and_approved_with_a_reason() {
    let cli = Cli::new().await;
    cli.apply(&directory());
    let (ok, stdout, stderr) = cli.run(&[
        "runner",
        "withdraw",
        "--release",
        "5.21.0",
        "--reason",
        "a flaw",
    ]);
    assert!(ok, "{stderr}");
    assert_eq!(stdout.trim(), "5.21.0 withdrawn");
    let (ok, stdout, stderr) = cli.run(&["runner", "status"]);
    assert!(ok, "{stderr}");
    let status: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(status["built_in"], domain::runner_release::BUILT_IN);
    assert_eq!(status["decisions"][0]["approved"], false);
    assert_eq!(status["decisions"][0]["reason"], "a flaw");
    let (ok, _, _) = cli.run(&["runner", "approve", "--release", "5.21.0", "--reason", " "]);
    assert!(!ok, "a reason is required");
    let (ok, stdout, _) = cli.run(&[
        "runner",
        "approve",
        "--release",
        "5.21.0",
        "--reason",
        "fixed",
    ]);
    assert!(ok);
    assert_eq!(stdout.trim(), "5.21.0 approved");
}

#[tokio::test]
async fn pricing_sets_prices_and_budgets() {
    let cli = Cli::new().await;
    cli.apply(&directory());
    let (ok, stdout, stderr) = cli.run(&[
        "pricing",
        "set-price",
        "--region",
        "onprem",
        "--currency",
        "USD",
        "--vcpu-second",
        "0.00002",
        "--memory-gib-second",
        "0.000002",
    ]);
    assert!(ok, "{stderr}");
    assert_eq!(stdout.trim(), "onprem priced");
    let (ok, stdout, _) = cli.run(&["pricing", "status"]);
    assert!(ok);
    let prices: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(prices[0]["vcpu_second_micros"], 20);
    assert_eq!(prices[0]["memory_gib_second_micros"], 2);
    let (ok, _, stderr) = cli.run(&[
        "pricing",
        "set-price",
        "--region",
        "mars-1",
        "--currency",
        "USD",
        "--vcpu-second",
        "1",
        "--memory-gib-second",
        "1",
    ]);
    assert!(!ok);
    assert!(stderr.contains("not a region code"), "{stderr}");
    let (ok, stdout, stderr) = cli.run(&[
        "pricing",
        "set-budget",
        "--company",
        "acme",
        "--currency",
        "USD",
        "--amount",
        "500",
        "--window-days",
        "30",
    ]);
    assert!(ok, "{stderr}");
    assert_eq!(stdout.trim(), "acme budgeted");
    let acme = api::admin::directory::company_id("acme");
    let amount: i64 =
        sqlx::query_scalar("SELECT amount_micros FROM company_budgets WHERE company_id = $1")
            .bind(acme)
            .fetch_one(&cli.db.pool)
            .await
            .unwrap();
    assert_eq!(amount, 500_000_000);
    let (ok, _, stderr) = cli.run(&[
        "pricing",
        "set-budget",
        "--company",
        "acme",
        "--currency",
        "usd",
        "--amount",
        "5",
        "--window-days",
        "30",
    ]);
    assert!(!ok, "a currency is an ISO 4217 code: {stderr}");
    let (ok, stdout, _) = cli.run(&["pricing", "clear-budget", "--company", "acme"]);
    assert!(ok);
    assert_eq!(stdout.trim(), "acme unmetered");
}
