//! What one company's build can reach of another's and of this host: no other
//! company's image (by any name, nor through a base image's `ONBUILD`), no other
//! environment's build cache, no host-local address.

use super::{Caller, built_image, busybox_context, callers, tar_gz};
use crate::support::{Seed, TestApp};
use api::runtime::buildah::Buildah;
use serde_json::json;
use uuid::Uuid;

/// Globex's chief executive: the other company.
fn globex<'a>(app: &'a TestApp, seed: &Seed) -> Caller<'a> {
    Caller {
        app,
        token: seed.token("globex", "ceo"),
    }
}

/// One `buildah inspect` field of a local image.
async fn inspected(app: &TestApp, image: &str, field: &str) -> String {
    Buildah::new(&app.state.runtime.builder)
        .simple(&["inspect", "--type", "image", "--format", field, image])
        .await
        .unwrap()
}

/// Another company's built image sits in the same buildah storage; no way of
/// naming it in `FROM` (its name, short name, last components, id, id prefix,
/// quoted, through a transport) builds on it.
#[tokio::test]
async fn a_from_of_another_company_s_image_is_refused() {
    let app = TestApp::spawn().await;
    let (seed, boss, _, _) = callers(&app).await;
    let env = boss.environment("py").await;
    let (_, image) = built_image(&app, &boss, &env, "RUN echo acme-only > /secret\n").await;
    let id = inspected(&app, &image, "{{.FromImageID}}").await;
    let globex = globex(&app, &seed);
    let other = globex.environment("thief").await;
    for (i, from) in [
        image.clone(),
        image.trim_start_matches("localhost/").to_string(),
        format!("sha256:{id}"),
        id[..3].to_string(),
        format!("\"{}\"", &id[..3]),
        format!("containers-storage:{image}"),
        image.rsplit('/').next().unwrap().to_string(),
    ]
    .into_iter()
    .enumerate()
    {
        // At most 5 upload inits per company and minute: the last attempts are
        // acme's own, refused all the same.
        let (caller, env) = if i < 4 {
            (&globex, &other)
        } else {
            (&boss, &env)
        };
        let dockerfile = format!("FROM {from}\nRUN cat /secret\n");
        let (_, finished) = caller
            .build_context(env, tar_gz(&[("Dockerfile", dockerfile.as_bytes())]))
            .await;
        assert_eq!(
            finished["error_code"], "policy_reject",
            "FROM {from}: {finished}"
        );
        assert_eq!(
            finished["error_detail"], "private_base_image",
            "FROM {from}"
        );
    }
}

/// A public base image's `ONBUILD` triggers run in the build as if written after
/// its `FROM`; they are checked by the same rules. Measured with buildah 1.28,
/// a trigger `COPY --from=<image id>` read another company's image.
#[tokio::test]
async fn a_base_image_s_onbuild_triggers_are_checked() {
    let app = TestApp::spawn().await;
    let (seed, boss, _, _) = callers(&app).await;
    let env = boss.environment("py").await;
    let (_, image) = built_image(&app, &boss, &env, "RUN echo acme-only > /secret\n").await;
    let id = inspected(&app, &image, "{{.FromImageID}}").await;
    // A "public" image with such a trigger, already in storage (its pull finds it).
    let buildah = Buildah::new(&app.state.runtime.builder);
    let public = format!("docker.io/attacker/onbuild-{}:1", Uuid::new_v4().simple());
    let name = format!("onbuild-{}", Uuid::new_v4().simple());
    let container = buildah
        .simple(&["from", "--name", &name, "scratch"])
        .await
        .unwrap();
    let trigger = format!("COPY --from={id} /secret /loot");
    let configured = buildah
        .command()
        .env("BUILDAH_FORMAT", "docker")
        .args(["config", "--onbuild", &trigger, &container])
        .status()
        .await
        .unwrap();
    assert!(configured.success());
    buildah
        .simple(&[
            "commit", "--format", "docker", "--quiet", &container, &public,
        ])
        .await
        .unwrap();
    buildah.remove(&container).await.unwrap();
    assert_eq!(buildah.onbuild_triggers(&public).await.unwrap(), [trigger]);

    let globex = globex(&app, &seed);
    let other = globex.environment("heir").await;
    let dockerfile = format!(
        "FROM {public}\nCOPY busybox /bin/busybox\nRUN [\"/bin/busybox\", \"cat\", \"/loot\"]\n"
    );
    let busybox = std::fs::read("/bin/busybox").unwrap();
    let context = tar_gz(&[("Dockerfile", dockerfile.as_bytes()), ("busybox", &busybox)]);
    let (_, finished) = globex.build_context(&other, context).await;
    let _ = buildah.remove_image(&public).await;
    assert_eq!(
        (
            finished["error_code"].as_str(),
            finished["error_detail"].as_str()
        ),
        (Some("policy_reject"), Some("copy_from_unreviewed_stage")),
        "{finished}"
    );
}

/// `RUN --mount=type=cache` directories belong to one environment: its next
/// version finds what it left, another company's build with the same cache id
/// finds nothing, and archiving the environment lets the janitor remove them.
#[tokio::test]
async fn build_caches_are_kept_per_environment() {
    let app = TestApp::spawn().await;
    let (seed, boss, _, _) = callers(&app).await;
    let globex = globex(&app, &seed);
    let cached =
        |step: &str| busybox_context(&format!("RUN --mount=type=cache,target=/c {step}\n"), &[]);
    let planted = boss.environment("cached").await;
    let (_, first) = boss
        .build_context(&planted, cached("echo acme > /c/planted"))
        .await;
    assert_eq!(first["status"], "completed", "{first}");
    let other = globex.environment("neighbour").await;
    let (_, other_build) = globex
        .build_context(&other, cached("test ! -e /c/planted"))
        .await;
    assert_eq!(
        other_build["status"], "completed",
        "another company's build saw the file: {other_build}"
    );
    let (_, again) = boss
        .build_context(&planted, cached("grep -q acme /c/planted"))
        .await;
    assert_eq!(
        again["status"], "completed",
        "the environment's own cache was lost: {again}"
    );

    let cache = Buildah::new(&app.state.runtime.builder)
        .caches()
        .join(&planted);
    assert!(cache.exists());
    api::runtime::janitor::sweep(&app.state.runtime)
        .await
        .unwrap();
    assert!(cache.exists(), "an active environment keeps its cache");
    let (status, archived) = boss
        .post(&format!("/environments/{planted}/archive"), json!({}))
        .await;
    assert_eq!(status, 200, "{archived}");
    api::runtime::janitor::sweep(&app.state.runtime)
        .await
        .unwrap();
    assert!(!cache.exists(), "an archived environment's cache stays");
}

/// A build's steps reach the public internet through the build's proxy only:
/// this host's own addresses (the service here) and the metadata address are not
/// reachable directly (the build has no route) nor through the proxy (403), and
/// the proxy settings do not stay in the image.
#[tokio::test]
async fn build_steps_reach_no_host_local_address() {
    let app = TestApp::spawn().await;
    let (_, boss, _, _) = callers(&app).await;
    let service = format!("{}/health", app.base);
    // (busybox's `wget -T` crashes; an unreachable address fails at once here.)
    let step = format!(
        "RUN test \"$http_proxy\" = \"$HTTPS_PROXY\" && test -n \"$http_proxy\" \\\n\
         && ! env -u http_proxy -u HTTP_PROXY wget -q -O /dev/null {service} \\\n\
         && ! env -u http_proxy -u HTTP_PROXY wget -q -O /dev/null http://169.254.169.254/ \\\n\
         && wget -O /dev/null {service} 2>&1 | grep -q Forbidden \\\n\
         && wget -O /dev/null http://169.254.169.254/latest/ 2>&1 | grep -q Forbidden\n"
    );
    let env = boss.environment("fenced").await;
    let (_, image) = built_image(&app, &boss, &env, &step).await;
    let config = inspected(&app, &image, "{{.OCIv1.Config.Env}}").await;
    assert!(!config.to_lowercase().contains("proxy"), "{config}");
}
