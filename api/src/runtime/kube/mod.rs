//! The Kubernetes executor's parts: each run is a Job in one namespace of a cluster
//! (`docs/deploy-kubernetes.md`). [`manifest`] builds the objects as data,
//! [`cluster`] talks to the API server, [`transfer`] packs the workspace a run
//! starts from and unpacks the results it leaves; the executor
//! (`runtime/executor/in_cluster.rs`) puts them together.

pub mod cluster;
pub mod manifest;
pub mod transfer;

/// How runs execute in a cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeSettings {
    /// The namespace runs' Jobs, Secrets and the NetworkPolicy live in.
    pub namespace: String,
    /// The image of the `stage` and `collect` containers (a shell, `tar`, `curl`).
    pub tools_image: String,
    /// The object store's address blocks: the only egress a run's pod has.
    pub object_store_cidrs: Vec<String>,
}
