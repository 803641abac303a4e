//! The object store: archives, inputs, outputs, logs, artifacts and reports.
//!
//! By default a local file system under the data directory (`object_store`'s
//! `LocalFileSystem`); with `SANDBOX_OBJECT_STORE=s3://bucket/prefix`, the same
//! crate's S3 store (any S3-compatible server, configured by the usual `AWS_*`
//! variables), so that nodes on several machines share one store. Bytes are
//! streamed in and out with a running SHA-256, never held whole in memory; large
//! writes are multipart uploads.

use anyhow::Context;
use bytes::Bytes;
use futures::{Stream, StreamExt, TryStreamExt};
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::local::LocalFileSystem;
use object_store::path::Path as StorePath;
use object_store::prefix::PrefixStore;
use object_store::signer::Signer;
use object_store::{ObjectStore, ObjectStoreExt, WriteMultipart};
use sha2::{Digest, Sha256};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::io::AsyncWriteExt;

/// Why streaming bytes in failed.
#[derive(Debug, thiserror::Error)]
pub enum PutError {
    /// More bytes arrived than allowed; nothing was kept.
    #[error("more than {limit} bytes")]
    TooLarge {
        /// The limit.
        limit: u64,
    },
    /// The client's body failed.
    #[error("the request body failed: {0}")]
    Body(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] anyhow::Error),
}

/// What was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// Bytes written.
    pub byte_size: u64,
    /// `sha256:<hex>`.
    pub digest: String,
}

/// A local store under `dir` (created if missing).
fn local(dir: &Path) -> anyhow::Result<Arc<dyn ObjectStore>> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let store = LocalFileSystem::new_with_prefix(dir)?.with_automatic_cleanup(true);
    Ok(Arc::new(store))
}

/// The bucket and the prefix of `s3://bucket/prefix`.
fn s3_location(location: &str) -> anyhow::Result<(&str, &str)> {
    let rest = location
        .strip_prefix("s3://")
        .with_context(|| format!("object store {location:?}: only s3://bucket/prefix is known"))?;
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    anyhow::ensure!(
        !bucket.is_empty(),
        "object store {location:?} names no bucket"
    );
    Ok((bucket, prefix))
}

/// The service's object store.
#[derive(Clone, Debug)]
pub struct Objects {
    store: Arc<dyn ObjectStore>,
    scratch: PathBuf,
    /// Signs short-lived URLs (S3 only), with the prefix every key is under.
    signer: Option<(Arc<AmazonS3>, String)>,
    /// The directory of a local store (`None` for S3).
    local_dir: Option<PathBuf>,
}

impl Objects {
    /// The store at `location` (`s3://bucket/prefix`), or a local one under `dir`
    /// when there is none; `scratch` (local, created if missing) holds spooled copies.
    pub fn open(location: Option<&str>, dir: &Path, scratch: &Path) -> anyhow::Result<Self> {
        let Some(location) = location else {
            let mut objects = Self::with(local(dir)?, None, scratch)?;
            objects.local_dir = Some(dir.to_path_buf());
            return Ok(objects);
        };
        let (bucket, prefix) = s3_location(location)?;
        let s3 = AmazonS3Builder::from_env()
            .with_bucket_name(bucket)
            .build()
            .with_context(|| format!("object store {location:?}"))?;
        Self::s3(s3, prefix, scratch)
    }

    /// Objects in `bucket` under `prefix` (empty for the whole bucket).
    pub fn s3(bucket: AmazonS3, prefix: &str, scratch: &Path) -> anyhow::Result<Self> {
        let bucket = Arc::new(bucket);
        let prefix = prefix.trim_matches('/').to_string();
        let store: Arc<dyn ObjectStore> = if prefix.is_empty() {
            bucket.clone()
        } else {
            Arc::new(PrefixStore::new(Arc::clone(&bucket), prefix.as_str()))
        };
        Self::with(store, Some((bucket, prefix)), scratch)
    }

    fn with(
        store: Arc<dyn ObjectStore>,
        signer: Option<(Arc<AmazonS3>, String)>,
        scratch: &Path,
    ) -> anyhow::Result<Self> {
        std::fs::create_dir_all(scratch)
            .with_context(|| format!("cannot create {}", scratch.display()))?;
        Ok(Self {
            store,
            scratch: scratch.to_path_buf(),
            signer,
            local_dir: None,
        })
    }

    /// A URL that lets its holder `method` (GET or PUT) the object at `key` for
    /// `ttl`, without credentials: how a run in a cluster moves its workspace and
    /// its results. Only an S3 store signs; a local store answers an error.
    pub async fn signed_url(
        &self,
        method: axum::http::Method,
        key: &str,
        ttl: std::time::Duration,
    ) -> anyhow::Result<String> {
        let (bucket, prefix) = self
            .signer
            .as_ref()
            .context("only an S3 object store (SANDBOX_OBJECT_STORE=s3://...) signs URLs")?;
        let path = if prefix.is_empty() {
            StorePath::from(key)
        } else {
            StorePath::from(format!("{prefix}/{key}"))
        };
        Ok(bucket.signed_url(method, &path, ttl).await?.to_string())
    }

    /// Writes bytes under a key that names their digest (a run's staged input):
    /// where a local store already holds exactly these bytes there, the file is
    /// only marked as written now instead of written again. Writing it again
    /// costs a new file and the old one's deletion, each submission of the same
    /// input; the new modification time is what the retention janitor reads to
    /// keep an input a submission is staging. An S3 store is written every time
    /// (one request either way).
    pub async fn put_content_addressed(&self, key: &str, bytes: Bytes) -> anyhow::Result<Written> {
        let digest = Sha256::digest(&bytes);
        let written = Written {
            byte_size: bytes.len() as u64,
            digest: format!("sha256:{}", hex::encode(digest)),
        };
        if let Some(dir) = &self.local_dir {
            let path = dir.join(key);
            let marked = tokio::task::spawn_blocking(move || mark_if_holding(&path, &digest));
            if let Ok(true) = marked.await? {
                return Ok(written);
            }
        }
        self.store.put(&StorePath::from(key), bytes.into()).await?;
        Ok(written)
    }

    /// Streams `body` to `key`, refusing (and removing) it past `limit` bytes.
    pub async fn put_stream<S, E>(
        &self,
        key: &str,
        mut body: S,
        limit: u64,
    ) -> Result<Written, PutError>
    where
        S: Stream<Item = Result<Bytes, E>> + Unpin,
        E: std::fmt::Display,
    {
        let path = StorePath::from(key);
        let upload = self
            .store
            .put_multipart(&path)
            .await
            .map_err(anyhow::Error::from)?;
        let mut writer = WriteMultipart::new(upload);
        let mut hasher = Sha256::new();
        let mut size = 0u64;
        while let Some(chunk) = body.next().await {
            let chunk = match chunk {
                Ok(chunk) => chunk,
                Err(e) => {
                    let _ = writer.abort().await;
                    return Err(PutError::Body(e.to_string()));
                }
            };
            size += chunk.len() as u64;
            if size > limit {
                let _ = writer.abort().await;
                return Err(PutError::TooLarge { limit });
            }
            hasher.update(&chunk);
            writer.put(chunk);
        }
        writer.finish().await.map_err(anyhow::Error::from)?;
        Ok(Written {
            byte_size: size,
            digest: format!("sha256:{}", hex::encode(hasher.finalize())),
        })
    }

    /// Streams a local file to `key`.
    pub async fn put_file(&self, key: &str, path: &Path) -> anyhow::Result<Written> {
        let file = tokio::fs::File::open(path).await?;
        let stream = tokio_util::io::ReaderStream::new(file);
        self.put_stream(key, stream, u64::MAX)
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))
    }

    /// Writes bytes held in memory.
    pub async fn put_bytes(&self, key: &str, bytes: Bytes) -> anyhow::Result<Written> {
        let digest = format!("sha256:{}", hex::encode(Sha256::digest(&bytes)));
        let byte_size = bytes.len() as u64;
        self.store.put(&StorePath::from(key), bytes.into()).await?;
        Ok(Written { byte_size, digest })
    }

    /// The object's bytes as a stream.
    pub async fn get_stream(
        &self,
        key: &str,
    ) -> anyhow::Result<impl Stream<Item = std::io::Result<Bytes>> + use<>> {
        self.stream_of(key, None).await
    }

    /// The object's bytes, or those of `range`, as a stream.
    async fn stream_of(
        &self,
        key: &str,
        range: Option<Range<u64>>,
    ) -> anyhow::Result<impl Stream<Item = std::io::Result<Bytes>> + use<>> {
        let options = object_store::GetOptions {
            range: range.map(object_store::GetRange::from),
            ..Default::default()
        };
        let result = self.store.get_opts(&StorePath::from(key), options).await?;
        Ok(result.into_stream().map_err(std::io::Error::other))
    }

    /// The object's bytes (or those of `range`, a non-empty slice of it) as a
    /// stream checked against what was recorded: each chunk is passed on once the
    /// next one has arrived, and the last one only when all the bytes are
    /// `byte_size` bytes of `digest`; otherwise the stream ends with an error
    /// instead. A response over it (even with its length declared) is cut short
    /// rather than delivered complete and wrong, and holds one chunk in memory at a
    /// time, whatever the object's size.
    pub async fn get_verified(
        &self,
        key: &str,
        range: Option<Range<u64>>,
        digest: &str,
        byte_size: u64,
    ) -> anyhow::Result<impl Stream<Item = std::io::Result<Bytes>> + use<>> {
        struct Check {
            hasher: Sha256,
            size: u64,
            held: Option<Bytes>,
            done: bool,
        }
        let inner = self.stream_of(key, range).await?;
        let expected = digest.to_string();
        let check = Check {
            hasher: Sha256::new(),
            size: 0,
            held: None,
            done: false,
        };
        Ok(futures::stream::unfold(
            (inner, check),
            move |(mut inner, mut check)| {
                let expected = expected.clone();
                async move {
                    while !check.done {
                        match inner.next().await {
                            Some(Ok(chunk)) => {
                                check.hasher.update(&chunk);
                                check.size += chunk.len() as u64;
                                if let Some(previous) = check.held.replace(chunk) {
                                    return Some((Ok(previous), (inner, check)));
                                }
                            }
                            Some(Err(e)) => {
                                check.done = true;
                                return Some((Err(e), (inner, check)));
                            }
                            None => {
                                check.done = true;
                                let got = format!(
                                    "sha256:{}",
                                    hex::encode(check.hasher.clone().finalize())
                                );
                                if got == expected && check.size == byte_size {
                                    return check
                                        .held
                                        .take()
                                        .map(|last| (Ok(last), (inner, check)));
                                }
                                tracing::error!(
                                    expected,
                                    got,
                                    size = check.size,
                                    byte_size,
                                    "stored object failed its digest check"
                                );
                                let e = std::io::Error::other(
                                    "the stored bytes do not match their digest",
                                );
                                return Some((Err(e), (inner, check)));
                            }
                        }
                    }
                    None
                }
            },
        ))
    }

    /// When the object was last written (`None` when it does not exist).
    pub async fn modified_at(
        &self,
        key: &str,
    ) -> anyhow::Result<Option<chrono::DateTime<chrono::Utc>>> {
        match self.store.head(&StorePath::from(key)).await {
            Ok(meta) => Ok(Some(meta.last_modified)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The object's size in bytes.
    pub async fn size(&self, key: &str) -> anyhow::Result<u64> {
        Ok(self.store.head(&StorePath::from(key)).await?.size)
    }

    /// The whole object in memory (for small objects: run inputs).
    pub async fn get_bytes(&self, key: &str) -> anyhow::Result<Bytes> {
        Ok(self.store.get(&StorePath::from(key)).await?.bytes().await?)
    }

    /// A byte range of the object. An empty range is empty bytes (object_store refuses it as invalid: the
    /// preview of an empty log read as storage being down).
    pub async fn get_range(&self, key: &str, range: Range<u64>) -> anyhow::Result<Bytes> {
        if range.is_empty() {
            return Ok(Bytes::new());
        }
        Ok(self.store.get_range(&StorePath::from(key), range).await?)
    }

    /// Copies an object to another key.
    pub async fn copy(&self, from: &str, to: &str) -> anyhow::Result<()> {
        Ok(self
            .store
            .copy(&StorePath::from(from), &StorePath::from(to))
            .await?)
    }

    /// Moves an object to another key, replacing what is there.
    pub async fn rename(&self, from: &str, to: &str) -> anyhow::Result<()> {
        Ok(self
            .store
            .rename(&StorePath::from(from), &StorePath::from(to))
            .await?)
    }

    /// Removes an object (a missing one is fine).
    pub async fn delete(&self, key: &str) -> anyhow::Result<()> {
        match self.store.delete(&StorePath::from(key)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Copies the object into a local file (for readers that need `Seek`), which is
    /// removed when the returned handle is dropped.
    pub async fn spool(&self, key: &str) -> anyhow::Result<tempfile::NamedTempFile> {
        let file = tempfile::NamedTempFile::new_in(&self.scratch)?;
        let mut writer = tokio::fs::File::create(file.path()).await?;
        let mut stream = self.get_stream(key).await?;
        while let Some(chunk) = stream.next().await {
            writer.write_all(&chunk?).await?;
        }
        writer.flush().await?;
        Ok(file)
    }
}

/// Sets the modification time of the file at `path` to now when it holds bytes of
/// `digest`; `false` when it holds others, or when it was deleted or replaced while
/// being read (the janitor may expire an input at any time).
fn mark_if_holding(path: &Path, digest: &[u8]) -> std::io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut std::io::BufReader::new(&file), &mut hasher)?;
    if hasher.finalize().as_slice() != digest {
        return Ok(false);
    }
    file.set_modified(std::time::SystemTime::now())?;
    Ok(std::fs::metadata(path)?.ino() == file.metadata()?.ino())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    fn store(dir: &Path) -> Objects {
        Objects::open(None, &dir.join("objects"), &dir.join("scratch")).unwrap()
    }

    #[tokio::test]
    async fn a_content_addressed_object_already_there_is_marked_written_not_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        let objects = store(dir.path());
        let key = "runs/inputs/c/abc.json";
        let first = objects
            .put_content_addressed(key, Bytes::from_static(b"{\"n\":1}"))
            .await
            .unwrap();
        let path = dir.path().join("objects").join(key);
        let inode = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&path).unwrap());
        let two_hours_ago = SystemTime::now() - Duration::from_secs(7200);
        std::fs::File::open(&path)
            .unwrap()
            .set_modified(two_hours_ago)
            .unwrap();

        let again = objects
            .put_content_addressed(key, Bytes::from_static(b"{\"n\":1}"))
            .await
            .unwrap();

        assert_eq!(again, first);
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(std::os::unix::fs::MetadataExt::ino(&meta), inode);
        let modified = objects.modified_at(key).await.unwrap().unwrap();
        assert!(modified > chrono::Utc::now() - chrono::Duration::minutes(1));
    }

    #[tokio::test]
    async fn a_content_addressed_object_holding_other_bytes_is_written_again() {
        let dir = tempfile::tempdir().unwrap();
        let objects = store(dir.path());
        let key = "runs/inputs/c/abc.json";
        objects
            .put_content_addressed(key, Bytes::from_static(b"{\"n\":1}"))
            .await
            .unwrap();
        std::fs::write(dir.path().join("objects").join(key), b"damaged").unwrap();

        objects
            .put_content_addressed(key, Bytes::from_static(b"{\"n\":1}"))
            .await
            .unwrap();

        assert_eq!(
            objects.get_bytes(key).await.unwrap(),
            Bytes::from_static(b"{\"n\":1}")
        );
    }
}
