//! The Model Context Protocol server at `/mcp` (Streamable HTTP, JSON-RPC 2.0 over
//! POST, stateless with plain JSON answers): every POST carries its own
//! credentials and turn, so no session can be borrowed by another principal and any
//! API node can answer. `tools/list` shows the five tools only to a call that opens
//! (`call.rs`); `tools/call` answers each tool's object as `structuredContent`
//! with its JSON text in `content[0].text`, `isError` set on the error shape.

use super::body::BrokenBounds;
use super::call::AgentCall;
use super::refusal::ToolError;
use super::tools;
use crate::state::AppState;
use axum::http::request::Parts;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, JsonObject,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig,
    Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};
use std::borrow::Cow;
use std::sync::Arc;

/// Where the MCP server is mounted.
pub const MCP_PATH: &str = "/mcp";

/// The tool server of one request.
#[derive(Clone)]
struct SandboxTools {
    state: AppState,
}

fn parts(ctx: &RequestContext<RoleServer>) -> Result<&Parts, ErrorData> {
    ctx.extensions
        .get::<Parts>()
        .ok_or_else(|| ErrorData::internal_error("the request is missing", None))
}

fn object(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

impl ServerHandler for SandboxTools {
    /// 2025-06-18 and later: the revisions with `structuredContent`.
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(&[
            ProtocolVersion::V_2025_06_18,
            ProtocolVersion::V_2025_11_25,
            ProtocolVersion::V_2026_07_28,
        ])
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("sandbox", env!("CARGO_PKG_VERSION")))
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        if AgentCall::open(&self.state, parts(&ctx)?).await.is_err() {
            return Ok(ListToolsResult::with_all_items(Vec::new()));
        }
        let tools = tools::specs()
            .into_iter()
            .map(|spec| {
                let annotations = ToolAnnotations::new()
                    .read_only(spec.read_only)
                    .destructive(false)
                    .open_world(false);
                Tool::new(spec.name, spec.description, object(spec.input_schema))
                    .with_annotations(annotations)
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let parts = parts(&ctx)?;
        let answer = match AgentCall::open(&self.state, parts).await {
            Ok(_) if let Some(BrokenBounds(why)) = parts.extensions.get() => Err(
                ToolError::invalid(format!("the arguments break the input bounds: {why}")),
            ),
            Ok(call) => tools::call(&call, &request.name, request.arguments).await,
            Err(refusal) => Err(refusal),
        };
        Ok(match answer {
            Ok(mut fields) => {
                let mut ok = json!({"status": "ok"});
                if let (Some(ok), Some(fields)) = (ok.as_object_mut(), fields.as_object_mut()) {
                    ok.append(fields);
                }
                CallToolResult::structured(ok)
            }
            Err(refusal) => CallToolResult::structured_error(refusal.to_value()),
        }
        .into())
    }
}

/// The MCP service (the caller puts authentication in front of it).
pub fn service(
    state: AppState,
) -> StreamableHttpService<impl ServerHandler + Clone, NeverSessionManager> {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .disable_allowed_hosts();
    StreamableHttpService::new(
        move || {
            Ok(SandboxTools {
                state: state.clone(),
            })
        },
        Arc::new(NeverSessionManager::default()),
        config,
    )
}
