//! Resource and device limits of a run (and of a build), enforced with the host's
//! cgroup v1 controllers when it has them.
//!
//! `buildah run --memory` is ignored under chroot isolation and `prlimit` around
//! buildah fails, so the executor puts the whole `buildah run` process tree into
//! cgroups of its own before buildah starts (a shell writes its pid into each
//! `cgroup.procs`, then execs). The memory limit covers buildah and the work; the
//! cpu quota is the profile's vCPUs; the pids limit stops fork bombs; the devices
//! controller allows only the pseudo devices a program needs (null, zero, full,
//! random, urandom, tty, ptmx, pts), so the host's block devices stay closed even
//! though chroot isolation shows the host's `/dev`. A host without a controller runs
//! without that limit (logged once at start); the timeout and the namespaces apply
//! everywhere.

use domain::catalog::ResourceProfile;
use std::path::{Path, PathBuf};

/// The v1 hierarchies the executor uses.
const MEMORY_ROOT: &str = "/sys/fs/cgroup/memory";
const CPU_ROOT: &str = "/sys/fs/cgroup/cpu";
const PIDS_ROOT: &str = "/sys/fs/cgroup/pids";
const DEVICES_ROOT: &str = "/sys/fs/cgroup/devices";
/// Most processes and threads of one run (buildah's included).
pub const MAX_PIDS: u32 = 1024;
/// Most processes and threads of one build (compilers and package managers fork
/// more than a run's work does).
pub const BUILD_MAX_PIDS: u32 = 4096;
/// The character devices a run may use: null, zero, full, random, urandom, tty,
/// ptmx and the pseudo terminals.
const ALLOWED_DEVICES: &[&str] = &[
    "c 1:3 rwm",
    "c 1:5 rwm",
    "c 1:7 rwm",
    "c 1:8 rwm",
    "c 1:9 rwm",
    "c 5:0 rwm",
    "c 5:2 rwm",
    "c 136:* rwm",
];
/// The cpu period the quota is expressed in (microseconds).
const CPU_PERIOD_US: u64 = 100_000;

/// What the host offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostLimits {
    /// A writable v1 memory controller.
    pub memory: bool,
    /// A writable v1 cpu controller with CFS quotas.
    pub cpu: bool,
    /// A writable v1 pids controller.
    pub pids: bool,
    /// A writable v1 devices controller.
    pub devices: bool,
}

impl HostLimits {
    /// Detects the controllers. Each call probes with a cgroup of its own name: the
    /// executor and the builder of every process on the host probe at their start,
    /// and a probe another one removed under it read as a missing controller.
    pub fn detect() -> Self {
        let probe_name = format!("sandbox-probe-{}", uuid::Uuid::new_v4().simple());
        let writable = |root: &str, file: &str| {
            let probe = Path::new(root).join(&probe_name);
            let ok = std::fs::create_dir_all(&probe).is_ok() && probe.join(file).exists();
            let _ = std::fs::remove_dir(&probe);
            ok
        };
        Self {
            memory: writable(MEMORY_ROOT, "memory.limit_in_bytes"),
            cpu: writable(CPU_ROOT, "cpu.cfs_quota_us"),
            pids: writable(PIDS_ROOT, "pids.max"),
            devices: writable(DEVICES_ROOT, "devices.allow"),
        }
    }
}

/// The cgroups of one run.
#[derive(Debug)]
pub struct RunCgroups {
    dirs: Vec<PathBuf>,
    memory: Option<PathBuf>,
}

impl RunCgroups {
    /// Creates the run's cgroups with the profile's limits.
    pub fn create(
        host: HostLimits,
        run: uuid::Uuid,
        profile: ResourceProfile,
    ) -> std::io::Result<Self> {
        let spec = profile.spec();
        let name = run_cgroup(run);
        let mut cgroups = Self {
            dirs: Vec::new(),
            memory: None,
        };
        if host.memory {
            let dir = cgroups.add(MEMORY_ROOT, &name)?;
            let bytes = u64::from(spec.provider_memory_mib) << 20;
            std::fs::write(dir.join("memory.limit_in_bytes"), bytes.to_string())?;
            cgroups.memory = Some(dir);
        }
        if host.cpu {
            let dir = cgroups.add(CPU_ROOT, &name)?;
            std::fs::write(dir.join("cpu.cfs_period_us"), CPU_PERIOD_US.to_string())?;
            let quota = CPU_PERIOD_US * u64::from(spec.vcpu);
            std::fs::write(dir.join("cpu.cfs_quota_us"), quota.to_string())?;
        }
        cgroups.limit_pids_and_devices(host, &name, MAX_PIDS)?;
        Ok(cgroups)
    }

    /// Creates the cgroups of a build attempt: its `RUN` steps get a run's device
    /// list (no host disks behind chroot isolation's host `/dev`) and at most
    /// [`BUILD_MAX_PIDS`] processes; memory and cpu are not limited (no build
    /// profile names them).
    pub fn for_build(host: HostLimits, attempt: uuid::Uuid) -> std::io::Result<Self> {
        let name = build_cgroup(attempt);
        let mut cgroups = Self {
            dirs: Vec::new(),
            memory: None,
        };
        cgroups.limit_pids_and_devices(host, &name, BUILD_MAX_PIDS)?;
        Ok(cgroups)
    }

    /// Adds a cgroup of `name` under a hierarchy.
    fn add(&mut self, root: &str, name: &str) -> std::io::Result<PathBuf> {
        let dir = Path::new(root).join(name);
        std::fs::create_dir_all(&dir)?;
        self.dirs.push(dir.clone());
        Ok(dir)
    }

    /// The process limit and the device list.
    fn limit_pids_and_devices(
        &mut self,
        host: HostLimits,
        name: &str,
        pids: u32,
    ) -> std::io::Result<()> {
        if host.pids {
            let dir = self.add(PIDS_ROOT, name)?;
            std::fs::write(dir.join("pids.max"), pids.to_string())?;
        }
        if host.devices {
            let dir = self.add(DEVICES_ROOT, name)?;
            std::fs::write(dir.join("devices.deny"), "a")?;
            for device in ALLOWED_DEVICES {
                std::fs::write(dir.join("devices.allow"), device)?;
            }
        }
        Ok(())
    }

    /// The shell prefix that moves the shell into the cgroups before it execs the
    /// command: `sh -c '<prefix> exec "$@"' sh <command...>`.
    pub fn enter_script(&self) -> String {
        let mut script = String::new();
        for dir in &self.dirs {
            script.push_str(&format!("echo $$ > '{}/cgroup.procs' && ", dir.display()));
        }
        script.push_str("exec \"$@\"");
        script
    }

    /// Whether the kernel killed a process of the run for memory.
    pub fn oom_killed(&self) -> bool {
        let Some(dir) = &self.memory else {
            return false;
        };
        std::fs::read_to_string(dir.join("memory.oom_control"))
            .ok()
            .and_then(|text| {
                text.lines()
                    .find_map(|line| line.strip_prefix("oom_kill ")?.trim().parse::<u64>().ok())
            })
            .is_some_and(|kills| kills > 0)
    }
}

/// Kills whatever is left of a run that was executing on this host when its
/// server stopped (a crash leaves the run's process tree running with no timeout
/// watching it, and its secrets file in place): every process in the run's
/// cgroups, then the cgroups themselves. Nothing to do for a run that executed
/// elsewhere or on a host without the controllers.
pub async fn end_leftover_run(run: uuid::Uuid) {
    end_leftover(&run_cgroup(run)).await;
}

/// Kills whatever is left of a build attempt that was running on this host when
/// its server stopped (buildah and its steps, with no timeout watching them), as
/// [`end_leftover_run`] does for a run.
pub async fn end_leftover_build(attempt: uuid::Uuid) {
    end_leftover(&build_cgroup(attempt)).await;
}

/// The name of a run's cgroups (in every hierarchy).
fn run_cgroup(run: uuid::Uuid) -> String {
    format!("sandbox-run-{}", run.simple())
}

/// The name of a build attempt's cgroups.
fn build_cgroup(attempt: uuid::Uuid) -> String {
    format!("sandbox-build-{}", attempt.simple())
}

/// Kills every process in the cgroups called `name`, then removes them.
async fn end_leftover(name: &str) {
    let dirs: Vec<PathBuf> = [MEMORY_ROOT, CPU_ROOT, PIDS_ROOT, DEVICES_ROOT]
        .iter()
        .map(|root| Path::new(root).join(name))
        .filter(|dir| dir.is_dir())
        .collect();
    // Up to 5 s: SIGKILL is at once, but a loaded machine may take a while to
    // schedule the dying processes.
    for _ in 0..250 {
        let mut alive = false;
        for dir in &dirs {
            let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
            for pid in procs
                .lines()
                .filter_map(|line| line.trim().parse::<i32>().ok())
            {
                alive = true;
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
        if !alive {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    for dir in &dirs {
        let _ = std::fs::remove_dir(dir);
    }
}

impl Drop for RunCgroups {
    /// Removes the cgroups (empty once the run's processes are gone).
    fn drop(&mut self) {
        for dir in &self.dirs {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_controllers_the_command_runs_as_it_is() {
        let none = HostLimits {
            memory: false,
            cpu: false,
            pids: false,
            devices: false,
        };
        let cgroups =
            RunCgroups::create(none, uuid::Uuid::nil(), ResourceProfile::Standard).unwrap();
        assert_eq!(cgroups.enter_script(), "exec \"$@\"");
        assert!(!cgroups.oom_killed());
    }
}
