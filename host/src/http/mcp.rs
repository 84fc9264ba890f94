//! chatd as an MCP server: `/mcp` (and `/api/mcp`), streamable HTTP on rmcp's server, behind
//! the same middleware as every route (the Host check, the origin check on every method, the
//! token in token mode). Its error answers quote at most a bounded prefix of the caller's input
//! ([`bound_errors`]), rmcp's own words included.
//!
//! Its tools are the service-managed tools this server has, each run exactly as the tool loop
//! runs it, under its plugin's grants and secrets or through its MCP server
//! (`tools::enabled::EnabledTool::run`), plus [`SEARCH_TOOL`], a search-mode run whose answer comes back with
//! its citations (not stored as a search: it is a tool call). Stateless (no `Mcp-Session-Id`):
//! every request stands alone, so any instance of a PostgreSQL deployment answers any request
//! and nothing needs sticky sessions. `logging/setLevel` is accepted; chatd sends no log
//! notifications.

use std::sync::Arc;

// Logging (`logging/setLevel`) is part of 2025-06-18 and 2025-11-25, the versions served here;
// only the 2026-07-28 draft deprecates it.
use crate::tools::python::{CallContext, Ran};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
#[allow(deprecated)]
use rmcp::model::SetLevelRequestParams;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};

use super::AppState;
use super::error::{bounded, quoted};
use super::search_runs::{RunSearchRequest, run_request, search_plugin};
use crate::people::Caller;
use crate::search;

/// The path, at the root and under `/api`.
pub const PATH: &str = "/mcp";
/// The search-mode tool's name.
pub const SEARCH_TOOL: &str = "chatd_search";

/// The `/mcp` endpoint.
pub fn service(state: AppState) -> StreamableHttpService<Tools, NeverSessionManager> {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        // Hosts and origins are checked by `host.rs` and `origin.rs`, as on every route (token
        // mode serves any name: a proxy may reach chatd under any).
        .disable_allowed_hosts()
        .disable_allowed_origins();
    StreamableHttpService::new(
        move || {
            Ok(Tools {
                state: state.clone(),
            })
        },
        Arc::new(NeverSessionManager::default()),
        config,
    )
}

/// Bounds what an error answer of `/mcp` quotes ([`bounded`]): a JSON-RPC error's `message`
/// (and its `data` dropped when large), or an HTTP error's text, which becomes `{message}` as
/// every other route's. A 3 MiB tool name is not echoed back whole.
pub async fn bound_errors<B>(response: axum::http::Response<B>) -> axum::response::Response
where
    B: axum::body::HttpBody<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    use axum::http::header::CONTENT_TYPE;
    use axum::response::IntoResponse;
    let json = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    let status = response.status();
    if !json && !status.is_client_error() && !status.is_server_error() {
        return response.map(axum::body::Body::new);
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(axum::body::Body::new(body), usize::MAX).await else {
        return super::error::ApiError::internal("the /mcp answer could not be read")
            .into_response();
    };
    if !json {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        parts.headers.remove(CONTENT_TYPE);
        parts.headers.remove(axum::http::header::CONTENT_LENGTH);
        let body = axum::Json(json!({ "message": bounded(text) })).into_response();
        let (new, body) = body.into_parts();
        parts.headers.extend(new.headers);
        return axum::response::Response::from_parts(parts, body);
    }
    // Only JSON-RPC errors are rewritten; a result goes out as it came.
    #[derive(serde::Deserialize)]
    struct Probe {
        error: Option<Value>,
    }
    let is_error = memchr::memmem::find(&bytes, b"\"error\"").is_some()
        && serde_json::from_slice::<Probe>(&bytes).is_ok_and(|p| p.error.is_some());
    if !is_error {
        return axum::response::Response::from_parts(parts, axum::body::Body::from(bytes));
    }
    let mut value: Value = serde_json::from_slice(&bytes).unwrap_or_default();
    if let Some(error) = value.get_mut("error").and_then(Value::as_object_mut) {
        if let Some(Value::String(message)) = error.get_mut("message") {
            *message = bounded(std::mem::take(message));
        }
        if error
            .get("data")
            .is_some_and(|d| d.to_string().len() > 1024)
        {
            error.remove("data");
        }
    }
    parts.headers.remove(axum::http::header::CONTENT_LENGTH);
    axum::response::Response::from_parts(parts, axum::body::Body::from(value.to_string()))
}

/// Who made the request: the token check put the caller on every request it let through.
fn request_caller(context: &RequestContext<RoleServer>) -> Result<&Caller, ErrorData> {
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Caller>())
        .ok_or_else(|| ErrorData::internal_error("the request carries no caller", None))
}

/// The tools `/mcp` serves.
#[derive(Clone)]
pub struct Tools {
    state: AppState,
}

impl Tools {
    /// Every tool served now to `caller`: the catalogue's (their own `per_user` MCP logins'
    /// included), then the search tool.
    async fn list(&self, caller: &Caller) -> Vec<Tool> {
        let offer = self.state.tools.offered(caller.owner()).await;
        let mut tools: Vec<Tool> = offer
            .list()
            .iter()
            .filter_map(|tool| offer.find(&tool.name))
            .map(|tool| {
                let schema = serde_json::from_str::<JsonObject>(&tool.spec.parameters_schema_json)
                    .unwrap_or_else(|_| object_schema());
                Tool::new(tool.spec.name, tool.spec.description, Arc::new(schema))
            })
            .collect();
        if search_plugin(&self.state).is_ok() {
            tools.push(Tool::new(
                SEARCH_TOOL,
                "Search the web in chatd's search mode: the engine's answer to the query, with \
                 the sources it cites, and the ranked results.",
                Arc::new(search_schema()),
            ));
        }
        tools
    }

    async fn search(&self, arguments: JsonObject, caller: &Caller) -> CallToolResult {
        let body: RunSearchRequest = match serde_json::from_value(Value::Object(arguments)) {
            Ok(body) => body,
            Err(e) => return failed(bounded(format!("invalid arguments: {e}"))),
        };
        if body.query.is_none() {
            return failed("query: required".into());
        }
        let request = match run_request(body, None) {
            Ok(request) => request,
            Err(e) => return failed(e.message().to_string()),
        };
        let plugin = match search_plugin(&self.state) {
            Ok(plugin) => plugin,
            Err(e) => return failed(e.message().to_string()),
        };
        let engine = plugin.as_search().expect("checked by search_plugin");
        let spender = match super::search_runs::admit_answer(&self.state, caller).await {
            Ok(spender) => spender,
            Err(e) => return failed(e.message().to_string()),
        };
        let ran = search::run(engine, &request, &|_| {}, spender.as_deref()).await;
        if let Some(spender) = &spender {
            spender.settle().await;
        }
        match ran {
            Err(both) => failed(both.to_string()),
            Ok(outcome) => {
                let structured = json!({
                    "answer": outcome.answer_text,
                    "citations": outcome.answer_citations,
                    "results": outcome.results,
                    "answerError": outcome.answer_error,
                    "searchError": outcome.error,
                });
                let mut result = CallToolResult::structured(structured);
                result.content = vec![ContentBlock::text(search_text(
                    outcome.answer_text.as_deref(),
                    &outcome.answer_citations,
                    outcome.answer_error.as_deref(),
                ))];
                result
            }
        }
    }
}

/// The answer, then its sources as a numbered list of titles and URLs.
fn search_text(answer: Option<&str>, citations: &[Value], error: Option<&str>) -> String {
    let mut text = match (answer, error) {
        (Some(answer), _) => answer.to_string(),
        (None, Some(error)) => format!("(no answer: {error})"),
        (None, None) => "(no answer)".to_string(),
    };
    if !citations.is_empty() {
        text.push_str("\n\nSources:");
        for (i, citation) in citations.iter().enumerate() {
            let url = citation["url"].as_str().unwrap_or("");
            let title = citation["title"].as_str().unwrap_or(url);
            text.push_str(&format!("\n{}. {title} <{url}>", i + 1));
        }
    }
    text
}

fn failed(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

fn object_schema() -> JsonObject {
    let Value::Object(map) = json!({"type": "object"}) else {
        unreachable!()
    };
    map
}

fn search_schema() -> JsonObject {
    let Value::Object(map) = json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to search for."},
            "type": {"type": "string", "description": "How hard the engine searches (default auto)."},
            "numResults": {"type": "integer", "minimum": 1, "maximum": 100},
            "includeDomains": {"type": "array", "items": {"type": "string"}},
            "excludeDomains": {"type": "array", "items": {"type": "string"}}
        },
        "required": ["query"]
    }) else {
        unreachable!()
    };
    map
}

impl ServerHandler for Tools {
    #[allow(deprecated)] // enable_logging: see the import of SetLevelRequestParams
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_logging()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("chatd", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "chatd's service-managed tools, each run in chatd's sandbox under its grants, and \
                 a search-mode search (chatd_search).",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let caller = request_caller(&context)?;
        Ok(ListToolsResult::with_all_items(self.list(caller).await))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = request.arguments.unwrap_or_default();
        let caller = request_caller(&context)?;
        if request.name == SEARCH_TOOL {
            return Ok(self.search(arguments, caller).await.into());
        }
        let offer = self.state.tools.offered(caller.owner()).await;
        let Some(tool) = offer.find(&request.name) else {
            return Err(ErrorData::invalid_params(
                format!("no tool named {} on this server", quoted(&request.name)),
                None,
            ));
        };
        let arguments = Value::Object(arguments).to_string();
        // Each call is a session of its own: /mcp has no conversation to keep one for.
        let result = match tool.run(&arguments, &CallContext::fresh()).await {
            Ok(ran) => CallToolResult::success(contents(ran)),
            Err(error) => failed(error),
        };
        Ok(result.into())
    }

    #[allow(deprecated)]
    async fn set_level(
        &self,
        _request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Ok(())
    }
}

/// A tool's result as MCP content: its text, then the PNG and JPEG images it wrote (the python
/// tool's charts) as `image` blocks, base64 as MCP has them; other files are named in the text.
fn contents(ran: Ran) -> Vec<ContentBlock> {
    let mut blocks = vec![ContentBlock::text(ran.content)];
    for file in ran.files {
        if matches!(file.mime_type, "image/png" | "image/jpeg") {
            blocks.push(ContentBlock::image(
                STANDARD.encode(&file.bytes),
                file.mime_type,
            ));
        }
    }
    blocks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_search_answer_lists_its_sources() {
        let citations = [
            json!({"url": "https://a.example/", "title": "A"}),
            json!({"url": "https://b.example/"}),
        ];
        assert_eq!(
            search_text(Some("London."), &citations, None),
            "London.\n\nSources:\n1. A <https://a.example/>\n2. https://b.example/ <https://b.example/>"
        );
        assert_eq!(search_text(None, &[], Some("quota")), "(no answer: quota)");
    }
}
