//! `RUN --mount=...` options: the spec's rules, and the paths the installed buildah
//! would resolve on the host (see [`check_mount_paths`]).

use super::dockerfile::{DockerfileRejection, refuse, reviewed};

/// One `RUN --mount=...`: the spec's rules (no secret or ssh mount, no `from=` an
/// unreviewed stage), then the ones the installed buildah needs (see
/// [`check_mount_paths`]).
pub(super) fn check(
    value: &str,
    stages: &[Option<String>],
    env: &str,
) -> Result<(), DockerfileRejection> {
    let fields = mount_fields(value);
    let field = |key: &str| {
        fields
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| *v)
    };
    let whole = || format!("RUN --mount={value}");
    match field("type").map(str::to_ascii_lowercase).as_deref() {
        Some("secret") => return Err(refuse("run_mount_secret", whole())),
        Some("ssh") => return Err(refuse("run_mount_ssh", whole())),
        _ => {}
    }
    if let Some(from) = field("from")
        && !reviewed(stages, from)
    {
        return Err(refuse("run_mount_unreviewed_stage", whole()));
    }
    check_mount_paths(&field, env).map_err(|rule| {
        let hint = match rule {
            "run_mount_from_source" => {
                "a source inside a stage or image is not mounted; COPY --from=<stage> it instead"
            }
            _ => "a mount path that may leave its directory is not mounted",
        };
        refuse(rule, format!("{}: {hint}", whole()))
    })
}

/// buildah 1.28 (Debian 12's) resolves some mount paths on the host instead of
/// inside the build, and each of these mounted the host's root into a build step
/// (tried against it): a cache mount's `id` climbing out of the cache directory
/// (`id=../../..`, CVE-2024-9675); a `source` inside a stage or image (`from=`)
/// through a symbolic link the stage made (`ln -s / /r`, `source=/r`,
/// CVE-2024-1753); and `bind-propagation` options (CVE-2024-9407). Refused until a
/// buildah with the fixes builds: a mount from a stage takes the stage's root
/// (`from=x,target=/t`), whose links resolve inside the step.
fn check_mount_paths<'a>(
    field: &impl Fn(&str) -> Option<&'a str>,
    env: &str,
) -> Result<(), &'static str> {
    if field("bind-propagation").is_some() {
        return Err("run_mount_escape");
    }
    let cache = field("type").is_some_and(|t| t.eq_ignore_ascii_case("cache"));
    let paths = [field("id"), field("source"), field("src")];
    if cache
        && paths
            .into_iter()
            .flatten()
            .any(|path| climbs_out(path, env))
    {
        return Err("run_mount_escape");
    }
    if field("from").is_some() && (field("source").is_some() || field("src").is_some()) {
        return Err("run_mount_from_source");
    }
    Ok(())
}

/// Platform arguments buildah sets itself (an `ARG` may not give them a default).
const PLATFORM_ARGS: [&str; 8] = [
    "TARGETPLATFORM",
    "TARGETOS",
    "TARGETARCH",
    "TARGETVARIANT",
    "BUILDPLATFORM",
    "BUILDOS",
    "BUILDARCH",
    "BUILDVARIANT",
];

/// Whether a mount path may leave its directory: a `..` component, or a variable
/// other than a platform argument the Dockerfile's `ENV` lines (`env`) never set.
fn climbs_out(path: &str, env: &str) -> bool {
    if path.split('/').any(|part| part == "..") {
        return true;
    }
    let mut rest = path;
    while let Some(at) = rest.find('$') {
        rest = &rest[at + 1..];
        let name = match rest.strip_prefix('{') {
            Some(braced) => match braced.split_once('}') {
                Some((name, after)) => {
                    rest = after;
                    name
                }
                None => return true,
            },
            None => {
                let end = rest
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(rest.len());
                let (name, after) = rest.split_at(end);
                rest = after;
                name
            }
        };
        if !PLATFORM_ARGS.contains(&name) || env.contains(name) {
            return true;
        }
    }
    false
}

/// `type=cache,target=/x,from=builder` as key/value pairs.
fn mount_fields(value: &str) -> Vec<(&str, &str)> {
    value
        .split(',')
        .filter_map(|field| field.split_once('=').map(|(k, v)| (k.trim(), v.trim())))
        .collect()
}
