//! The Kubernetes executor without a cluster (issue 28): the objects of a run
//! against golden files (`golden/`, rewritten with `KUBE_GOLDEN_BLESS=1`), and the
//! client against recorded API exchanges served by a mock API server
//! (`exchanges/`): creating a run's Job and Secret, following it to success, a
//! deadline, an out-of-memory kill, a cancel, a Job that already exists, and the
//! listing a restarted worker re-attaches from.

mod mock;

use api::runtime::kube::KubeSettings;
use api::runtime::kube::cluster::{Cluster, JobEnd};
use api::runtime::kube::manifest::{self, RunSpec};
use domain::catalog::ResourceProfile;
use mock::Mock;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

const RUN: Uuid = Uuid::from_u128(0x00c0_ffee_0000_4000_8000_0000_0000_0001);

fn settings() -> KubeSettings {
    KubeSettings {
        namespace: "sandbox-runs".into(),
        tools_image: "docker.io/curlimages/curl:8.11.1".into(),
        object_store_cidrs: vec!["10.20.0.0/16".into(), "52.216.0.0/15".into()],
    }
}

fn spec() -> RunSpec {
    RunSpec {
        run_id: RUN,
        image: "registry.example:5000/sandbox-env/9f1c:0a1b".into(),
        profile: ResourceProfile::Performance,
        timeout_seconds: 300,
        env: vec![
            ("MODE".into(), "fast".into()),
            (
                "SERVICE_INPUTS_FILE".into(),
                "/workspace/inputs.json".into(),
            ),
            ("SERVICE_OUTPUT_FILE".into(), "/workspace/output".into()),
            (
                "SERVICE_ARTIFACTS_DIR".into(),
                "/workspace/artifacts".into(),
            ),
        ],
    }
}

fn secret_data() -> BTreeMap<String, String> {
    BTreeMap::from([
        (manifest::SECRETS_KEY.into(), "API_TOKEN='s3cr3t'\n".into()),
        (
            manifest::WORKSPACE_URL_KEY.into(),
            "https://objects.example/ws?sig=1".into(),
        ),
        (
            manifest::RESULTS_URL_KEY.into(),
            "https://objects.example/res?sig=2".into(),
        ),
    ])
}

/// Compares `value` with `golden/<name>.json` (or writes it when blessing).
fn golden(name: &str, value: &Value) {
    let path = format!(
        "{}/tests/kube/golden/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    if std::env::var_os("KUBE_GOLDEN_BLESS").is_some() {
        std::fs::write(&path, serde_json::to_string_pretty(value).unwrap() + "\n").unwrap();
        return;
    }
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let expected: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        value, &expected,
        "{name} differs from its golden file; if the change is meant, rerun with KUBE_GOLDEN_BLESS=1 and review the diff"
    );
}

#[test]
fn a_runs_objects_match_their_golden_files() {
    let job = serde_json::to_value(manifest::job(&settings(), &spec())).unwrap();
    golden("job", &job);
    let secret = manifest::secret(&settings(), RUN, "uid-of-the-job", secret_data());
    golden("secret", &serde_json::to_value(secret).unwrap());
    let policy = serde_json::to_value(manifest::network_policy(&settings())).unwrap();
    golden("network_policy", &policy);
}

#[test]
fn a_runs_pod_is_locked_down() {
    let job = serde_json::to_value(manifest::job(&settings(), &spec())).unwrap();
    assert_eq!(job["spec"]["activeDeadlineSeconds"], 300 + 120);
    assert_eq!(job["spec"]["backoffLimit"], 0);
    let pod = &job["spec"]["template"]["spec"];
    assert_eq!(pod["automountServiceAccountToken"], false);
    assert_eq!(pod["restartPolicy"], "Never");
    let work = &pod["initContainers"][1];
    assert_eq!(work["name"], "work");
    assert_eq!(work["image"], spec().image);
    // The performance profile: 2 vCPU, its customer memory, as requests and limits.
    let sizes = ResourceProfile::Performance.spec();
    let memory = format!("{}Mi", sizes.customer_memory_mib);
    assert_eq!(
        work["resources"]["limits"],
        json!({"cpu": "2", "memory": memory})
    );
    assert_eq!(work["resources"]["requests"], work["resources"]["limits"]);
    for container in [&pod["initContainers"][0], work, &pod["containers"][0]] {
        let security = &container["securityContext"];
        assert_eq!(security["readOnlyRootFilesystem"], true, "{container}");
        assert_eq!(security["allowPrivilegeEscalation"], false);
        assert_eq!(security["capabilities"]["drop"], json!(["ALL"]));
    }
    // Only /workspace is writable for the work; the secrets are a read-only mount.
    let mounts = work["volumeMounts"].as_array().unwrap();
    let writable: Vec<&Value> = mounts
        .iter()
        .filter(|m| m["readOnly"] != true)
        .map(|m| &m["mountPath"])
        .collect();
    assert_eq!(writable, [&json!("/workspace")]);
    // The URLs reach only the containers that move files; the work sees neither.
    let env = serde_json::to_string(&work["env"]).unwrap();
    assert!(!env.contains("URL"), "{env}");
    let policy = serde_json::to_value(manifest::network_policy(&settings())).unwrap();
    assert_eq!(policy["spec"]["ingress"], json!([]));
    let peers: Vec<&Value> = policy["spec"]["egress"]
        .as_array()
        .unwrap()
        .iter()
        .map(|rule| &rule["to"][0]["ipBlock"]["cidr"])
        .collect();
    assert_eq!(peers, [&json!("10.20.0.0/16"), &json!("52.216.0.0/15")]);
}

fn cluster(mock: &Mock) -> Cluster {
    Cluster::with_client(mock.client(), settings(), Duration::from_millis(5))
}

#[tokio::test]
async fn a_run_is_created_followed_to_success_and_removed() {
    let mock = Mock::start("success").await;
    let cluster = cluster(&mock);
    cluster.ensure_policy().await.unwrap();
    cluster.start(&spec(), secret_data()).await.unwrap();
    let end = cluster.watch(RUN, &CancellationToken::new()).await.unwrap();
    assert_eq!(end, JobEnd::Succeeded);
    let log = cluster.log(RUN).await.unwrap();
    assert_eq!(log, b"hello from the work\n");
    cluster.delete(RUN).await.unwrap();
    let seen = mock.finish();
    // What was sent is what the golden files hold; the Secret is owned by the Job.
    let policy = serde_json::to_value(manifest::network_policy(&settings())).unwrap();
    assert_eq!(seen[0], policy);
    let job = serde_json::to_value(manifest::job(&settings(), &spec())).unwrap();
    assert_eq!(seen[1], job);
    let owner = &seen[2]["metadata"]["ownerReferences"][0];
    assert_eq!(owner["uid"], "3f0d3a52-0d1e-4b4e-9d59-5a1f1f0e7c11");
    assert_eq!(owner["kind"], "Job");
    assert_eq!(seen[2]["stringData"], json!(secret_data()));
    assert_eq!(seen.last().unwrap()["propagationPolicy"], "Background");
}

#[tokio::test]
async fn a_deadline_and_an_out_of_memory_kill_are_told_apart() {
    let mock = Mock::start("deadline").await;
    let end = cluster(&mock)
        .watch(RUN, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(end, JobEnd::DeadlineExceeded);
    mock.finish();
    let mock = Mock::start("out_of_memory").await;
    let end = cluster(&mock)
        .watch(RUN, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(end, JobEnd::OutOfMemory);
    mock.finish();
}

#[tokio::test]
async fn a_cancel_stops_the_watch_and_the_job_is_deleted() {
    let mock = Mock::start("cancel").await;
    let cluster = cluster(&mock);
    let cancel = CancellationToken::new();
    cancel.cancel();
    assert_eq!(
        cluster.watch(RUN, &cancel).await.unwrap(),
        JobEnd::Cancelled
    );
    cluster.delete(RUN).await.unwrap();
    // A Job already gone is deleted all the same.
    cluster.delete(RUN).await.unwrap();
    mock.finish();
}

#[tokio::test]
async fn a_retried_start_keeps_the_job_and_secret_already_there() {
    let mock = Mock::start("retry").await;
    cluster(&mock).start(&spec(), secret_data()).await.unwrap();
    let seen = mock.finish();
    let owner = &seen[2]["metadata"]["ownerReferences"][0];
    assert_eq!(owner["uid"], "3f0d3a52-0d1e-4b4e-9d59-5a1f1f0e7c11");
}

#[tokio::test]
async fn a_restarted_worker_finds_the_runs_whose_jobs_remain() {
    let mock = Mock::start("reattach").await;
    let cluster = cluster(&mock);
    let runs = cluster.runs().await.unwrap();
    let other = Uuid::from_u128(0x00c0_ffee_0000_4000_8000_0000_0000_0002);
    assert_eq!(runs, [RUN, other]);
    // A Job deleted outside the service ends the watch.
    assert_eq!(
        cluster.watch(RUN, &CancellationToken::new()).await.unwrap(),
        JobEnd::Gone
    );
    mock.finish();
}
