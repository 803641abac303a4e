//! A simulated cluster: an API server that keeps the Jobs, Secrets and the
//! NetworkPolicy the service creates, and a kubelet that runs a Job's pod once its
//! Secret exists, from the Job's own spec: the `stage` and `collect` scripts run on
//! this machine (with `/workspace` and `/run/sandbox` rewritten to directories of
//! the simulated pod, and `curl`/`tar` from the host), the `work` container runs in
//! the environment's image with `buildah run` and the pod's directories mounted where
//! the spec says. Not simulated: the NetworkPolicy, resource limits, the deadline.

use api::runtime::buildah::StorageDriver;
use axum::body::Bytes;
use axum::http::{Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The storage flags of the service's buildah (its data directory's storage).
#[derive(Clone)]
pub struct Storage {
    pub root: PathBuf,
    pub runroot: PathBuf,
    pub driver: StorageDriver,
}

#[derive(Default)]
struct Cluster {
    jobs: HashMap<String, Value>,
    secrets: HashMap<String, Value>,
    logs: HashMap<String, String>,
    policies: Vec<Value>,
    deleted: Vec<String>,
}

/// The running simulated cluster.
pub struct Simulated {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    state: Arc<Mutex<Cluster>>,
    _pods: tempfile::TempDir,
}

impl Simulated {
    /// Serves on a free port; pods run with the service's buildah storage.
    pub async fn start(storage: Storage) -> Self {
        let state = Arc::new(Mutex::new(Cluster::default()));
        let pods = tempfile::tempdir().unwrap();
        let shared = Arc::clone(&state);
        let dir = pods.path().to_path_buf();
        let app = axum::Router::new().fallback(move |method: Method, uri: Uri, body: Bytes| {
            let state = Arc::clone(&shared);
            let (dir, storage) = (dir.clone(), storage.clone());
            async move { api(&state, &dir, &storage, method, uri, body) }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self {
            url,
            state,
            _pods: pods,
        }
    }

    /// A kubeconfig naming this cluster, written to `path`.
    pub fn kubeconfig(&self, path: &Path) {
        let config = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: sim\n  cluster: {{server: \"{}\"}}\n\
             users:\n- name: sim\n  user: {{}}\ncontexts:\n- name: sim\n  context: {{cluster: sim, user: sim}}\n\
             current-context: sim\n",
            self.url
        );
        std::fs::write(path, config).unwrap();
    }

    /// The NetworkPolicies applied, the Jobs deleted, and the Jobs still there.
    pub fn seen(&self) -> (Vec<Value>, Vec<String>, Vec<Value>) {
        let state = self.state.lock().unwrap();
        let left = state
            .jobs
            .iter()
            .filter(|(name, _)| !state.deleted.contains(name))
            .map(|(_, job)| job.clone())
            .collect();
        (state.policies.clone(), state.deleted.clone(), left)
    }
}

fn status(code: u16, reason: &str) -> Response {
    let body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": reason, "reason": reason, "code": code});
    (StatusCode::from_u16(code).unwrap(), axum::Json(body)).into_response()
}

fn ok(code: StatusCode, body: Value) -> Response {
    (code, axum::Json(body)).into_response()
}

fn api(
    state: &Arc<Mutex<Cluster>>,
    pods: &Path,
    storage: &Storage,
    method: Method,
    uri: Uri,
    body: Bytes,
) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let path = uri.path();
    let query = uri.query().unwrap_or("");
    let mut cluster = state.lock().unwrap();
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    match (method.as_str(), segments.as_slice()) {
        ("PATCH", [.., "networkpolicies", _]) => {
            cluster.policies.push(body.clone());
            ok(StatusCode::OK, body)
        }
        ("POST", [.., "jobs"]) => {
            let name = body["metadata"]["name"].as_str().unwrap().to_string();
            if cluster.jobs.contains_key(&name) {
                return status(409, "AlreadyExists");
            }
            let mut job = body;
            job["metadata"]["uid"] = json!(uuid::Uuid::new_v4());
            job["status"] = json!({});
            cluster.jobs.insert(name, job.clone());
            ok(StatusCode::CREATED, job)
        }
        ("GET", [.., "jobs"]) => {
            let items: Vec<Value> = cluster
                .jobs
                .iter()
                .filter(|(name, _)| !cluster.deleted.contains(name))
                .map(|(_, job)| job.clone())
                .collect();
            ok(
                StatusCode::OK,
                json!({"apiVersion": "batch/v1", "kind": "JobList", "metadata": {}, "items": items}),
            )
        }
        ("GET", [.., "jobs", name]) => match cluster.jobs.get(*name) {
            Some(job) if !cluster.deleted.iter().any(|d| d == name) => {
                ok(StatusCode::OK, job.clone())
            }
            _ => status(404, "NotFound"),
        },
        ("DELETE", [.., "jobs", name]) => {
            if !cluster.jobs.contains_key(*name) || cluster.deleted.iter().any(|d| d == name) {
                return status(404, "NotFound");
            }
            cluster.deleted.push(name.to_string());
            ok(
                StatusCode::OK,
                json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}),
            )
        }
        ("POST", [.., "secrets"]) => {
            let name = body["metadata"]["name"].as_str().unwrap().to_string();
            let Some(job) = cluster.jobs.get(&name).cloned() else {
                return status(404, "NotFound");
            };
            cluster.secrets.insert(name.clone(), body.clone());
            let pod = pods.join(&name);
            let (state, storage, secret) = (Arc::clone(state), storage.clone(), body.clone());
            tokio::spawn(async move {
                let (log, succeeded) = run_pod(&job, &secret, &pod, &storage).await;
                let mut cluster = state.lock().unwrap();
                cluster.logs.insert(name.clone(), log);
                if let Some(job) = cluster.jobs.get_mut(&name) {
                    job["status"] = if succeeded {
                        json!({"succeeded": 1})
                    } else {
                        json!({"failed": 1, "conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]})
                    };
                }
            });
            ok(StatusCode::CREATED, body)
        }
        ("GET", [.., "pods"]) => {
            let run = query
                .split('&')
                .find_map(|pair| pair.strip_prefix("labelSelector=sandbox.run%2Fid%3D"))
                .unwrap_or_default();
            let items: Vec<Value> = cluster
                .jobs
                .iter()
                .filter(|(_, job)| job["metadata"]["labels"]["sandbox.run/id"] == run)
                .map(|(name, _)| json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": format!("{name}-pod")}, "spec": {"containers": []}}))
                .collect();
            ok(
                StatusCode::OK,
                json!({"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": items}),
            )
        }
        ("GET", [.., "pods", pod, "log"]) => {
            let job = pod.trim_end_matches("-pod");
            let log = cluster.logs.get(job).cloned().unwrap_or_default();
            (StatusCode::OK, [(header::CONTENT_TYPE, "text/plain")], log).into_response()
        }
        _ => status(404, "NotFound"),
    }
}

/// The value of each of a container's variables (literal or from the Secret).
fn variables(container: &Value, secret: &Value) -> Vec<(String, String)> {
    container["env"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|var| {
            let value = match var["value"].as_str() {
                Some(value) => value.to_string(),
                None => {
                    let key = var["valueFrom"]["secretKeyRef"]["key"].as_str().unwrap();
                    secret["stringData"][key].as_str().unwrap().to_string()
                }
            };
            (var["name"].as_str().unwrap().to_string(), value)
        })
        .collect()
}

/// Runs a tools container's script on this machine, in the pod's directories.
async fn tool(container: &Value, secret: &Value, workspace: &Path) -> (bool, String) {
    let script = container["command"][2]
        .as_str()
        .unwrap()
        .replace("/workspace", &workspace.display().to_string());
    let output = tokio::process::Command::new("sh")
        .args(["-c", &script])
        .envs(variables(container, secret))
        .output()
        .await
        .unwrap();
    let log = String::from_utf8_lossy(&output.stdout).to_string()
        + &String::from_utf8_lossy(&output.stderr);
    (output.status.success(), log)
}

fn buildah(storage: &Storage) -> tokio::process::Command {
    let mut command = tokio::process::Command::new("buildah");
    command
        .arg("--root")
        .arg(&storage.root)
        .arg("--runroot")
        .arg(&storage.runroot)
        .args(["--storage-driver", storage.driver.name()]);
    command
}

/// Runs the pod: `stage`, then `work`, then `collect`; answers the work's log and
/// whether every container succeeded.
async fn run_pod(job: &Value, secret: &Value, pod: &Path, storage: &Storage) -> (String, bool) {
    let workspace = pod.join("workspace");
    let secrets = pod.join("secrets");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::create_dir_all(&secrets).unwrap();
    let spec = &job["spec"]["template"]["spec"];
    let mounted = spec["volumes"][1]["secret"]["items"][0]["key"]
        .as_str()
        .unwrap();
    let values = secret["stringData"][mounted].as_str().unwrap();
    std::fs::write(secrets.join(mounted), values).unwrap();
    let (staged, log) = tool(&spec["initContainers"][0], secret, &workspace).await;
    if !staged {
        return (format!("stage failed: {log}"), false);
    }
    let work = &spec["initContainers"][1];
    let image = work["image"].as_str().unwrap();
    // Named: the service removes containers with `bud`'s default names as a
    // killed build's leftovers, and this pod shares its storage.
    let name = format!("pod-{}", uuid::Uuid::new_v4().simple());
    let from = buildah(storage)
        .args(["from", "--pull-never", "--quiet", "--name", &name, image])
        .output()
        .await
        .unwrap();
    assert!(
        from.status.success(),
        "{}",
        String::from_utf8_lossy(&from.stderr)
    );
    let container = String::from_utf8_lossy(&from.stdout).trim().to_string();
    let mut run = buildah(storage);
    run.args(["run", "--isolation", "chroot", "--workingdir", "/workspace"]);
    for mount in work["volumeMounts"].as_array().unwrap() {
        let source = if mount["name"] == "workspace" {
            &workspace
        } else {
            &secrets
        };
        let path = mount["mountPath"].as_str().unwrap();
        run.arg("-v").arg(format!("{}:{path}", source.display()));
    }
    for (name, value) in variables(work, secret) {
        run.arg("--env").arg(format!("{name}={value}"));
    }
    let command: Vec<&str> = work["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    let output = run
        .arg(&container)
        .arg("--")
        .args(&command)
        .output()
        .await
        .unwrap();
    let _ = buildah(storage).args(["rm", &container]).output().await;
    let log = String::from_utf8_lossy(&output.stdout).to_string()
        + &String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        return (log, false);
    }
    let (collected, collect_log) = tool(&spec["containers"][0], secret, &workspace).await;
    if !collected {
        return (format!("{log}collect failed: {collect_log}"), false);
    }
    (log, true)
}
