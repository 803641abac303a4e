//! A minimal OCI distribution registry (in memory, plain HTTP) that `buildah push`
//! pushes built images to: the API version check, blob existence, uploads
//! (`POST`, `PATCH`, `PUT ?digest=`) and manifests. It keeps the names of the
//! manifests it received.

use axum::body::Bytes;
use axum::http::{HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

#[derive(Default)]
struct Store {
    blobs: HashMap<String, Bytes>,
    uploads: HashMap<String, Vec<u8>>,
    manifests: HashMap<String, Bytes>,
}

/// The running registry.
pub struct Registry {
    /// `127.0.0.1:<port>`.
    pub host: String,
    store: Arc<Mutex<Store>>,
}

impl Registry {
    /// Serves on a free port.
    pub async fn start() -> Self {
        let store = Arc::new(Mutex::new(Store::default()));
        let shared = Arc::clone(&store);
        let app = axum::Router::new().fallback(move |method: Method, uri: Uri, body: Bytes| {
            let store = Arc::clone(&shared);
            async move { handle(&store, method, uri, body) }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let host = listener.local_addr().unwrap().to_string();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self { host, store }
    }

    /// `<repository>:<reference>` of every manifest pushed.
    pub fn manifests(&self) -> Vec<String> {
        self.store
            .lock()
            .unwrap()
            .manifests
            .keys()
            .cloned()
            .collect()
    }
}

fn with_headers(status: StatusCode, headers: &[(&str, String)], body: Bytes) -> Response {
    let mut response = (status, body).into_response();
    let map = response.headers_mut();
    map.insert(
        "docker-distribution-api-version",
        HeaderValue::from_static("registry/2.0"),
    );
    for (name, value) in headers {
        map.insert(
            header::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_str(value).unwrap(),
        );
    }
    response
}

fn handle(store: &Mutex<Store>, method: Method, uri: Uri, body: Bytes) -> Response {
    let mut store = store.lock().unwrap();
    let path = uri.path();
    let query = uri.query().unwrap_or("");
    let empty = Bytes::new();
    if path == "/v2/" || path == "/v2" {
        return with_headers(StatusCode::OK, &[], empty);
    }
    let Some(rest) = path.strip_prefix("/v2/") else {
        return with_headers(StatusCode::NOT_FOUND, &[], empty);
    };
    if let Some((name, upload)) = rest.split_once("/blobs/uploads/") {
        let id = if upload.is_empty() {
            let id = uuid::Uuid::new_v4().simple().to_string();
            store.uploads.insert(id.clone(), Vec::new());
            id
        } else {
            upload.to_string()
        };
        let Some(data) = store.uploads.get_mut(&id) else {
            return with_headers(StatusCode::NOT_FOUND, &[], empty);
        };
        data.extend_from_slice(&body);
        let location = format!("/v2/{name}/blobs/uploads/{id}");
        let range = format!("0-{}", data.len().saturating_sub(1));
        let digest = query
            .split('&')
            .find_map(|pair| pair.strip_prefix("digest="))
            .map(|d| d.replace("%3A", ":"));
        return match (method.as_str(), digest) {
            ("PUT", Some(digest)) => {
                let data = store.uploads.remove(&id).unwrap();
                store.blobs.insert(digest.clone(), Bytes::from(data));
                let location = format!("/v2/{name}/blobs/{digest}");
                with_headers(
                    StatusCode::CREATED,
                    &[("location", location), ("docker-content-digest", digest)],
                    empty,
                )
            }
            _ => with_headers(
                StatusCode::ACCEPTED,
                &[
                    ("location", location),
                    ("range", range),
                    ("docker-upload-uuid", id),
                ],
                empty,
            ),
        };
    }
    if let Some((_, digest)) = rest.split_once("/blobs/") {
        return match store.blobs.get(digest) {
            Some(blob) => {
                let length = blob.len().to_string();
                let body = if method == Method::HEAD {
                    empty
                } else {
                    blob.clone()
                };
                with_headers(
                    StatusCode::OK,
                    &[
                        ("content-length", length),
                        ("docker-content-digest", digest.into()),
                    ],
                    body,
                )
            }
            None => with_headers(StatusCode::NOT_FOUND, &[], empty),
        };
    }
    if let Some((name, reference)) = rest.split_once("/manifests/") {
        let key = format!("{name}:{reference}");
        if method == Method::PUT {
            let digest = format!(
                "sha256:{}",
                hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&body))
            );
            store.manifests.insert(key, body);
            return with_headers(
                StatusCode::CREATED,
                &[
                    ("location", format!("/v2/{name}/manifests/{reference}")),
                    ("docker-content-digest", digest),
                ],
                empty,
            );
        }
        return match store.manifests.get(&key) {
            Some(manifest) => with_headers(StatusCode::OK, &[], manifest.clone()),
            None => with_headers(StatusCode::NOT_FOUND, &[], empty),
        };
    }
    with_headers(StatusCode::NOT_FOUND, &[], empty)
}
