//! The Dockerfile rules against 56 real Dockerfiles from public repositories
//! (vendored under `tests/conformance/dockerfiles`, licenses beside them): every
//! file parses, and each is accepted or refused only for a rule the spec names (or
//! one the installed buildah needs).

use domain::environments::dockerfile::check;
use std::path::PathBuf;

/// The rules of spec section 2 ("Dockerfile rules") a refusal may name;
/// `private_base_image` refuses what its "any public base image" leaves out.
const SPEC_RULES: [&str; 10] = [
    "private_base_image",
    "dynamic_from",
    "syntax_directive",
    "add_network_source",
    "run_network_host",
    "run_mount_secret",
    "run_mount_ssh",
    "run_mount_unreviewed_stage",
    "copy_from_unreviewed_stage",
    "dockerfile_too_large",
];

/// Rules beyond the spec's: mount paths the installed buildah (1.28) resolves on
/// the host, which mounted the host's root into a build step (see `dockerfile.rs`).
const BUILDAH_RULES: [&str; 2] = ["run_mount_escape", "run_mount_from_source"];

/// Files whose verdict their origin makes plain.
const EXPECTED: [(&str, Result<(), &str>); 11] = [
    ("uv-docker-example.Dockerfile", Ok(())),
    ("python-3.13-slim-bookworm.Dockerfile", Ok(())),
    ("hello-world-build.Dockerfile", Ok(())),
    (
        "express-app-template-network-host.Dockerfile",
        Err("run_network_host"),
    ),
    ("jfrog-npm-secret.Dockerfile", Err("run_mount_secret")),
    ("links-ssh.Dockerfile", Err("run_mount_ssh")),
    (
        "lessons-reporter-bot-mount-from-image.Dockerfile",
        Err("run_mount_unreviewed_stage"),
    ),
    ("rbeval.Dockerfile", Err("copy_from_unreviewed_stage")),
    (
        "ubuntu-container-tini.Dockerfile",
        Err("add_network_source"),
    ),
    ("docling-serve.Dockerfile", Err("dynamic_from")),
    // `--mount=from=uv,source=/uv`: a source inside a stage.
    ("waifu-guesser.Dockerfile", Err("run_mount_from_source")),
];

#[test]
fn every_corpus_dockerfile_parses_and_is_refused_only_by_a_spec_rule() {
    let folder =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/dockerfiles/files");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    files.sort();
    assert_eq!(files.len(), 56);
    let mut wrong = Vec::new();
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let verdict = check(&std::fs::read(path).unwrap())
            .map(|_| ())
            .map_err(|r| r.rule);
        if let Err(rule) = verdict
            && !SPEC_RULES.contains(&rule)
            && !BUILDAH_RULES.contains(&rule)
        {
            wrong.push(format!("{name}: {rule}"));
        }
        if let Some((_, expected)) = EXPECTED.iter().find(|(file, _)| *file == name) {
            assert_eq!(verdict, *expected, "{name}");
        }
    }
    assert!(
        wrong.is_empty(),
        "refused for no spec rule:\n{}",
        wrong.join("\n")
    );
}
