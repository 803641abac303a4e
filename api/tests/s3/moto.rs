//! A real S3-compatible server for the test: `moto`'s server (from the Python
//! registry; `scripts/test.sh` installs it), on a free port, stopped when dropped.

use object_store::aws::{AmazonS3, AmazonS3Builder};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The running server.
pub struct Moto {
    child: Child,
    log: tempfile::NamedTempFile,
    /// `http://127.0.0.1:<port>`.
    pub endpoint: String,
}

/// Credentials moto accepts (it checks none).
pub const ACCESS_KEY: &str = "sandbox-test";
pub const SECRET_KEY: &str = "sandbox-test-secret";
pub const REGION: &str = "us-east-1";

impl Moto {
    /// Starts the server and creates `bucket` in it.
    pub async fn start(bucket: &str) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let log = tempfile::NamedTempFile::new().unwrap();
        let child = Command::new("python3")
            .args([
                "-m",
                "moto.server",
                "-H",
                "127.0.0.1",
                "-p",
                &port.to_string(),
            ])
            .stdout(Stdio::null())
            .stderr(log.reopen().unwrap())
            .spawn()
            .expect("python3 runs (scripts/test.sh installs moto[server])");
        let mut moto = Self {
            child,
            log,
            endpoint: format!("http://127.0.0.1:{port}"),
        };
        let client = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let created = client
                .put(format!("{}/{bucket}", moto.endpoint))
                .send()
                .await;
            if created.is_ok_and(|r| r.status().is_success()) {
                return moto;
            }
            assert!(
                moto.child.try_wait().unwrap().is_none(),
                "the moto server exited: is moto[server] installed (scripts/test.sh)?"
            );
            assert!(Instant::now() < deadline, "the moto server did not come up");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The request lines the server logged so far (method, path and query).
    pub fn requests(&self) -> Vec<String> {
        std::fs::read_to_string(self.log.path())
            .unwrap()
            .lines()
            .filter_map(|line| line.split('"').nth(1).map(String::from))
            .collect()
    }

    /// The variables a service process needs to reach it.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT", self.endpoint.clone()),
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY.into()),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY.into()),
            ("AWS_DEFAULT_REGION", REGION.into()),
            ("AWS_ALLOW_HTTP", "true".into()),
        ]
    }

    /// A client of `bucket`, to look at what the service stored.
    pub fn client(&self, bucket: &str) -> AmazonS3 {
        AmazonS3Builder::new()
            .with_endpoint(&self.endpoint)
            .with_access_key_id(ACCESS_KEY)
            .with_secret_access_key(SECRET_KEY)
            .with_region(REGION)
            .with_allow_http(true)
            .with_bucket_name(bucket)
            .build()
            .unwrap()
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
