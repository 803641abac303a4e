//! The API server of the cluster runs execute in: create a run's Job and Secret,
//! watch the Job to its end, read the work's log, delete the Job (cancel and
//! cleanup), and list the Jobs still there (re-attachment after a restart).

use super::KubeSettings;
use super::manifest::{self, MANAGED_BY, POLICY_NAME, RUN_LABEL, RunSpec};
use anyhow::Context;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, Secret};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{DeleteParams, ListParams, LogParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use std::collections::BTreeMap;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// The field manager of the service's server-side applies.
const FIELD_MANAGER: &str = "sandbox-api";
/// The most log bytes read back from a run's `work` container.
const MAX_LOG_BYTES: i64 = 8 << 20;

/// How a run's Job ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobEnd {
    /// Every container finished: the results are in the object store.
    Succeeded,
    /// The Job's deadline (the run's timeout plus the transfer grace) passed.
    DeadlineExceeded,
    /// The work was killed for memory.
    OutOfMemory,
    /// The Job failed for another reason (the reason given).
    Failed(String),
    /// The Job is gone (deleted by someone else).
    Gone,
    /// The watch was cancelled (the Job may still run).
    Cancelled,
}

/// A connection to the cluster.
#[derive(Clone)]
pub struct Cluster {
    client: Client,
    settings: KubeSettings,
    poll: Duration,
}

fn not_found(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 404)
}

fn conflict(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 409)
}

impl Cluster {
    /// Connects with the in-cluster service account, or the kubeconfig.
    pub async fn connect(settings: KubeSettings) -> anyhow::Result<Self> {
        let client = Client::try_default()
            .await
            .context("no Kubernetes API: neither an in-cluster service account nor a kubeconfig")?;
        Ok(Self::with_client(client, settings, Duration::from_secs(2)))
    }

    /// Over a given client, polling Jobs every `poll`.
    pub fn with_client(client: Client, settings: KubeSettings, poll: Duration) -> Self {
        Self {
            client,
            settings,
            poll,
        }
    }

    /// The settings it runs with.
    pub fn settings(&self) -> &KubeSettings {
        &self.settings
    }

    fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        K::DynamicType: Default,
    {
        Api::namespaced(self.client.clone(), &self.settings.namespace)
    }

    /// Applies the namespace's NetworkPolicy for run pods (server-side apply: the
    /// same call creates it or brings it back to what it must be).
    pub async fn ensure_policy(&self) -> anyhow::Result<()> {
        let policy = manifest::network_policy(&self.settings);
        self.api::<NetworkPolicy>()
            .patch(
                POLICY_NAME,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(&policy),
            )
            .await
            .context("applying the runs' NetworkPolicy")?;
        Ok(())
    }

    /// Creates the run's Job, then its Secret owned by the Job (the pod waits for
    /// the Secret). A Job or Secret already there (a retry) is kept.
    pub async fn start(
        &self,
        spec: &RunSpec,
        data: BTreeMap<String, String>,
    ) -> anyhow::Result<()> {
        let name = manifest::object_name(spec.run_id);
        let jobs = self.api::<Job>();
        let job = match jobs
            .create(&PostParams::default(), &manifest::job(&self.settings, spec))
            .await
        {
            Ok(job) => job,
            Err(error) if conflict(&error) => jobs.get(&name).await?,
            Err(error) => return Err(error).context("creating the run's Job"),
        };
        let uid = job.metadata.uid.context("the created Job has no uid")?;
        let secret = manifest::secret(&self.settings, spec.run_id, &uid, data);
        match self
            .api::<Secret>()
            .create(&PostParams::default(), &secret)
            .await
        {
            Ok(_) => Ok(()),
            Err(error) if conflict(&error) => Ok(()),
            Err(error) => Err(error).context("creating the run's Secret"),
        }
    }

    /// Polls the run's Job until it ends, or until `cancel` fires (then the Job is
    /// left as it is: the caller deletes it for a cancel, keeps it at a shutdown).
    pub async fn watch(&self, run_id: Uuid, cancel: &CancellationToken) -> anyhow::Result<JobEnd> {
        let name = manifest::object_name(run_id);
        loop {
            let Some(job) = self.api::<Job>().get_opt(&name).await? else {
                return Ok(JobEnd::Gone);
            };
            if let Some(end) = self.ended(run_id, &job).await? {
                return Ok(end);
            }
            tokio::select! {
                _ = cancel.cancelled() => return Ok(JobEnd::Cancelled),
                _ = tokio::time::sleep(self.poll) => {}
            }
        }
    }

    async fn ended(&self, run_id: Uuid, job: &Job) -> anyhow::Result<Option<JobEnd>> {
        let Some(status) = &job.status else {
            return Ok(None);
        };
        if status.succeeded.unwrap_or(0) > 0 {
            return Ok(Some(JobEnd::Succeeded));
        }
        let failed = status
            .conditions
            .iter()
            .flatten()
            .find(|c| c.type_ == "Failed" && c.status == "True");
        let Some(failed) = failed else {
            return Ok(None);
        };
        let reason = failed.reason.clone().unwrap_or_default();
        if reason == "DeadlineExceeded" {
            return Ok(Some(JobEnd::DeadlineExceeded));
        }
        let oom = self.pod(run_id).await?.is_some_and(|pod| {
            pod.status
                .and_then(|s| s.init_container_statuses)
                .into_iter()
                .flatten()
                .filter(|c| c.name == "work")
                .filter_map(|c| c.state?.terminated)
                .any(|t| t.reason.as_deref() == Some("OOMKilled"))
        });
        Ok(Some(if oom {
            JobEnd::OutOfMemory
        } else {
            JobEnd::Failed(reason)
        }))
    }

    async fn pod(&self, run_id: Uuid) -> anyhow::Result<Option<Pod>> {
        let pods = self
            .api::<Pod>()
            .list(&ListParams::default().labels(&format!("{RUN_LABEL}={run_id}")))
            .await?;
        Ok(pods.items.into_iter().next())
    }

    /// What the `work` container printed (empty when its pod is gone).
    pub async fn log(&self, run_id: Uuid) -> anyhow::Result<Vec<u8>> {
        let Some(name) = self.pod(run_id).await?.and_then(|p| p.metadata.name) else {
            return Ok(Vec::new());
        };
        let params = LogParams {
            container: Some("work".into()),
            limit_bytes: Some(MAX_LOG_BYTES),
            ..Default::default()
        };
        match self.api::<Pod>().logs(&name, &params).await {
            Ok(log) => Ok(log.into_bytes()),
            Err(error) if not_found(&error) => Ok(Vec::new()),
            Err(error) => Err(error).context("reading the work's log"),
        }
    }

    /// Deletes the run's Job with its pod and Secret (a missing one is fine).
    pub async fn delete(&self, run_id: Uuid) -> anyhow::Result<()> {
        let name = manifest::object_name(run_id);
        match self
            .api::<Job>()
            .delete(&name, &DeleteParams::background())
            .await
        {
            Ok(_) => Ok(()),
            Err(error) if not_found(&error) => Ok(()),
            Err(error) => Err(error).context("deleting the run's Job"),
        }
    }

    /// The runs whose Jobs are in the namespace.
    pub async fn runs(&self) -> anyhow::Result<Vec<Uuid>> {
        let jobs = self
            .api::<Job>()
            .list(&ListParams::default().labels(&format!("{}={}", MANAGED_BY.0, MANAGED_BY.1)))
            .await?;
        Ok(jobs
            .items
            .iter()
            .filter_map(|job| job.metadata.labels.as_ref()?.get(RUN_LABEL)?.parse().ok())
            .collect())
    }
}
