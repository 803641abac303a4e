//! `sandboxctl events` and `sandboxctl projections` as an auditor and an operator run
//! them: a real process against a real database.

use projections::testing::TestDatabase;
use serde_json::{Value, json};
use std::process::Command;

struct Cli {
    db: TestDatabase,
    data: tempfile::TempDir,
}

impl Cli {
    /// A database holding a small directory, applied through the CLI.
    async fn seeded() -> Self {
        let cli = Self {
            db: TestDatabase::empty().await,
            data: tempfile::tempdir().unwrap(),
        };
        let file = json!({"companies": [{"ref": "acme", "name": "Acme",
          "departments": [{"ref": "rnd", "name": "R&D"}],
          "chatrooms": [{"ref": "lab", "name": "lab", "department": "rnd"}],
          "users": [{"ref": "boss", "username": "boss", "role": 3},
                    {"ref": "ann", "username": "ann", "role": 1, "departments": ["rnd"], "chatrooms": ["lab"]}],
          "api_keys": [{"ref": "bot", "user": "ann", "scope": "sandbox", "chatrooms": ["lab"], "domains": ["*"]}]},
          {"ref": "globex", "name": "Globex", "users": [{"ref": "ceo", "username": "ceo", "role": 5}]}]});
        let path = cli.data.path().join("directory.json");
        std::fs::write(&path, file.to_string()).unwrap();
        let (ok, _, stderr) = cli.run(&["directory", "apply", path.to_str().unwrap()]);
        assert!(ok, "{stderr}");
        cli
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

    fn export(&self, args: &[&str]) -> Vec<Value> {
        let mut all = vec!["events", "export"];
        all.extend_from_slice(args);
        let (ok, stdout, stderr) = self.run(&all);
        assert!(ok, "{stderr}");
        assert!(stderr.is_empty(), "a pipe gets data only: {stderr}");
        stdout
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }
}

#[tokio::test]
async fn export_streams_every_event_as_json_lines_with_filters() {
    let cli = Cli::seeded().await;
    let events = cli.export(&[]);
    assert!(events.len() > 8);
    for (n, event) in events.iter().enumerate() {
        assert_eq!(event["position"], json!(n + 1));
        for field in [
            "time",
            "aggregate_type",
            "aggregate_id",
            "sequence",
            "event_type",
            "event_version",
            "payload",
            "metadata",
            "chain_hash",
        ] {
            assert!(!event[field].is_null(), "{field} missing in {event}");
        }
    }
    let users = cli.export(&["--aggregate-type", "user", "--from", "2", "--to", "6"]);
    assert!(users.iter().all(|e| e["aggregate_type"] == "user"));
    assert!(
        users
            .iter()
            .all(|e| (2..=6).contains(&e["position"].as_i64().unwrap()))
    );
    let globex = events
        .iter()
        .find(|e| {
            e["event_type"] == "CompanyRegistered"
                && e["payload"]["CompanyRegistered"]["name"] == "Globex"
        })
        .unwrap()["aggregate_id"]
        .as_str()
        .unwrap()
        .to_string();
    let of_globex = cli.export(&["--company", &globex]);
    let kinds: Vec<&str> = of_globex
        .iter()
        .map(|e| e["event_type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, vec!["CompanyRegistered", "UserRegistered"]);
    let one = cli.export(&["--aggregate-id", &globex]);
    assert_eq!(one.len(), 1);
}

#[tokio::test]
async fn verify_names_the_position_of_a_payload_edited_with_sql() {
    let cli = Cli::seeded().await;
    let (ok, stdout, stderr) = cli.run(&["events", "verify"]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("chain verified"), "{stdout}");
    let (ok, kept, stderr) = cli.run(&["events", "checkpoint"]);
    assert!(ok, "{stderr}");
    let kept = kept.trim().to_string();
    let (position, hash) = kept.split_once(':').unwrap();
    assert_eq!(hash.len(), 64);
    let (ok, stdout, _) = cli.run(&["events", "verify", "--expect", &kept]);
    assert!(ok && stdout.contains("2 checkpoint(s) matched"), "{stdout}");

    sqlx::query(
        "UPDATE events SET payload = replace(payload::text, '\"ann\"', '\"eve\"')::json
          WHERE event_type = 'UserRegistered' AND payload::text LIKE '%\"ann\"%'",
    )
    .execute(&cli.db.pool)
    .await
    .unwrap();
    let edited: i64 =
        sqlx::query_scalar("SELECT position FROM events WHERE payload::text LIKE '%\"eve\"%'")
            .fetch_one(&cli.db.pool)
            .await
            .unwrap();
    let (ok, _, stderr) = cli.run(&["events", "verify"]);
    assert!(!ok, "verify exits non-zero");
    assert!(
        stderr.contains(&format!("breaks at position {edited}:")),
        "{stderr}"
    );
    assert!(position.parse::<i64>().unwrap() >= edited);
}

#[tokio::test]
async fn status_rebuild_and_point_in_time_build() {
    let cli = Cli::seeded().await;
    let (ok, stdout, stderr) = cli.run(&["projections", "status", "--json"]);
    assert!(ok, "{stderr}");
    let status: Value = serde_json::from_str(&stdout).unwrap();
    let head = status[0]["head"].as_i64().unwrap();
    assert!(head > 8);
    for row in status.as_array().unwrap() {
        assert_eq!(row["lag"], 0);
        assert!(row["rebuild"].is_null());
    }
    let (_, before, _) = cli.run(&["projections", "digest"]);

    let (ok, stdout, stderr) = cli.run(&["projections", "rebuild", "directory", "--batch", "3"]);
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains(&format!("swapped in at position {head}")),
        "{stdout}"
    );
    let (ok, stdout, stderr) = cli.run(&["projections", "rebuild", "--all"]);
    assert!(ok, "{stderr}");
    assert_eq!(
        stdout.matches("swapped in").count(),
        projections::read_models::all().len(),
        "{stdout}"
    );
    let (_, after, _) = cli.run(&["projections", "digest"]);
    assert_eq!(before, after, "the rebuilt models equal the old ones");

    let (ok, stdout, stderr) = cli.run(&[
        "projections",
        "rebuild",
        "directory",
        "--until",
        "1",
        "--into",
        "as_of_1",
    ]);
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains("as of position 1 into schema as_of_1"),
        "{stdout}"
    );
    let companies: i64 = sqlx::query_scalar("SELECT count(*) FROM as_of_1.companies")
        .fetch_one(&cli.db.pool)
        .await
        .unwrap();
    let users: i64 = sqlx::query_scalar("SELECT count(*) FROM as_of_1.users")
        .fetch_one(&cli.db.pool)
        .await
        .unwrap();
    assert_eq!((companies, users), (1, 0));
    let (ok, stdout, _) = cli.run(&["projections", "digest", "directory", "--schema", "as_of_1"]);
    assert!(ok && stdout.lines().count() == 8, "{stdout}");

    let (ok, stdout, _) = cli.run(&["projections", "rebuild", "directory", "--discard"]);
    assert!(ok && stdout.contains("no rebuild in progress"), "{stdout}");
    let (ok, _, stderr) = cli.run(&["projections", "rebuild", "nothing"]);
    assert!(
        !ok && stderr.contains("no projection named nothing"),
        "{stderr}"
    );
}
