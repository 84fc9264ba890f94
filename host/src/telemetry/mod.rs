//! What an operator sees of a running chatd besides its API: Prometheus metrics ([`metrics`]),
//! OpenTelemetry traces ([`trace`]) and the log's format (the text log's fields escaped,
//! [`text`]), all set up once per process by
//! [`Telemetry::install`] (the binary calls it before its runtime starts; in-process tests and
//! benchmarks do not, and their spans are disabled callsites).
//!
//! The subscriber has two layers, each with its own filter: the log (text or JSON, RUST_LOG's
//! levels) and, when an OTLP endpoint is set, the OpenTelemetry layer, which sees only chatd's
//! spans ([`trace::TARGET`]), never a log event, so a log line's words never become span data.

pub mod metrics;
pub mod text;
pub mod trace;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::filter::{EnvFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, Registry};

use crate::config::{Config, LogFormat, MetricsAccess};

/// The installed telemetry; [`Telemetry::shutdown`] sends the spans still buffered.
pub struct Telemetry {
    tracer: Option<SdkTracerProvider>,
}

/// Where the log goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogTo {
    Stdout,
    /// An operator command's stdout holds only its answer.
    Stderr,
}

impl Telemetry {
    /// Installs the process's subscriber: the log in `config.log_format`, and spans exported
    /// over OTLP/HTTP when an endpoint is configured; turns metrics off when CHATD_METRICS says
    /// so. Call outside an async runtime: the exporter's HTTP client is a blocking one, for the
    /// SDK's export thread. Errors are one line for the operator.
    pub fn install(config: &Config, to: LogTo) -> Result<Self, String> {
        if config.chatd_metrics == MetricsAccess::Off {
            metrics::disable();
        }
        let tracer = match config.otlp_traces_endpoint() {
            Some(endpoint) => Some(tracer_provider(&endpoint)?),
            None => None,
        };
        let spans = if tracer.is_some() { "info" } else { "off" };
        // The log's filter is RUST_LOG's (default info), with chatd's spans on only where a
        // JSON line shows their trace id; text lines stay as they were.
        let log_filter = |show_spans: bool| {
            // By default rmcp (the MCP SDK) logs nothing: its lines quote what a remote server
            // sent, unscrubbed, and repeat each failed retry; chatd's own lines name the server
            // and the reason once per change, with the key scrubbed (tools/mcp/).
            let filter = EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| EnvFilter::new("info,rmcp=off"));
            let level = if show_spans { spans } else { "off" };
            filter.add_directive(
                format!("{}={level}", trace::TARGET)
                    .parse()
                    .expect("a valid directive"),
            )
        };
        let ansi = match to {
            LogTo::Stdout => std::io::IsTerminal::is_terminal(&std::io::stdout()),
            LogTo::Stderr => std::io::IsTerminal::is_terminal(&std::io::stderr()),
        };
        let log: Box<dyn Layer<Registry> + Send + Sync> = match (config.log_format, to) {
            (LogFormat::Text, LogTo::Stdout) => tracing_subscriber::fmt::layer()
                .with_ansi(ansi)
                .fmt_fields(text::EscapedFields)
                .with_filter(log_filter(false))
                .boxed(),
            (LogFormat::Text, LogTo::Stderr) => tracing_subscriber::fmt::layer()
                .with_ansi(ansi)
                .fmt_fields(text::EscapedFields)
                .with_writer(std::io::stderr)
                .with_filter(log_filter(false))
                .boxed(),
            (LogFormat::Json, to) => {
                let json = json_subscriber::layer()
                    .with_current_span(false)
                    .with_span_list(false)
                    .with_opentelemetry_ids(true);
                let json = match to {
                    LogTo::Stdout => json.boxed(),
                    LogTo::Stderr => json.with_writer(std::io::stderr).boxed(),
                };
                json.with_filter(log_filter(true)).boxed()
            }
        };
        let otel = tracer.as_ref().map(|provider| {
            tracing_opentelemetry::layer()
                .with_tracer(provider.tracer("chatd"))
                .with_location(false)
                .with_threads(false)
                .with_tracked_inactivity(false)
                .with_filter(Targets::new().with_target(trace::TARGET, tracing::Level::INFO))
        });
        tracing_subscriber::registry()
            .with(log)
            .with(otel)
            .try_init()
            .map_err(|e| format!("cannot set up the log: {e}"))?;
        Ok(Self { tracer })
    }

    /// Whether spans are exported.
    pub fn tracing(&self) -> bool {
        self.tracer.is_some()
    }

    /// Sends the spans still buffered and stops the exporter (at exit, outside the runtime).
    pub fn shutdown(self) {
        if let Some(provider) = self.tracer
            && let Err(e) = provider.shutdown()
        {
            eprintln!("chatd: sending the last traces failed: {e}");
        }
    }
}

/// The SDK's tracer provider exporting to `endpoint` in batches. The service is `chatd` unless
/// OTEL_SERVICE_NAME (or OTEL_RESOURCE_ATTRIBUTES) names it; the SDK reads the other OTEL_*
/// variables itself (headers, timeout, batch sizes, sampler).
fn tracer_provider(endpoint: &str) -> Result<SdkTracerProvider, String> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(endpoint)
        .build()
        .map_err(|e| format!("OTEL_EXPORTER_OTLP_ENDPOINT: cannot export to {endpoint}: {e}"))?;
    let named = std::env::var_os("OTEL_SERVICE_NAME").is_some()
        || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|a| a.contains("service.name="));
    let mut resource = Resource::builder();
    if !named {
        resource = resource.with_service_name("chatd");
    }
    let resource = resource
        .with_attribute(opentelemetry::KeyValue::new(
            "service.version",
            env!("CARGO_PKG_VERSION"),
        ))
        .build();
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build())
}
