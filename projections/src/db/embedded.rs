//! A private PostgreSQL cluster started from the system's binaries.
//!
//! When `DATABASE_URL` is unset the service initialises a cluster under
//! `$SANDBOX_DATA_DIR/postgres`, listening only on a Unix socket, and stops it on
//! shutdown. `initdb` and `postgres` refuse to run as root, so as root the cluster is
//! owned and run by the unprivileged `postgres` user.

use anyhow::{Context, bail};
use sha2::{Digest, Sha256};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use tokio::process::Command;

/// The longest Unix socket directory that still leaves room for `/.s.PGSQL.5432`.
const MAX_SOCKET_DIR: usize = 90;

/// An unprivileged account to run the cluster as.
#[derive(Debug, Clone, Copy)]
struct RunAs {
    uid: u32,
    gid: u32,
}

/// A cluster in a directory of its own.
#[derive(Debug)]
pub struct EmbeddedPostgres {
    bin_dir: PathBuf,
    cluster_dir: PathBuf,
    socket_dir: PathBuf,
    run_as: Option<RunAs>,
    started_here: bool,
}

impl EmbeddedPostgres {
    /// Plans a cluster for the given data directory: finds the binaries, decides the
    /// account and the directories (moving them somewhere reachable when the
    /// `postgres` account cannot traverse the data directory or the socket path would
    /// be too long).
    pub fn plan(data_dir: &Path) -> anyhow::Result<Self> {
        let bin_dir = find_bin_dir()?;
        let run_as = run_as()?;
        std::fs::create_dir_all(data_dir)
            .with_context(|| format!("cannot create the data directory {}", data_dir.display()))?;
        let data_dir = data_dir.canonicalize()?;
        let hash = hex::encode(&Sha256::digest(data_dir.as_os_str().as_encoded_bytes())[..8]);
        let mut cluster_dir = data_dir.join("postgres");
        if let Some(account) = run_as
            && !reachable_by(&data_dir, account)
        {
            cluster_dir = PathBuf::from("/var/lib/sandbox-api").join(&hash);
            tracing::warn!(
                data_dir = %data_dir.display(),
                cluster_dir = %cluster_dir.display(),
                "the postgres account cannot reach the data directory; the cluster lives elsewhere"
            );
        }
        let mut socket_dir = cluster_dir.join("run");
        if socket_dir.as_os_str().len() > MAX_SOCKET_DIR {
            socket_dir = PathBuf::from(format!("/tmp/sandbox-pg-{hash}"));
        }
        Ok(Self {
            bin_dir,
            cluster_dir,
            socket_dir,
            run_as,
            started_here: false,
        })
    }

    /// Initialises the cluster if needed and starts it unless it already runs.
    pub async fn start(&mut self) -> anyhow::Result<()> {
        for dir in [&self.cluster_dir, &self.socket_dir] {
            std::fs::create_dir_all(dir)?;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
            if let Some(account) = self.run_as {
                nix::unistd::chown(
                    dir.as_path(),
                    Some(account.uid.into()),
                    Some(account.gid.into()),
                )?;
            }
        }
        let data = self.cluster_dir.join("data");
        if !data.join("PG_VERSION").exists() {
            self.run(
                "initdb",
                &[
                    "-D".as_ref(),
                    data.as_os_str(),
                    "-U".as_ref(),
                    "postgres".as_ref(),
                    "--auth=trust".as_ref(),
                    "--no-locale".as_ref(),
                    "-E".as_ref(),
                    "UTF8".as_ref(),
                ],
            )
            .await
            .context("initdb failed")?;
        }
        if self.is_running().await {
            return Ok(());
        }
        let options = format!(
            "-k '{}' -c listen_addresses='' -c max_connections=300 -c fsync=on",
            self.socket_dir.display()
        );
        let log = self.cluster_dir.join("postgres.log");
        self.run(
            "pg_ctl",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-l".as_ref(),
                log.as_os_str(),
                "-o".as_ref(),
                options.as_ref(),
                "-w".as_ref(),
                "-t".as_ref(),
                "120".as_ref(),
                "start".as_ref(),
            ],
        )
        .await
        .with_context(|| format!("pg_ctl start failed; see {}", log.display()))?;
        self.started_here = true;
        Ok(())
    }

    /// Whether a postmaster serves this cluster.
    pub async fn is_running(&self) -> bool {
        let data = self.cluster_dir.join("data");
        self.run(
            "pg_ctl",
            &["-D".as_ref(), data.as_os_str(), "status".as_ref()],
        )
        .await
        .is_ok()
    }

    /// Stops the cluster if this process started it.
    pub async fn stop(&mut self) -> anyhow::Result<()> {
        if !self.started_here {
            return Ok(());
        }
        let data = self.cluster_dir.join("data");
        self.run(
            "pg_ctl",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-m".as_ref(),
                "fast".as_ref(),
                "-w".as_ref(),
                "stop".as_ref(),
            ],
        )
        .await?;
        self.started_here = false;
        Ok(())
    }

    /// Stops the cluster whoever started it (for clusters of a previous process).
    pub async fn stop_any(&mut self) -> anyhow::Result<()> {
        if self.is_running().await {
            self.started_here = true;
        }
        self.stop().await
    }

    /// The connection URL of a database in this cluster (Unix socket, trust auth).
    pub fn url(&self, database: &str) -> String {
        format!(
            "postgres://postgres@localhost/{database}?host={}",
            self.socket_dir.display()
        )
    }

    /// Creates the database unless it exists.
    pub async fn ensure_database(&self, database: &str) -> anyhow::Result<()> {
        let admin = super::connect(&self.url("postgres"), 1).await?;
        let exists: bool =
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
                .bind(database)
                .fetch_one(&admin)
                .await?;
        if !exists {
            sqlx::query(&format!(
                "CREATE DATABASE \"{}\"",
                database.replace('"', "")
            ))
            .execute(&admin)
            .await?;
        }
        admin.close().await;
        Ok(())
    }

    async fn run(&self, program: &str, args: &[&std::ffi::OsStr]) -> anyhow::Result<()> {
        let mut command = Command::new(self.bin_dir.join(program));
        command
            .args(args)
            .current_dir(&self.cluster_dir)
            .kill_on_drop(true);
        if let Some(account) = self.run_as {
            command.uid(account.uid).gid(account.gid);
        }
        let output = command
            .output()
            .await
            .with_context(|| format!("cannot run {program}"))?;
        if !output.status.success() {
            bail!(
                "{program} exited with {}: {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            );
        }
        Ok(())
    }
}

/// Finds `pg_ctl` and `initdb` on PATH or in Debian's versioned package folder.
fn find_bin_dir() -> anyhow::Result<PathBuf> {
    let on_path = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .unwrap_or_default();
    for dir in on_path {
        if dir.join("pg_ctl").is_file() && dir.join("initdb").is_file() {
            // Debian's /usr/bin wrappers are symlinks; the real folder holds `postgres` too.
            let real = dir.join("pg_ctl").canonicalize()?;
            return Ok(real.parent().map(Path::to_path_buf).unwrap_or(dir));
        }
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("pg_ctl").is_file().then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions
        .pop()
        .map(|(_, bin)| bin)
        .context("PostgreSQL server binaries (initdb, pg_ctl) were not found on PATH or under /usr/lib/postgresql; install the postgresql package or set DATABASE_URL")
}

/// As root, the `postgres` account; otherwise the current account.
fn run_as() -> anyhow::Result<Option<RunAs>> {
    if !nix::unistd::geteuid().is_root() {
        return Ok(None);
    }
    let user = nix::unistd::User::from_name("postgres")?.context(
        "running as root needs an unprivileged `postgres` account to own the embedded cluster",
    )?;
    Ok(Some(RunAs {
        uid: user.uid.as_raw(),
        gid: user.gid.as_raw(),
    }))
}

/// Whether the account can traverse every ancestor of `dir`.
fn reachable_by(dir: &Path, account: RunAs) -> bool {
    dir.ancestors().all(|ancestor| {
        let Ok(meta) = std::fs::metadata(ancestor) else {
            return false;
        };
        let mode = meta.mode();
        mode & 0o001 != 0
            || (meta.uid() == account.uid && mode & 0o100 != 0)
            || (meta.gid() == account.gid && mode & 0o010 != 0)
    })
}
