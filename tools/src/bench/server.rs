//! An in-process server on a scratch database for the HTTP benchmarks, with one
//! company and its manager.

use super::raw::Scratch;
use api::admin::directory::{Applier, DirectoryFile};
use api::admin::operator_metadata;
use api::state::AppState;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// An in-process server and a manager's token.
pub struct Server {
    /// Base URL plus the prefix of the routes called.
    pub base: String,
    /// The manager's JWT.
    pub token: String,
    /// The server's state.
    pub state: AppState,
    /// The company.
    pub company_id: Uuid,
    /// The manager.
    pub user_id: Uuid,
    /// The company's one room.
    pub room_id: Uuid,
    /// A token of `reader`, a company user who manages nothing (role 1).
    pub reader_token: String,
    /// The reader's id.
    pub reader_id: Uuid,
    /// Stops the server.
    pub cancel: CancellationToken,
    /// Its data directory.
    pub data: std::path::PathBuf,
}

/// Starts the server on the scratch database with one company manager; `call`
/// paths are relative to `prefix`.
pub async fn start(scratch: &Scratch, prefix: &str) -> anyhow::Result<Server> {
    let data = std::env::temp_dir().join(format!("sandbox-bench-{}", Uuid::new_v4()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let config = super::http::bench_config(scratch, listener.local_addr()?, data.clone());
    let cancel = CancellationToken::new();
    let started = AppState::start(&config, scratch.pool.clone(), cancel.clone()).await?;
    let state = started.state.clone();
    let server_cancel = cancel.clone();
    tokio::spawn(async move {
        let app = api::server::app(started.state);
        let stopped = async move { server_cancel.cancelled().await };
        let _ = api::server::serve_router(listener, app, stopped).await;
    });
    let file: DirectoryFile =
        serde_json::from_value(json!({"companies": [{"ref": "bench", "name": "bench",
        "chatrooms": [{"ref": "room", "name": "room"}],
        "users": [{"ref": "m", "username": "m", "role": 3},
                  {"ref": "reader", "username": "reader", "role": 1}]}]}))?;
    let applied = Applier {
        bus: &state.bus,
        jwt: &state.jwt,
        token_ttl: chrono::Duration::hours(2),
        metadata: operator_metadata("bench"),
    }
    .apply(&file)
    .await?;
    let company = &applied.companies["bench"];
    Ok(Server {
        base: format!("{}{prefix}", config.base_url()),
        token: company.users["m"].token.clone(),
        company_id: company.id,
        user_id: company.users["m"].id,
        room_id: company.chatrooms["room"],
        reader_token: company.users["reader"].token.clone(),
        reader_id: company.users["reader"].id,
        state,
        cancel,
        data,
    })
}

impl Server {
    /// Calls a route and returns its JSON body, failing on an error status.
    pub async fn call(
        &self,
        client: &reqwest::Client,
        method: reqwest::Method,
        path: &str,
        body: Value,
    ) -> anyhow::Result<Value> {
        let response = client
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .json(&body)
            .send()
            .await?;
        let status = response.status();
        let body: Value = response.json().await?;
        anyhow::ensure!(status.is_success(), "{path} answered {status}: {body}");
        Ok(body)
    }
}

/// Runs `measure` against a server on a scratch database next to the target, then
/// stops the server and drops the database whatever the outcome.
pub async fn on_scratch_server<T>(
    target_url: &str,
    prefix: &str,
    measure: impl for<'a> FnOnce(&'a Server) -> BoxFuture<'a, anyhow::Result<T>>,
) -> anyhow::Result<T> {
    let scratch = Scratch::create(target_url).await?;
    let server = start(&scratch, prefix).await;
    let result = match &server {
        Ok(server) => measure(server).await,
        Err(_) => Err(anyhow::anyhow!("the server did not start")),
    };
    if let Ok(server) = server {
        server.cancel.cancel();
        let _ = std::fs::remove_dir_all(&server.data);
    }
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    scratch.drop_database().await?;
    result
}

/// Runs `measure` against an in-process server with its workers running, on a
/// scratch database beside the target; stops the workers and drops the scratch
/// database afterwards, whatever `measure` answered.
pub async fn with_workers<T>(
    target_url: &str,
    measure: impl AsyncFnOnce(&Server, &Scratch) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let scratch = Scratch::create(target_url).await?;
    let server = start(&scratch, "/private/module/sandbox").await;
    let result = match &server {
        Ok(server) => {
            let result = match api::runtime::start(&server.state.runtime).await {
                Ok(()) => measure(server, &scratch).await,
                Err(error) => Err(error),
            };
            server.cancel.cancel();
            server.state.runtime.stopped().await;
            result
        }
        Err(_) => Err(anyhow::anyhow!("the server did not start")),
    };
    if let Ok(server) = server {
        let _ = std::fs::remove_dir_all(&server.data);
    }
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    scratch.drop_database().await?;
    result
}
