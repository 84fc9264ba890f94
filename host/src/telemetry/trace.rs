//! Traces: the spans chatd makes and, when an OTLP endpoint is configured, their export.
//!
//! Spans are `tracing` spans under one target, [`TARGET`]; only the OpenTelemetry layer (and the
//! JSON log, for the trace id) enables it, so with tracing off a span is a disabled callsite: no
//! allocation, no field evaluated. The shape of a trace is one request's: the HTTP span (parented
//! to an incoming `traceparent`) → the run → each provider turn → each tool call, with plugin
//! calls and store operations under whatever runs them. Work with no trace around it (the model
//! list refresh, the PostgreSQL writer and beat) opens no plugin or store span: it would be a
//! trace of its own every few milliseconds.
//!
//! Attributes follow the OpenTelemetry semantic conventions (HTTP, GenAI, database) and never
//! hold a message's text, an attachment, a key or a token: what a span may carry is decided here,
//! in the constructors below, and nowhere else.

use axum::http::HeaderMap;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The target of every span chatd exports.
pub const TARGET: &str = "chatd::span";

/// The HTTP server span of a request, a child of the caller's trace when the request carries a
/// W3C `traceparent`.
pub fn http(method: &'static str, route: &str, headers: &HeaderMap) -> Span {
    let span = tracing::info_span!(
        target: TARGET,
        "http",
        otel.name = format!("{method} {route}"),
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        http.request.method = method,
        http.route = route,
        http.response.status_code = tracing::field::Empty,
    );
    if !span.is_disabled() {
        let parent =
            TraceContextPropagator::new().extract(&opentelemetry_http::HeaderExtractor(headers));
        // Refused only once the span has started, which it has not.
        let _ = span.set_parent(parent);
    }
    span
}

/// Records the response's status on the HTTP span.
pub fn http_status(span: &Span, status: u16) {
    span.record("http.response.status_code", status);
    if status >= 500 {
        span.record("otel.status_code", "ERROR");
    }
}

/// A backend-owned run (`kind`: chat or search), a child of the request that started it.
pub fn run(kind: &'static str) -> Span {
    tracing::info_span!(
        target: TARGET,
        "run",
        otel.name = format!("{kind} run"),
        chatd.run.kind = kind,
        otel.status_code = tracing::field::Empty,
        error.type = tracing::field::Empty,
    )
}

/// One provider turn (a GenAI `chat` operation). `model` is the model the request named.
pub fn provider_turn(provider: &str, model: &str) -> Span {
    tracing::info_span!(
        target: TARGET,
        "chat",
        otel.name = format!("chat {model}"),
        otel.kind = "client",
        otel.status_code = tracing::field::Empty,
        gen_ai.operation.name = "chat",
        gen_ai.system = provider,
        gen_ai.provider.name = provider,
        gen_ai.request.model = model,
        gen_ai.usage.input_tokens = tracing::field::Empty,
        gen_ai.usage.output_tokens = tracing::field::Empty,
        error.type = tracing::field::Empty,
    )
}

/// What a finished provider turn adds to its span.
pub fn provider_turn_end(span: &Span, tokens: Option<(u64, u64)>, error: Option<&'static str>) {
    if let Some((input, output)) = tokens {
        span.record("gen_ai.usage.input_tokens", input);
        span.record("gen_ai.usage.output_tokens", output);
    }
    failed(span, error);
}

/// One tool call (a GenAI `execute_tool` operation); `tool` is the enabled tool's name or
/// `unknown`, never a name the model made up.
pub fn tool_call(tool: &str, call_id: &str) -> Span {
    tracing::info_span!(
        target: TARGET,
        "execute_tool",
        otel.name = format!("execute_tool {tool}"),
        otel.status_code = tracing::field::Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = tool,
        gen_ai.tool.call.id = call_id,
        error.type = tracing::field::Empty,
    )
}

/// A call into a plugin's sandbox (`operation`: the export called), inside a trace only.
pub fn plugin_call(plugin: &str, operation: &'static str) -> Span {
    if Span::current().is_none() {
        return Span::none();
    }
    tracing::info_span!(
        target: TARGET,
        "plugin",
        otel.name = format!("plugin {plugin} {operation}"),
        otel.status_code = tracing::field::Empty,
        chatd.plugin.id = plugin,
        chatd.plugin.operation = operation,
        error.type = tracing::field::Empty,
    )
}

/// A store operation (one transaction or query), inside a trace only.
pub fn store(backend: &'static str, operation: &'static str) -> Span {
    if Span::current().is_none() {
        return Span::none();
    }
    tracing::info_span!(
        target: TARGET,
        "store",
        otel.name = operation,
        otel.kind = "client",
        otel.status_code = tracing::field::Empty,
        db.system.name = backend,
        db.operation.name = operation,
        error.type = tracing::field::Empty,
    )
}

/// Marks a span failed with the failure's kind (a fixed word, never a message).
pub fn failed(span: &Span, error: Option<&'static str>) {
    if let Some(kind) = error {
        span.record("error.type", kind);
        span.record("otel.status_code", "ERROR");
    }
}
