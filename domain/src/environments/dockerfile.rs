//! Dockerfile rules at compose time (spec section 2, "Dockerfile rules").
//!
//! Any public base image and `scratch` are allowed. Refused: a dynamic FROM (the
//! image named through a variable), a FROM of an image that is not public (see
//! `base_image.rs`; a base image's `ONBUILD` triggers meet these rules too,
//! [`check_triggers`]), any `# syntax=` directive line, ADD from a network
//! source, `RUN --network=host`, `RUN --mount` of type secret or ssh or whose `from=`
//! names an unreviewed stage, `COPY --from` an unreviewed stage, and a Dockerfile
//! over 1 MiB. Beyond the spec, `RUN --mount` paths the installed buildah would
//! resolve on the host are refused (`run_mount_escape`, `run_mount_from_source`;
//! see `run_mounts.rs`). A stage is reviewed when this Dockerfile defines it before the
//! instruction that uses it (by name or index); anything else (an external image, a
//! later or unknown stage, a variable) would pull content these rules never saw.

use super::{base_image, run_mounts};
use parse_dockerfile::{Flag, Instruction, Source};

/// Largest Dockerfile accepted.
pub const MAX_DOCKERFILE_BYTES: usize = 1 << 20;

/// Why a Dockerfile was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Dockerfile refused ({rule}): {message}")]
pub struct DockerfileRejection {
    /// The rule, used as `error_detail`.
    pub rule: &'static str,
    /// What was found.
    pub message: String,
}

pub(super) fn refuse(rule: &'static str, message: impl Into<String>) -> DockerfileRejection {
    DockerfileRejection {
        rule,
        message: message.into(),
    }
}

/// Checks a Dockerfile against every rule; returns the base images it builds
/// on (each `FROM` image that is neither `scratch` nor an earlier stage).
pub fn check(bytes: &[u8]) -> Result<Vec<String>, DockerfileRejection> {
    if bytes.len() > MAX_DOCKERFILE_BYTES {
        return Err(refuse(
            "dockerfile_too_large",
            format!("{} bytes; at most {MAX_DOCKERFILE_BYTES}", bytes.len()),
        ));
    }
    let text = std::str::from_utf8(bytes)
        .map_err(|_| refuse("dockerfile_not_utf8", "the Dockerfile is not UTF-8"))?;
    for (number, line) in text.lines().enumerate() {
        if is_syntax_directive(line) {
            return Err(refuse(
                "syntax_directive",
                format!("line {} is a `# syntax=` directive", number + 1),
            ));
        }
    }
    let parseable = without_empty_exec_forms(text);
    let dockerfile = parse_dockerfile::parse(&parseable)
        .map_err(|e| refuse("dockerfile_unparsable", e.to_string()))?;
    let mut stages: Vec<Option<String>> = Vec::new();
    let mut base_images = Vec::new();
    // Every `ENV` line so far: a variable they set may not shape a mount path.
    let mut env = String::new();
    for instruction in &dockerfile.instructions {
        match instruction {
            Instruction::From(from) => {
                let image = from.image.value.as_ref();
                if image.contains('$') {
                    return Err(refuse(
                        "dynamic_from",
                        format!("FROM {image} names its image through a variable"),
                    ));
                }
                let names_stage = stages.iter().flatten().any(|stage| stage == image);
                if !names_stage && image != "scratch" && !base_images.iter().any(|b| b == image) {
                    base_images.push(image.to_string());
                }
                if !names_stage && base_image::is_private(image) {
                    return Err(refuse(
                        "private_base_image",
                        format!(
                            "FROM {image} names an image id, a platform image or a host-local \
                             registry, not a public base image"
                        ),
                    ));
                }
                stages.push(from.as_.as_ref().map(|(_, name)| name.value.to_string()));
            }
            Instruction::Add(add) => {
                for source in &add.src {
                    if let Source::Path(path) = source
                        && is_network_source(&path.value)
                    {
                        return Err(refuse("add_network_source", format!("ADD {}", path.value)));
                    }
                }
            }
            Instruction::Copy(copy) => {
                if let Some(from) = flag(&copy.options, "from")
                    && !reviewed(&stages, &from)
                {
                    return Err(refuse(
                        "copy_from_unreviewed_stage",
                        format!("COPY --from={from}"),
                    ));
                }
            }
            Instruction::Run(run) => check_run_flags(&run.options, &stages, &env)?,
            Instruction::Env(set) => {
                env.push_str(&set.arguments.value);
                env.push('\n');
            }
            Instruction::Onbuild(onbuild) => {
                if let Instruction::Run(run) = onbuild.instruction.as_ref() {
                    check_run_flags(&run.options, &stages, &env)?;
                }
            }
            _ => {}
        }
    }
    Ok(base_images)
}

/// Checks the `ONBUILD` triggers a base image carries by the same rules (they
/// run in the build as if written after its `FROM`): a public image could
/// otherwise bring `COPY --from=<local image id prefix>` into any build. Triggers
/// see no stage of the building Dockerfile, so a trigger naming one is refused.
pub fn check_triggers(triggers: &[String]) -> Result<(), DockerfileRejection> {
    let text = format!("FROM scratch\n{}\n", triggers.join("\n"));
    check(text.as_bytes()).map(|_| ())
}

/// The text with every `ENTRYPOINT []` and `CMD []` line emptied (line numbers
/// kept). Docker accepts an empty exec form (it clears the inherited value); the
/// parser does not, and no rule looks at either instruction.
fn without_empty_exec_forms(text: &str) -> std::borrow::Cow<'_, str> {
    let empty_exec_form = |line: &str| {
        let mut words = line.trim().splitn(2, char::is_whitespace);
        let instruction = words.next().unwrap_or_default();
        let arguments = words
            .next()
            .unwrap_or_default()
            .replace(char::is_whitespace, "");
        (instruction.eq_ignore_ascii_case("ENTRYPOINT") || instruction.eq_ignore_ascii_case("CMD"))
            && arguments == "[]"
    };
    if !text.lines().any(empty_exec_form) {
        return text.into();
    }
    let lines: Vec<&str> = text
        .lines()
        .map(|line| if empty_exec_form(line) { "" } else { line })
        .collect();
    lines.join("\n").into()
}

fn check_run_flags(
    options: &[Flag<'_>],
    stages: &[Option<String>],
    env: &str,
) -> Result<(), DockerfileRejection> {
    for option in options {
        let name = option.name.value.as_ref();
        let value = option
            .value
            .as_ref()
            .map(|v| v.value.as_ref())
            .unwrap_or("");
        if name == "network" && value.eq_ignore_ascii_case("host") {
            return Err(refuse("run_network_host", "RUN --network=host"));
        }
        if name == "mount" {
            run_mounts::check(value, stages, env)?;
        }
    }
    Ok(())
}

fn flag(options: &[Flag<'_>], name: &str) -> Option<String> {
    options.iter().find(|o| o.name.value == name).map(|o| {
        o.value
            .as_ref()
            .map(|v| v.value.to_string())
            .unwrap_or_default()
    })
}

/// Whether `reference` names a stage defined earlier (by `AS` name or index).
/// Names compare exactly, as buildah compares them: `COPY --from=abc` after `AS
/// ABC` is not that stage to buildah but an image (`abc`, an id prefix).
pub(super) fn reviewed(stages: &[Option<String>], reference: &str) -> bool {
    if reference.contains('$') {
        return false;
    }
    if let Ok(index) = reference.parse::<usize>() {
        return index < stages.len();
    }
    stages.iter().flatten().any(|name| name == reference)
}

fn is_network_source(source: &str) -> bool {
    let lower = source.to_ascii_lowercase();
    ["http://", "https://", "git://", "git@", "ssh://", "ftp://"]
        .iter()
        .any(|p| lower.starts_with(p))
}

/// `# syntax=...` (any spacing, any case of `syntax`).
fn is_syntax_directive(line: &str) -> bool {
    let Some(rest) = line.trim_start().strip_prefix('#') else {
        return false;
    };
    let rest = rest.trim_start();
    // By bytes: a comment's seventh byte may fall inside a multi-byte character.
    rest.len() >= 6
        && rest.as_bytes()[..6].eq_ignore_ascii_case(b"syntax")
        && rest.as_bytes()[6..].trim_ascii_start().starts_with(b"=")
}

#[cfg(test)]
mod tests {
    use super::check;

    fn rule(text: &str) -> Option<&'static str> {
        check(text.as_bytes()).err().map(|e| e.rule)
    }

    #[test]
    fn a_comment_of_multi_byte_characters_is_a_comment() {
        // Found by the fuzz target `dockerfiles_edited`: this used to panic.
        assert_eq!(rule("# 暴0露服务端口\nFROM scratch\n"), None);
    }

    #[test]
    fn public_images_and_scratch_are_allowed() {
        assert_eq!(rule("FROM scratch\nCOPY busybox /bin/busybox\n"), None);
        assert_eq!(
            rule("FROM debian:12-slim\nRUN apt-get update && \\\n    apt-get install -y curl\n"),
            None
        );
        assert_eq!(
            rule(
                "FROM alpine AS build\nRUN echo hi\nFROM scratch\nCOPY --from=build /x /x\nCOPY --from=0 /y /y\n"
            ),
            None
        );
        assert_eq!(
            rule("FROM alpine\nRUN --mount=type=cache,target=/root/.cache echo ok\n"),
            None
        );
        assert_eq!(rule("FROM alpine\nRUN <<EOF\necho heredoc\nEOF\n"), None);
        assert_eq!(
            rule("FROM python:3.12\nENTRYPOINT []\ncmd [ ]\nRUN --network=host x\n"),
            Some("run_network_host"),
            "an empty exec form clears the inherited value and is checked past"
        );
        assert_eq!(
            rule("FROM alpine\nRUN [\"/bin/sh\", \"-c\", \"echo json form\"]\n"),
            None
        );
        assert_eq!(
            rule("ARG BASE=alpine\nFROM alpine\nARG BASE\nRUN echo $BASE\n"),
            None
        );
    }

    #[test]
    fn a_dynamic_from_is_refused() {
        assert_eq!(rule("ARG BASE=alpine\nFROM $BASE\n"), Some("dynamic_from"));
        assert_eq!(
            rule("ARG TAG=3\nFROM alpine:${TAG}\n"),
            Some("dynamic_from")
        );
    }

    #[test]
    fn a_from_of_a_private_image_is_refused_unless_it_names_an_earlier_stage() {
        assert_eq!(
            rule("FROM localhost/sandbox-env/v:a\nRUN cat /secret\n"),
            Some("private_base_image")
        );
        assert_eq!(rule("FROM 3f2\n"), Some("private_base_image"));
        assert_eq!(
            rule("FROM alpine AS cafe\nFROM cafe\nRUN echo ok\n"),
            None,
            "`cafe` is the earlier stage, not an image id"
        );
        assert_eq!(
            rule("FROM alpine AS CAFE\nFROM cafe\n"),
            Some("private_base_image"),
            "buildah matches stage names exactly: `cafe` is an image id prefix"
        );
        assert_eq!(rule("FROM \"3f2\"\n"), Some("private_base_image"));
        assert_eq!(
            rule("FROM containers-storage:3f2\n"),
            Some("private_base_image")
        );
        assert_eq!(
            rule("FROM alpine AS ABC\nFROM scratch\nCOPY --from=abc /s /s\n"),
            Some("copy_from_unreviewed_stage")
        );
    }

    #[test]
    fn base_images_are_listed_once_without_stages_or_scratch() {
        assert_eq!(
            check(b"FROM alpine:3 AS a\nFROM a\nFROM scratch\nFROM debian\nFROM alpine:3\n")
                .unwrap(),
            ["alpine:3", "debian"]
        );
    }

    #[test]
    fn onbuild_triggers_are_checked_by_the_same_rules() {
        use super::check_triggers;
        assert_eq!(
            check_triggers(&["RUN make".into(), "COPY . /src".into()]),
            Ok(())
        );
        assert_eq!(
            check_triggers(&["COPY --from=3f2 / /loot".into()])
                .unwrap_err()
                .rule,
            "copy_from_unreviewed_stage"
        );
        assert_eq!(
            check_triggers(&["RUN --mount=type=bind,from=3f2,target=/x ls".into()])
                .unwrap_err()
                .rule,
            "run_mount_unreviewed_stage"
        );
    }

    #[test]
    fn syntax_directives_are_refused_anywhere() {
        assert_eq!(
            rule("# syntax=docker/dockerfile:1\nFROM alpine\n"),
            Some("syntax_directive")
        );
        assert_eq!(
            rule("FROM alpine\n#   Syntax = evil/frontend\n"),
            Some("syntax_directive")
        );
        assert_eq!(
            rule("FROM alpine\n# the syntax of this file is plain\n"),
            None
        );
    }

    #[test]
    fn add_from_the_network_is_refused() {
        assert_eq!(
            rule("FROM alpine\nADD https://example.com/x.tgz /x\n"),
            Some("add_network_source")
        );
        assert_eq!(
            rule("FROM alpine\nADD git@github.com:o/r.git /r\n"),
            Some("add_network_source")
        );
        assert_eq!(rule("FROM alpine\nADD local.tgz /x\n"), None);
    }

    #[test]
    fn run_network_host_and_secret_or_ssh_mounts_are_refused() {
        assert_eq!(
            rule("FROM alpine\nRUN --network=host wget x\n"),
            Some("run_network_host")
        );
        assert_eq!(
            rule("FROM alpine\nRUN --mount=type=secret,id=t cat /run/secrets/t\n"),
            Some("run_mount_secret")
        );
        assert_eq!(
            rule("FROM alpine\nRUN --mount=type=ssh git clone x\n"),
            Some("run_mount_ssh")
        );
        assert_eq!(rule("FROM alpine\nRUN --network=none echo ok\n"), None);
    }

    #[test]
    fn mount_paths_the_installed_buildah_resolves_on_the_host_are_refused() {
        let escape = Some("run_mount_escape");
        for line in [
            "RUN --mount=type=cache,id=../../../..,target=/h ls /h",
            "RUN --mount=type=cache,id=a/../../b,target=/h ls /h",
            "RUN --mount=type=cache,source=../..,target=/h ls /h",
            "RUN --mount=type=cache,id=$X,target=/h ls /h",
            "RUN --mount=type=cache,id=${TARGETOS:-..},target=/h ls /h",
            "RUN --mount=type=bind,target=/h,bind-propagation=rshared ls /h",
        ] {
            assert_eq!(rule(&format!("FROM alpine\n{line}\n")), escape, "{line}");
        }
        let set = "FROM alpine\nENV TARGETARCH=../..\nRUN --mount=type=cache,id=$TARGETARCH,target=/h ls\n";
        assert_eq!(rule(set), escape);
        let symlinked = "FROM alpine AS base\nRUN ln -s / /r\nFROM alpine\n\
                         RUN --mount=type=bind,from=base,source=/r,target=/h ls /h\n";
        assert_eq!(rule(symlinked), Some("run_mount_from_source"));
        for line in [
            "RUN --mount=type=cache,id=lint-cache-$TARGETPLATFORM,target=/c ls",
            "RUN --mount=type=cache,id=${TARGETARCH}/go,target=/c ls",
            "RUN --mount=type=cache,target=/root/.cache/uv ls",
            "RUN --mount=type=bind,source=uv.lock,target=uv.lock ls",
            "RUN --mount=type=bind,source=../../x,target=/x ls",
        ] {
            assert_eq!(rule(&format!("FROM alpine\n{line}\n")), None, "{line}");
        }
        let root = "FROM alpine AS base\nFROM alpine\nRUN --mount=from=base,target=/b ls /b\n";
        assert_eq!(rule(root), None);
    }

    #[test]
    fn unreviewed_stages_are_refused() {
        assert_eq!(
            rule("FROM alpine\nCOPY --from=nginx:latest /etc/nginx /x\n"),
            Some("copy_from_unreviewed_stage")
        );
        assert_eq!(
            rule("FROM alpine\nCOPY --from=later /x /x\nFROM alpine AS later\n"),
            Some("copy_from_unreviewed_stage")
        );
        assert_eq!(
            rule("FROM alpine\nCOPY --from=1 /x /x\n"),
            Some("copy_from_unreviewed_stage")
        );
        assert_eq!(
            rule("FROM alpine\nRUN --mount=type=bind,from=busybox,target=/b ls\n"),
            Some("run_mount_unreviewed_stage")
        );
        assert_eq!(
            rule(
                "FROM alpine AS tools\nFROM alpine\nRUN --mount=type=bind,from=tools,target=/t ls\n"
            ),
            None
        );
    }

    #[test]
    fn size_encoding_and_syntax_errors_are_refused() {
        let big = format!("FROM alpine\n#{}\n", "x".repeat(1 << 20));
        assert_eq!(rule(&big), Some("dockerfile_too_large"));
        assert_eq!(
            check(&[0xff, 0xfe, b'F']).unwrap_err().rule,
            "dockerfile_not_utf8"
        );
        assert_eq!(
            rule("FROM alpine\nNOTAKEYWORD x\n"),
            Some("dockerfile_unparsable")
        );
    }
}
