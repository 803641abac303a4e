//! Running `buildah` (overlay or vfs storage, see `driver.rs`; chroot isolation):
//! image builds and the helpers the build verifier and the run executor share.
//!
//! Every long buildah process runs in its own process group (`capture.rs`), so a
//! timeout or a cancel kills the whole tree (buildah and whatever it started), not
//! just buildah.

mod capture;
mod driver;
mod strays;

pub use capture::{Captured, RunError, capture};
pub use driver::StorageDriver;

use crate::runtime::limits::RunCgroups;
use crate::runtime::network::{IsolatedNetwork, egress};
use crate::state::BuilderSettings;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::process::Command;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// What a build or a run runs inside.
#[derive(Clone, Copy)]
pub struct Confinement<'a> {
    /// Its cgroups.
    pub cgroups: &'a RunCgroups,
    /// Its network namespace (a build's with its proxy as the listener, a run's
    /// with its door, if any).
    pub network: &'a IsolatedNetwork,
}

/// The buildah program with this service's storage.
#[derive(Debug, Clone)]
pub struct Buildah {
    program: PathBuf,
    root: PathBuf,
    runroot: PathBuf,
    caches: PathBuf,
    driver: StorageDriver,
    /// The storage whose images this one reads, when it keeps only containers
    /// ([`Self::own_containers`]).
    images: Option<Box<Buildah>>,
}

impl Buildah {
    /// buildah with storage under the settings' directory.
    pub fn new(settings: &BuilderSettings) -> Self {
        Self {
            program: settings.buildah.clone(),
            root: settings.storage_dir.join("root"),
            runroot: settings.storage_dir.join("run"),
            caches: settings.storage_dir.join("cache"),
            driver: StorageDriver::of(&settings.storage_dir),
            images: None,
        }
    }

    /// buildah with storage of its own under `dir` for working containers of this
    /// storage's images, which it reads in place (overlay's additional image store,
    /// read-only): a container's writable layer is then on `dir`'s file system, and
    /// goes with it. None with vfs storage, whose containers copy their image whole.
    /// Measured here: ~10 ms more per run (the new storage's first mount checks).
    pub fn own_containers(&self, dir: &Path) -> Option<Self> {
        (self.driver == StorageDriver::Overlay).then(|| Self {
            program: self.program.clone(),
            root: dir.join("root"),
            runroot: dir.join("run"),
            caches: self.caches.clone(),
            driver: self.driver,
            images: Some(Box::new(self.clone())),
        })
    }

    /// Whether this storage keeps containers only ([`Self::own_containers`]).
    pub fn keeps_containers_only(&self) -> bool {
        self.images.is_some()
    }

    /// A buildah command with the global storage flags.
    pub fn command(&self) -> Command {
        let mut command = Command::new(&self.program);
        command
            .arg("--root")
            .arg(&self.root)
            .arg("--runroot")
            .arg(&self.runroot)
            .arg("--storage-driver")
            .arg(self.driver.name());
        if let Some(images) = &self.images {
            command
                .arg("--storage-opt")
                .arg(format!("overlay.imagestore={}", images.root.display()));
        }
        command
    }

    /// The directory holding every environment's build cache.
    pub fn caches(&self) -> &Path {
        &self.caches
    }

    /// `buildah bud` of a context directory into `image`. Chroot isolation gives
    /// `RUN` steps no namespaces of their own, so the whole build runs in the
    /// confinement: its cgroups (no host block devices, a process limit), its
    /// network namespace (loopback only, whose listener is the build's proxy to
    /// the public internet, [`egress`]: buildah finds it in its environment, the
    /// steps in the predefined proxy build arguments, which the image does not
    /// keep), and PID and IPC namespaces of its own with its own `/proc`: its
    /// steps see and signal only the build's processes, and all of them die with
    /// the build's first process on a timeout or a cancel.
    ///
    /// buildah keeps `RUN --mount=type=cache` directories (and its other
    /// temporary files) under `TMPDIR`, by default one `/var/tmp` for every build
    /// on the host. Each environment gets its own (`cache/<environment id>`): its
    /// versions' builds share their caches, and no other environment's build,
    /// of this company or another, can read them or plant files in them.
    pub async fn build(
        &self,
        environment: Uuid,
        confinement: Confinement<'_>,
        context: &Path,
        image: &str,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<Captured, RunError> {
        let cache = self.caches.join(environment.to_string());
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&cache)?;
        let mut command = self.through_proxy(confinement);
        command.env("TMPDIR", &cache).args([
            "bud",
            "--isolation",
            "chroot",
            "--layers=false",
            "--pull=never",
            "--format",
            "oci",
        ]);
        let proxy = confinement.network.listener_port().map(egress::proxy_env);
        for (name, value) in proxy.iter().flatten() {
            command.arg("--build-arg").arg(format!("{name}={value}"));
        }
        command
            .arg("-f")
            .arg(context.join("Dockerfile"))
            .args(["-t", image])
            .arg(context);
        let held = self.bud_lock().await?;
        let built = capture(command, timeout, cancel).await;
        drop(held);
        if !matches!(&built, Ok(captured) if captured.success()) {
            // A killed `bud` leaves its working container (`strays.rs`).
            if let Err(error) = self.remove_stray_containers().await {
                tracing::warn!(
                    error = format!("{error:#}"),
                    "leftover build containers were not removed"
                );
            }
        }
        built
    }

    /// Pulls a build's base image unless it is here already, in the build's
    /// confinement (its network's proxy is the only way out).
    pub async fn pull_base(
        &self,
        image: &str,
        confinement: Confinement<'_>,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<Captured, RunError> {
        let mut command = self.through_proxy(confinement);
        command.args(["pull", "--policy", "missing", "--quiet", image]);
        capture(command, timeout, cancel).await
    }

    /// The `ONBUILD` triggers an image carries (Docker-format images only), one
    /// instruction each.
    pub async fn onbuild_triggers(&self, image: &str) -> anyhow::Result<Vec<String>> {
        let format = "{{range .Docker.Config.OnBuild}}{{println .}}{{end}}";
        let listed = self
            .simple(&["inspect", "--type", "image", "--format", format, image])
            .await?;
        Ok(listed
            .lines()
            .filter(|line| !line.trim().is_empty())
            .map(str::to_string)
            .collect())
    }

    /// [`Self::confined`], with the proxy variables of the network's listener
    /// set (a build's: its proxy to the public internet).
    fn through_proxy(&self, confinement: Confinement<'_>) -> Command {
        let mut command = self.confined(confinement);
        if let Some(port) = confinement.network.listener_port() {
            command.envs(egress::proxy_env(port));
        }
        command
    }

    /// A buildah command (its subcommand still to add) in the confinement: its
    /// cgroups, its network namespace, and PID and IPC namespaces of its own with
    /// their own `/proc` (the builder's and the executor's work alike).
    pub fn confined(&self, confinement: Confinement<'_>) -> Command {
        let Confinement { cgroups, network } = confinement;
        let buildah = self.command();
        let buildah = buildah.as_std();
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(cgroups.enter_script())
            .arg("sh")
            .arg("nsenter")
            .arg(network.nsenter_arg())
            .args(["unshare", "--pid", "--fork", "--mount-proc", "--ipc"])
            .arg(buildah.get_program())
            .args(buildah.get_args());
        command
    }

    /// Runs a short buildah subcommand and returns its trimmed stdout.
    pub async fn simple(&self, args: &[&str]) -> anyhow::Result<String> {
        let output = self
            .command()
            .args(args)
            .stdin(Stdio::null())
            .output()
            .await?;
        if !output.status.success() {
            anyhow::bail!(
                "buildah {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&output.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
    }

    /// A working container of an image, called `name` (so that a server after a
    /// crash can find and remove it): a local image (`localhost/...`) is never
    /// pulled; one in a registry (`SANDBOX_REGISTRY`) is pulled when missing (by a
    /// storage of containers only: into the storage whose images it reads).
    pub async fn from_image(&self, image: &str, name: &str) -> anyhow::Result<String> {
        let pull = match &self.images {
            _ if image.starts_with("localhost/") => "--pull-never",
            Some(images) => {
                images
                    .simple(&["pull", "--policy", "missing", "--quiet", image])
                    .await?;
                "--pull-never"
            }
            None => "--pull=missing",
        };
        self.simple(&["from", pull, "--quiet", "--name", name, image])
            .await
    }

    /// Renames a local image to `target` (a registry reference) and pushes it
    /// there; the image stays in this storage under its new name only.
    pub async fn push(&self, image: &str, target: &str) -> anyhow::Result<()> {
        self.simple(&["tag", image, target]).await?;
        let destination = format!("docker://{target}");
        let pushed = self
            .simple(&["push", "--quiet", target, &destination])
            .await;
        // Untags the old name (the image keeps its new one), or drops the new
        // name after a failed push.
        let dropped = if pushed.is_ok() { image } else { target };
        let _ = self.simple(&["rmi", dropped]).await;
        pushed.map(|_| ())
    }

    /// Mounts a container's root file system and returns where.
    pub async fn mount(&self, container: &str) -> anyhow::Result<PathBuf> {
        Ok(PathBuf::from(self.simple(&["mount", container]).await?))
    }

    /// Removes a working container (`buildah rm` unmounts it first).
    pub async fn remove(&self, container: &str) -> anyhow::Result<()> {
        self.simple(&["rm", container]).await.map(|_| ())
    }

    /// Removes an image.
    pub async fn remove_image(&self, image: &str) -> anyhow::Result<()> {
        self.simple(&["rmi", "--force", image]).await.map(|_| ())
    }

    /// Whether the image is in this storage.
    pub async fn image_exists(&self, image: &str) -> bool {
        self.simple(&["inspect", "--type", "image", image])
            .await
            .is_ok()
    }
}
