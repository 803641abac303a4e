//! Assembling the router and serving it.

use crate::auth::{authenticate, restricted::sandbox_gate};
use crate::config::{Config, LogFormat};
use crate::middleware::body_limit::{self, DEFAULT_LIMIT};
use crate::middleware::kill_switch::kill_switch;
use crate::middleware::observe::record_metrics;
use crate::openapi::ApiDoc;
use crate::routes::{self, not_found, sandbox::PREFIX};
use crate::state::AppState;
use anyhow::Context as _;
use axum::Router;
use axum::http::Request;
use axum::http::header::CONTENT_TYPE;
use axum::middleware::{from_fn, from_fn_with_state};
use axum::routing::get;
use bytes::Bytes;
use projections::db::{self, embedded::EmbeddedPostgres};
use tokio_util::sync::CancellationToken;
use tower::ServiceBuilder;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;

/// Every route with its layers, and the OpenAPI document at `/openapi.json`.
pub fn app(state: AppState) -> Router {
    let (router, mut openapi) = api_router(&state).split_for_parts();
    crate::openapi::refusals::add(&mut openapi);
    crate::openapi::path_parameters::declare_all(&mut openapi);
    crate::openapi::conventions::apply(&mut openapi);
    let mut document = serde_json::to_value(&openapi).expect("the document serializes");
    crate::openapi::links::add(&mut document);
    crate::routes::tables::iac::document::declare_kinds(&mut document);
    // Serialized once: the router (and every handler with what it captured) is
    // cloned for each connection, and a captured document was deep-copied each
    // time, some milliseconds of CPU per connection accepted one after another.
    let document = Bytes::from(serde_json::to_vec(&document).expect("the document serializes"));
    let router = router
        .route(
            "/openapi.json",
            get(move || std::future::ready(([(CONTENT_TYPE, "application/json")], document))),
        )
        .merge(mcp_router(&state));
    traced(router)
}

/// Serves `router` on `listener` until `shutdown` completes, then lets the requests
/// in flight finish.
///
/// The router is served as a make-service, which turns its routes into services
/// once: served as itself, axum would do that again for every connection it
/// accepts (~0.6 ms of CPU per connection here, in the accept loop).
pub async fn serve_router(
    listener: tokio::net::TcpListener,
    router: Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router.into_make_service())
        .with_graceful_shutdown(shutdown)
        .await
}

/// The routes of a worker node (`--role worker`): health and metrics, and the
/// callback routes its runs' write-back doors relay to (`docs/scaling.md`).
pub fn worker_app(state: AppState) -> Router {
    let (router, _) = OpenApiRouter::new()
        .merge(routes::health::router())
        .merge(routes::tables::callback::router())
        .route_layer(from_fn(record_metrics))
        .with_state(state)
        .split_for_parts();
    traced(router)
}

/// The fallback and the request id and tracing layers every node's router has.
fn traced(router: Router) -> Router {
    router.fallback(not_found).layer(
        ServiceBuilder::new()
            .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
            .layer(TraceLayer::new_for_http().make_span_with(|request: &Request<_>| {
                let request_id = request.headers().get("x-request-id").and_then(|v| v.to_str().ok()).unwrap_or("");
                tracing::info_span!("request", method = %request.method(), uri = %loggable_path(request.uri().path()), request_id, principal = tracing::field::Empty)
            }))
            .layer(PropagateRequestIdLayer::x_request_id()),
    )
}

/// The agent tools' MCP server at `/mcp` (not in the OpenAPI document: it speaks
/// JSON-RPC, see docs/agent-tools.md), authenticated like every private route. A
/// tool call's body holds an input of up to 1 MiB plus the JSON-RPC envelope.
fn mcp_router(state: &AppState) -> Router {
    Router::new()
        .nest_service(crate::agent::MCP_PATH, crate::agent::service(state.clone()))
        .layer(from_fn(crate::agent::check_bounds))
        .layer(from_fn_with_state(state.clone(), authenticate))
        .layer(from_fn_with_state(
            crate::agent::MCP_BODY_LIMIT,
            body_limit::guard,
        ))
}

/// A request path as the log may hold it: the capability segment of a public read
/// token, a public artifact link, a callback token or a run's command-output
/// credential is masked.
pub fn loggable_path(path: &str) -> String {
    for prefix in [
        "/public/module/custom_tables/read/",
        "/public/sandbox/artifacts/",
        "/public/module/custom_tables/callback/command-output/",
        "/public/module/custom_tables/callback/",
    ] {
        if let Some(rest) = path.strip_prefix(prefix) {
            let tail = rest.find('/').map_or("", |i| &rest[i..]);
            return format!("{prefix}***{tail}");
        }
    }
    path.to_string()
}

/// The routes as an OpenAPI router (the document is built from it).
pub fn api_router(state: &AppState) -> OpenApiRouter {
    let json = routes::sandbox::router()
        .layer(from_fn_with_state(DEFAULT_LIMIT, body_limit::guard))
        .layer(axum::extract::DefaultBodyLimit::max(DEFAULT_LIMIT));
    let raw = routes::sandbox::raw_router().layer(axum::extract::DefaultBodyLimit::disable());
    let sandbox = json
        .merge(raw)
        .fallback(not_found)
        .layer(from_fn_with_state(state.clone(), kill_switch))
        .layer(from_fn_with_state(PREFIX, sandbox_gate))
        .layer(from_fn_with_state(state.clone(), authenticate));
    // Custom tables: the same authentication and body guard, but neither the sandbox
    // kill switch nor its restricted-key gate (restricted keys are refused outright).
    let tables = routes::tables::router()
        .fallback(not_found)
        .layer(from_fn(routes::tables::refuse_restricted))
        .layer(from_fn_with_state(state.clone(), authenticate))
        .layer(from_fn_with_state(DEFAULT_LIMIT, body_limit::guard))
        .layer(axum::extract::DefaultBodyLimit::max(DEFAULT_LIMIT));
    // The review module: authenticated like the custom tables.
    let review = routes::review::router()
        .fallback(not_found)
        .layer(from_fn(routes::tables::refuse_restricted))
        .layer(from_fn_with_state(state.clone(), authenticate))
        .layer(from_fn_with_state(DEFAULT_LIMIT, body_limit::guard))
        .layer(axum::extract::DefaultBodyLimit::max(DEFAULT_LIMIT));
    // The notification center: absolute paths, authenticated like the tables.
    let notifications = routes::notifications::router()
        .layer(from_fn(routes::tables::refuse_restricted))
        .layer(from_fn_with_state(state.clone(), authenticate))
        .layer(from_fn_with_state(DEFAULT_LIMIT, body_limit::guard))
        .layer(axum::extract::DefaultBodyLimit::max(DEFAULT_LIMIT));
    // Room settings of the chat platform: absolute paths, authenticated like the tables.
    let chatrooms = routes::chatrooms::router()
        .layer(from_fn(routes::tables::refuse_restricted))
        .layer(from_fn_with_state(state.clone(), authenticate))
        .layer(from_fn_with_state(DEFAULT_LIMIT, body_limit::guard))
        .layer(axum::extract::DefaultBodyLimit::max(DEFAULT_LIMIT));
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(routes::health::router())
        .merge(routes::public::router())
        .merge(routes::public_links::router())
        .merge(routes::tables::public_read::router())
        .merge(routes::tables::callback::router())
        .merge(routes::root::router())
        .merge(notifications)
        .merge(chatrooms)
        .nest(PREFIX, sandbox)
        .nest(routes::tables::PREFIX, tables)
        .nest(routes::review::PREFIX, review)
        .route_layer(from_fn(record_metrics))
        .with_state(state.clone())
}

/// Initialises logging.
pub fn init_tracing(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| "info,sqlx=warn,tower_http=info".into());
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    let _ = match format {
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
        LogFormat::Text => builder.try_init(),
    };
}

/// `sandbox-api serve`: resolves the database (starting the embedded cluster when
/// `DATABASE_URL` is unset, or adopting it when a killed server left it running),
/// migrates it, serves until SIGINT or SIGTERM, then stops the pump and the
/// embedded cluster.
pub async fn serve(config: Config) -> anyhow::Result<()> {
    init_tracing(config.log_format);
    let mut embedded = None;
    let url = match &config.database_url {
        Some(url) => url.clone(),
        None => {
            let mut cluster = EmbeddedPostgres::plan(&config.data_dir)?;
            cluster.start().await?;
            cluster.ensure_database("sandbox").await?;
            let url = cluster.url("sandbox");
            std::fs::write(config.data_dir.join("database.url"), &url)?;
            tracing::info!(database = %url, "embedded PostgreSQL is running");
            embedded = Some(cluster);
            url
        }
    };
    let result = run(&config, &url).await;
    // The cluster belongs to the data directory: it is stopped whether this process
    // started it or found it running (left by a server that was killed).
    if let Some(mut cluster) = embedded
        && let Err(error) = cluster.stop_any().await
    {
        tracing::error!(%error, "stopping the embedded PostgreSQL failed");
    }
    result
}

async fn run(config: &Config, url: &str) -> anyhow::Result<()> {
    let pool = db::connect(url, 32).await?;
    db::migrate(&pool).await?;
    let cancel = CancellationToken::new();
    let started = AppState::start(config, pool, cancel.clone()).await?;
    let runtime = started.state.runtime.clone();
    if config.role.works() {
        crate::runtime::start(&runtime).await?;
        // Table triggers act through the table write path, which needs the whole state.
        crate::routes::tables::triggers::fire::spawn(
            started.state.clone(),
            config.trigger_interval.into(),
        );
    }
    let router = if config.role.serves_api() {
        app(started.state)
    } else {
        worker_app(started.state)
    };
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("cannot listen on {}", config.listen))?;
    tracing::info!(listen = %config.listen, base_url = %config.base_url(), role = ?config.role, "sandbox-api is serving");
    serve_router(listener, router, shutdown_signal()).await?;
    cancel.cancel();
    runtime.stopped().await;
    started.pump.await?;
    tracing::info!("sandbox-api stopped");
    Ok(())
}

async fn shutdown_signal() {
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("a SIGTERM handler can be installed");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate.recv() => {}
    }
    tracing::info!("shutting down");
}

#[cfg(test)]
mod tests {
    use super::loggable_path;

    #[test]
    fn capabilities_in_paths_are_masked_for_the_log() {
        assert_eq!(
            loggable_path("/public/module/custom_tables/read/abc/records/r1"),
            "/public/module/custom_tables/read/***/records/r1"
        );
        assert_eq!(
            loggable_path("/public/sandbox/artifacts/tok"),
            "/public/sandbox/artifacts/***"
        );
        assert_eq!(
            loggable_path("/public/module/custom_tables/callback/command-output/tok"),
            "/public/module/custom_tables/callback/command-output/***"
        );
        assert_eq!(
            loggable_path("/public/module/custom_tables/callback/tok/form-schema"),
            "/public/module/custom_tables/callback/***/form-schema"
        );
        assert_eq!(loggable_path("/healthz"), "/healthz");
    }
}
