//! Host programs the runtime starts by name (`ip`, `mkfs.ext4`, `mount`), found on
//! the `PATH` or in the sbin directories a service's `PATH` may lack.

use std::path::PathBuf;

/// Where `name` is: the first `PATH` entry or sbin directory holding it, else the
/// bare name (so starting it fails with "not found" naming the program).
pub fn sbin(name: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/sbin".into()])
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| name.into())
}
