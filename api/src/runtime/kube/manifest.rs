//! The Kubernetes objects of one run, as data: the Job, the Secret it reads and
//! the namespace's NetworkPolicy. Golden files in `api/tests/kube/golden` hold what
//! they must be.
//!
//! The run's pod has three containers, one after the other: `stage` (init, the
//! tools image) fetches the workspace archive through a short-lived URL and
//! unpacks it into `/workspace`; `work` (init, the environment's image) runs the
//! task's fixed invocation with no service account token, no capabilities and a
//! read-only root filesystem (only `/workspace` is writable), records its exit
//! code and always exits 0 so that `collect` runs; `collect` (the tools image)
//! archives the output file, the artifacts and the exit code and puts them through
//! a second short-lived URL. The URLs and the secret values live in the run's
//! Secret, which only the containers that need them read.

use super::KubeSettings;
use domain::catalog::ResourceProfile;
use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Capabilities, Container, EmptyDirVolumeSource, EnvVar, EnvVarSource, KeyToPath, PodSpec,
    PodTemplateSpec, ResourceRequirements, Secret, SecretKeySelector, SecretVolumeSource,
    SecurityContext, Volume, VolumeMount,
};
use k8s_openapi::api::networking::v1::{
    IPBlock, NetworkPolicy, NetworkPolicyEgressRule, NetworkPolicyPeer, NetworkPolicySpec,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use std::collections::BTreeMap;
use uuid::Uuid;

/// Label on every object the service creates.
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "sandbox-api");
/// Label holding the run id.
pub const RUN_LABEL: &str = "sandbox.run/id";
/// Name of the namespace's NetworkPolicy.
pub const POLICY_NAME: &str = "sandbox-runs";
/// The Secret's keys.
pub const SECRETS_KEY: &str = "secrets.env";
/// The workspace archive's URL (read by `stage`).
pub const WORKSPACE_URL_KEY: &str = "workspace-url";
/// The results archive's URL (read by `collect`).
pub const RESULTS_URL_KEY: &str = "results-url";
/// Where `work` writes its exit code, inside the workspace.
pub const EXIT_FILE: &str = ".sandbox-exit";
/// Seconds the Job has beyond the run's timeout for staging and collecting.
pub const TRANSFER_GRACE_SECONDS: i64 = 120;
/// How long a finished Job is kept when the service did not delete it.
const KEEP_FINISHED_SECONDS: i32 = 3600;

/// Fetches and unpacks the workspace.
const STAGE: &str = r#"set -eu
cd /workspace
curl -fsS --retry 3 -o .sandbox-workspace.tar "$WORKSPACE_URL"
tar -xf .sandbox-workspace.tar
rm -f .sandbox-workspace.tar"#;

/// The fixed invocation of the local executor, with the secrets from the mounted
/// Secret; its exit code is recorded and the container always succeeds.
const WORK: &str = r#"( set -a && . /run/sandbox/secrets.env && set +a && . /workspace/startup.sh && . /workspace/driver.sh ); echo $? > /workspace/.sandbox-exit; exit 0"#;

/// Archives what the work left and puts it.
const COLLECT: &str = r#"set -eu
cd /workspace
set -- .sandbox-exit
[ -e output ] && set -- "$@" output
[ -d artifacts ] && set -- "$@" artifacts
tar -cf .sandbox-results.tar "$@"
curl -fsS --retry 3 -T .sandbox-results.tar "$RESULTS_URL""#;

/// What one run's Job is made of.
#[derive(Debug, Clone)]
pub struct RunSpec {
    /// The run.
    pub run_id: Uuid,
    /// The environment image, in the registry.
    pub image: String,
    /// The profile: CPU and memory requests and limits, workspace size.
    pub profile: ResourceProfile,
    /// The run's timeout.
    pub timeout_seconds: i64,
    /// The work's environment (the version's ordinary variables and the
    /// `SERVICE_*` paths).
    pub env: Vec<(String, String)>,
}

/// The name of a run's Job and Secret.
pub fn object_name(run_id: Uuid) -> String {
    format!("sandbox-run-{}", run_id.simple())
}

fn labels(run_id: Uuid) -> BTreeMap<String, String> {
    BTreeMap::from([
        (MANAGED_BY.0.to_string(), MANAGED_BY.1.to_string()),
        (RUN_LABEL.to_string(), run_id.to_string()),
    ])
}

fn quantities(cpu: String, memory: String) -> BTreeMap<String, Quantity> {
    BTreeMap::from([
        ("cpu".to_string(), Quantity(cpu)),
        ("memory".to_string(), Quantity(memory)),
    ])
}

/// No privilege escalation, no capabilities, a read-only root filesystem.
fn locked_down() -> SecurityContext {
    SecurityContext {
        allow_privilege_escalation: Some(false),
        capabilities: Some(Capabilities {
            drop: Some(vec!["ALL".into()]),
            ..Default::default()
        }),
        read_only_root_filesystem: Some(true),
        ..Default::default()
    }
}

fn mount(name: &str, path: &str, read_only: bool) -> VolumeMount {
    VolumeMount {
        name: name.into(),
        mount_path: path.into(),
        read_only: read_only.then_some(true),
        ..Default::default()
    }
}

fn from_secret(run_id: Uuid, variable: &str, key: &str) -> EnvVar {
    EnvVar {
        name: variable.into(),
        value_from: Some(EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name: object_name(run_id),
                key: key.into(),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A container of the tools image (`stage` or `collect`).
fn tool(
    settings: &KubeSettings,
    spec: &RunSpec,
    name: &str,
    script: &str,
    url: (&str, &str),
) -> Container {
    Container {
        name: name.into(),
        image: Some(settings.tools_image.clone()),
        command: Some(vec!["/bin/sh".into(), "-c".into(), script.into()]),
        env: Some(vec![from_secret(spec.run_id, url.0, url.1)]),
        volume_mounts: Some(vec![mount("workspace", "/workspace", false)]),
        resources: Some(ResourceRequirements {
            limits: Some(quantities("500m".into(), "256Mi".into())),
            requests: Some(quantities("100m".into(), "64Mi".into())),
            ..Default::default()
        }),
        security_context: Some(locked_down()),
        ..Default::default()
    }
}

/// The run's Job.
pub fn job(settings: &KubeSettings, spec: &RunSpec) -> Job {
    let name = object_name(spec.run_id);
    let sizes = spec.profile.spec();
    let limits = quantities(
        sizes.vcpu.to_string(),
        format!("{}Mi", sizes.customer_memory_mib),
    );
    let work = Container {
        name: "work".into(),
        image: Some(spec.image.clone()),
        command: Some(vec!["/bin/sh".into(), "-c".into(), WORK.into()]),
        working_dir: Some("/workspace".into()),
        env: Some(
            spec.env
                .iter()
                .map(|(name, value)| EnvVar {
                    name: name.clone(),
                    value: Some(value.clone()),
                    ..Default::default()
                })
                .collect(),
        ),
        volume_mounts: Some(vec![
            mount("workspace", "/workspace", false),
            mount("secrets", "/run/sandbox", true),
        ]),
        resources: Some(ResourceRequirements {
            limits: Some(limits.clone()),
            requests: Some(limits),
            ..Default::default()
        }),
        security_context: Some(locked_down()),
        ..Default::default()
    };
    let stage = tool(
        settings,
        spec,
        "stage",
        STAGE,
        ("WORKSPACE_URL", WORKSPACE_URL_KEY),
    );
    let collect = tool(
        settings,
        spec,
        "collect",
        COLLECT,
        ("RESULTS_URL", RESULTS_URL_KEY),
    );
    let volumes = vec![
        Volume {
            name: "workspace".into(),
            empty_dir: Some(EmptyDirVolumeSource {
                size_limit: Some(Quantity(format!("{}Mi", sizes.workspace_mib))),
                ..Default::default()
            }),
            ..Default::default()
        },
        Volume {
            name: "secrets".into(),
            secret: Some(SecretVolumeSource {
                secret_name: Some(name.clone()),
                items: Some(vec![KeyToPath {
                    key: SECRETS_KEY.into(),
                    path: SECRETS_KEY.into(),
                    ..Default::default()
                }]),
                default_mode: Some(0o444),
                ..Default::default()
            }),
            ..Default::default()
        },
    ];
    Job {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: Some(settings.namespace.clone()),
            labels: Some(labels(spec.run_id)),
            ..Default::default()
        },
        spec: Some(JobSpec {
            backoff_limit: Some(0),
            active_deadline_seconds: Some(spec.timeout_seconds.max(1) + TRANSFER_GRACE_SECONDS),
            ttl_seconds_after_finished: Some(KEEP_FINISHED_SECONDS),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels(spec.run_id)),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    restart_policy: Some("Never".into()),
                    automount_service_account_token: Some(false),
                    enable_service_links: Some(false),
                    init_containers: Some(vec![stage, work]),
                    containers: vec![collect],
                    volumes: Some(volumes),
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The run's Secret, owned by its Job (deleted with it): the secret values as the
/// invocation sources them, and the two URLs.
pub fn secret(
    settings: &KubeSettings,
    run_id: Uuid,
    owner_uid: &str,
    data: BTreeMap<String, String>,
) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(object_name(run_id)),
            namespace: Some(settings.namespace.clone()),
            labels: Some(labels(run_id)),
            owner_references: Some(vec![OwnerReference {
                api_version: "batch/v1".into(),
                kind: "Job".into(),
                name: object_name(run_id),
                uid: owner_uid.into(),
                block_owner_deletion: Some(true),
                controller: Some(true),
            }]),
            ..Default::default()
        },
        string_data: Some(data),
        type_: Some("Opaque".into()),
        ..Default::default()
    }
}

/// The namespace's policy for run pods: no ingress; egress only to the object
/// store's address blocks (what `stage` and `collect` reach), nothing else (no
/// DNS, no cluster services, no internet).
pub fn network_policy(settings: &KubeSettings) -> NetworkPolicy {
    let egress = settings
        .object_store_cidrs
        .iter()
        .map(|cidr| NetworkPolicyEgressRule {
            to: Some(vec![NetworkPolicyPeer {
                ip_block: Some(IPBlock {
                    cidr: cidr.clone(),
                    except: None,
                }),
                ..Default::default()
            }]),
            ports: None,
        })
        .collect();
    NetworkPolicy {
        metadata: ObjectMeta {
            name: Some(POLICY_NAME.into()),
            namespace: Some(settings.namespace.clone()),
            labels: Some(BTreeMap::from([(
                MANAGED_BY.0.to_string(),
                MANAGED_BY.1.to_string(),
            )])),
            ..Default::default()
        },
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(LabelSelector {
                match_labels: Some(BTreeMap::from([(
                    MANAGED_BY.0.to_string(),
                    MANAGED_BY.1.to_string(),
                )])),
                ..Default::default()
            }),
            policy_types: Some(vec!["Ingress".into(), "Egress".into()]),
            ingress: Some(Vec::new()),
            egress: Some(egress),
        }),
    }
}
