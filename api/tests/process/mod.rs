//! A real `sandbox-api serve` process for the tests that stop or kill it.

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A data directory the postgres account can reach (an embedded cluster lives
/// inside it and is removed with it).
pub fn data_dir() -> tempfile::TempDir {
    let data = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        data.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    data
}

/// A running server and its base URL.
pub struct Server {
    /// The process.
    pub child: Child,
    /// `http://127.0.0.1:<port>`.
    pub base: String,
}

/// Starts `sandbox-api serve` on `data` with `env` (beside a free listen port and
/// no transit key) and waits until it is healthy.
pub async fn serve(data: &Path, env: &[(&str, &str)]) -> Server {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut command = Command::new(env!("CARGO_BIN_EXE_sandbox-api"));
    command
        .arg("serve")
        .env_remove("DATABASE_URL")
        .env("SANDBOX_DATA_DIR", data)
        .env("SANDBOX_LISTEN", format!("127.0.0.1:{port}"))
        .env("SANDBOX_TRANSIT_KEY", "off")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for (name, value) in env {
        command.env(name, value);
    }
    let mut child = command.spawn().unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Ok(response) = client.get(format!("{base}/healthz")).send().await {
            assert!(response.status().is_success());
            return Server { child, base };
        }
        assert!(Instant::now() < deadline, "the server did not come up");
        assert!(
            child.try_wait().unwrap().is_none(),
            "the server exited early"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Sends `signal` and waits for the server to exit.
pub async fn signal(server: &mut Server, signal: Signal) -> std::process::ExitStatus {
    kill(Pid::from_raw(server.child.id() as i32), signal).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "the server did not stop on {signal}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
