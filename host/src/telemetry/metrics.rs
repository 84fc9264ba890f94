//! Prometheus metrics: every family chatd exports, the labels each has, and the one function
//! that records each event. `GET /metrics` (`http/metrics.rs`) writes them out.
//!
//! Process-wide, like the log subscriber: one registry, made at first use, which every part of
//! the server records into without a handle being passed around. One server runs per process;
//! tests that count start the binary. CHATD_METRICS=off ([`disable`]) makes every record a no-op.
//!
//! Label values are bounded by construction, never taken from a request as they come: routes are
//! axum's matched patterns, methods outside the standard ones are `other`, provider ids and
//! plugin ids are the operator's, tool names are the catalogue's (a name the model made up is
//! `unknown`), and a model is named only when its provider lists it (else `unlisted`). Error
//! kinds and outcomes are fixed words.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// What a model is called in labels when its provider does not list it.
pub const UNLISTED_MODEL: &str = "unlisted";
/// What a tool is called in labels when no enabled tool has the name the model gave.
pub const UNKNOWN_TOOL: &str = "unknown";

static METRICS: OnceLock<Metrics> = OnceLock::new();
static DISABLED: AtomicBool = AtomicBool::new(false);

/// CHATD_METRICS=off: nothing is recorded from now on (set once, at startup).
pub fn disable() {
    DISABLED.store(true, Ordering::Relaxed);
}

/// The registry, unless metrics are off.
fn get() -> Option<&'static Metrics> {
    if DISABLED.load(Ordering::Relaxed) {
        return None;
    }
    Some(METRICS.get_or_init(Metrics::new))
}

/// The text exposition of every family (OpenMetrics text, which Prometheus scrapes).
pub fn render() -> String {
    let mut text = String::new();
    if let Some(m) = get() {
        prometheus_client::encoding::text::encode(&mut text, &m.registry)
            .expect("writing to a String cannot fail");
    }
    text
}

/// The Content-Type of [`render`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

macro_rules! labels {
    ($name:ident { $($field:ident : $ty:ty),* $(,)? }) => {
        #[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
        struct $name { $($field: $ty),* }
    };
}

labels!(HttpLabels { method: &'static str, route: String, status: u16 });
labels!(RouteLabels { method: &'static str, route: String });
labels!(KindLabels { kind: &'static str });
labels!(RunEndLabels { kind: &'static str, outcome: &'static str });
labels!(ReasonLabels { reason: &'static str });
labels!(ModelLabels {
    provider: String,
    model: String
});
labels!(ProviderErrorLabels { provider: String, model: String, kind: &'static str });
labels!(RetryLabels { provider: String, kind: &'static str });
labels!(FallbackLabels {
    provider: String,
    fallback: String
});
labels!(TokenLabels { provider: String, model: String, direction: &'static str });
labels!(ToolLabels { tool: String, outcome: &'static str });
labels!(ToolNameLabels { tool: String });
labels!(PluginCallLabels { plugin: String, outcome: &'static str });
labels!(PluginLabels { plugin: String });
labels!(OutcomeLabels { outcome: &'static str });
labels!(QueryLabels { backend: &'static str, operation: &'static str });
labels!(PoolLabels { backend: &'static str, state: &'static str });
labels!(UserLabels { user: String });
labels!(UserTokenLabels { user: String, direction: &'static str });

struct Metrics {
    registry: Registry,
    http_requests: Family<HttpLabels, Counter>,
    http_duration: Family<RouteLabels, Histogram, fn() -> Histogram>,
    runs_live: Family<KindLabels, Gauge>,
    runs_ended: Family<RunEndLabels, Counter>,
    runs_stopped: Family<ReasonLabels, Counter>,
    attaches: Family<KindLabels, Counter>,
    disconnects: Family<KindLabels, Counter>,
    provider_turns: Family<ModelLabels, Counter>,
    provider_errors: Family<ProviderErrorLabels, Counter>,
    provider_retries: Family<RetryLabels, Counter>,
    provider_fallbacks: Family<FallbackLabels, Counter>,
    runs_cancelled: Family<KindLabels, Counter>,
    provider_duration: Family<ModelLabels, Histogram, fn() -> Histogram>,
    provider_first_token: Family<ModelLabels, Histogram, fn() -> Histogram>,
    provider_tokens: Family<TokenLabels, Counter>,
    tool_calls: Family<ToolLabels, Counter>,
    tool_duration: Family<ToolNameLabels, Histogram, fn() -> Histogram>,
    plugin_calls: Family<PluginCallLabels, Counter>,
    plugin_memory_cap: Family<PluginLabels, Counter>,
    plugin_loads: Family<PluginCallLabels, Counter>,
    plugin_memory_kept: Gauge,
    config_reloads: Family<OutcomeLabels, Counter>,
    store_queries: Family<QueryLabels, Histogram, fn() -> Histogram>,
    store_errors: Family<QueryLabels, Counter>,
    store_pool: Family<PoolLabels, Gauge>,
    run_event_lag: Histogram,
    spend_tokens: Family<UserTokenLabels, Counter>,
    spend_usd: Family<UserLabels, Counter<f64, std::sync::atomic::AtomicU64>>,
    budget_refusals: Family<UserLabels, Counter>,
}

// Buckets, in seconds, for what each histogram measures.
fn http_buckets() -> Histogram {
    Histogram::new([
        0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
    ])
}
fn long_call_buckets() -> Histogram {
    Histogram::new([
        0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 80.0, 160.0, 300.0, 600.0,
    ])
}
fn first_token_buckets() -> Histogram {
    Histogram::new([
        0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0,
    ])
}
fn query_buckets() -> Histogram {
    Histogram::new([
        0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    ])
}
fn lag_buckets() -> Histogram {
    Histogram::new([
        0.001, 0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12,
    ])
}

impl Metrics {
    fn new() -> Self {
        let mut registry = Registry::with_prefix("chatd");
        let m = Self {
            http_requests: Family::default(),
            http_duration: Family::new_with_constructor(http_buckets),
            runs_live: Family::default(),
            runs_ended: Family::default(),
            runs_stopped: Family::default(),
            attaches: Family::default(),
            disconnects: Family::default(),
            provider_turns: Family::default(),
            provider_errors: Family::default(),
            provider_retries: Family::default(),
            provider_fallbacks: Family::default(),
            runs_cancelled: Family::default(),
            provider_duration: Family::new_with_constructor(long_call_buckets),
            provider_first_token: Family::new_with_constructor(first_token_buckets),
            provider_tokens: Family::default(),
            tool_calls: Family::default(),
            tool_duration: Family::new_with_constructor(long_call_buckets),
            plugin_calls: Family::default(),
            plugin_memory_cap: Family::default(),
            plugin_loads: Family::default(),
            plugin_memory_kept: Gauge::default(),
            config_reloads: Family::default(),
            store_queries: Family::new_with_constructor(query_buckets),
            store_errors: Family::default(),
            store_pool: Family::default(),
            run_event_lag: lag_buckets(),
            spend_tokens: Family::default(),
            spend_usd: Family::default(),
            budget_refusals: Family::default(),
            registry: Registry::default(),
        };
        // Durations are in seconds, named so (`_seconds`), with no UNIT line: Prometheus' own
        // text format has none, and parsers of OpenMetrics disagree on it for histograms.
        let r = &mut registry;
        register(
            r,
            "http_requests",
            "HTTP requests answered, by route pattern, method and status",
            &m.http_requests,
        );
        register(
            r,
            "http_request_duration_seconds",
            "Time from a request's arrival to its response head (for a stream: to its first byte)",
            &m.http_duration,
        );
        register(
            r,
            "runs_live",
            "Chat and search runs this instance is running now (registered streams)",
            &m.runs_live,
        );
        register(
            r,
            "runs_ended",
            "Registered runs ended, by outcome: done, error (an upstream failure, a shutdown, a lost lease), abandoned (a bug)",
            &m.runs_ended,
        );
        register(
            r,
            "runs_stopped",
            "Run tasks stopped before their work ended: shutdown (grace period over), lease_lost, panic",
            &m.runs_stopped,
        );
        register(
            r,
            "run_attaches",
            "Attaches to a running run (reattach after a reload, another tab, Last-Event-ID)",
            &m.attaches,
        );
        register(
            r,
            "run_client_disconnects",
            "Streams whose client left before the run's end (the run goes on)",
            &m.disconnects,
        );
        register(
            r,
            "provider_turns",
            "Provider turns (one model call each; a tool loop makes several)",
            &m.provider_turns,
        );
        register(
            r,
            "provider_errors",
            "Provider turns that failed, by kind: upstream_4xx, upstream_5xx, upstream, transport, malformed_response, denied, invalid_input, unsupported, internal, trap, timeout",
            &m.provider_errors,
        );
        register(
            r,
            "provider_retries",
            "Provider turns tried again after the upstream refused them before answering, by the refusal's kind (upstream_4xx for 429, upstream_5xx, transport)",
            &m.provider_retries,
        );
        register(
            r,
            "provider_fallbacks",
            "First turns another provider answered after this one's tries were exhausted",
            &m.provider_fallbacks,
        );
        register(
            r,
            "spend_tokens",
            "Tokens of model calls recorded in the usage ledger, by person id (not name) and direction",
            &m.spend_tokens,
        );
        register(
            r,
            "spend_usd",
            "USD of model calls recorded in the usage ledger at the configured prices, by person id",
            &m.spend_usd,
        );
        register(
            r,
            "budget_refusals",
            "Requests refused because a budget was spent (429), by person id",
            &m.budget_refusals,
        );
        register(
            r,
            "runs_cancelled",
            "Stop requests (POST /v1/chats/:chatId/stream/cancel) that found a run going, counted on the instance asked",
            &m.runs_cancelled,
        );
        register(
            r,
            "provider_turn_duration_seconds",
            "A provider turn from its start to its end",
            &m.provider_duration,
        );
        register(
            r,
            "provider_time_to_first_token_seconds",
            "A provider turn from its start to its first text or tool call",
            &m.provider_first_token,
        );
        register(
            r,
            "provider_tokens",
            "Tokens the providers reported, by direction: input, output",
            &m.provider_tokens,
        );
        register(
            r,
            "tool_calls",
            "Tool calls the model made, by outcome: ok, error",
            &m.tool_calls,
        );
        register(
            r,
            "tool_call_duration_seconds",
            "A tool call from its start to its result",
            &m.tool_duration,
        );
        register(
            r,
            "plugin_calls",
            "Calls into plugin sandboxes, by outcome: ok, trap, timeout",
            &m.plugin_calls,
        );
        register(
            r,
            "plugin_memory_cap_hits",
            "Plugin calls refused memory past their manifest's cap (the call traps)",
            &m.plugin_memory_cap,
        );
        register(
            r,
            "plugin_loads",
            "PLUGINS_DIR files loaded or refused (at start and on each change), by outcome: loaded, refused",
            &m.plugin_loads,
        );
        register(
            r,
            "config_reloads",
            "Configuration file reloads, by outcome: applied, refused",
            &m.config_reloads,
        );
        register(
            r,
            "store_query_duration_seconds",
            "A store operation (one transaction or query) from its call to its result",
            &m.store_queries,
        );
        register(
            r,
            "store_errors",
            "Store operations that failed",
            &m.store_errors,
        );
        register(
            r,
            "plugin_memory_kept_bytes",
            "Memory of freed plugin instances kept resident for the next calls (read at each scrape)",
            &m.plugin_memory_kept,
        );
        register(
            r,
            "store_pool_connections",
            "Database connections, by state: in_use, idle (read at each scrape)",
            &m.store_pool,
        );
        register(
            r,
            "run_event_write_lag_seconds",
            "PostgreSQL: how long the oldest event of a batch waited before its commit (how far behind other instances see a live run)",
            &m.run_event_lag,
        );
        Self { registry, ..m }
    }
}

fn register<M: prometheus_client::registry::Metric + Clone>(
    registry: &mut Registry,
    name: &str,
    help: &str,
    metric: &M,
) {
    registry.register(name, help, metric.clone());
}

fn secs(took: Duration) -> f64 {
    took.as_secs_f64()
}

/// The method as a label: the standard ones by name, any other `other`.
pub fn method_label(method: &axum::http::Method) -> &'static str {
    use axum::http::Method;
    const KNOWN: [(Method, &str); 9] = [
        (Method::GET, "GET"),
        (Method::POST, "POST"),
        (Method::PUT, "PUT"),
        (Method::PATCH, "PATCH"),
        (Method::DELETE, "DELETE"),
        (Method::HEAD, "HEAD"),
        (Method::OPTIONS, "OPTIONS"),
        (Method::CONNECT, "CONNECT"),
        (Method::TRACE, "TRACE"),
    ];
    KNOWN
        .iter()
        .find(|(m, _)| m == method)
        .map_or("other", |(_, name)| name)
}

/// A request answered: `route` is the matched pattern (or `<unmatched>`).
pub fn http_request(method: &'static str, route: &str, status: u16, took: Duration) {
    let Some(m) = get() else { return };
    let route = route.to_string();
    m.http_requests
        .get_or_create(&HttpLabels {
            method,
            route: route.clone(),
            status,
        })
        .inc();
    m.http_duration
        .get_or_create(&RouteLabels { method, route })
        .observe(secs(took));
}

/// A registered run started (`kind`: chat or search).
pub fn run_started(kind: &'static str) {
    if let Some(m) = get() {
        m.runs_live.get_or_create(&KindLabels { kind }).inc();
    }
}

/// A registered run ended: `done`, `error` or `abandoned`.
pub fn run_ended(kind: &'static str, outcome: &'static str) {
    if let Some(m) = get() {
        m.runs_live.get_or_create(&KindLabels { kind }).dec();
        m.runs_ended
            .get_or_create(&RunEndLabels { kind, outcome })
            .inc();
    }
}

/// A run task stopped before its work ended: `shutdown`, `lease_lost` or `panic`.
pub fn run_stopped(reason: &'static str) {
    if let Some(m) = get() {
        m.runs_stopped.get_or_create(&ReasonLabels { reason }).inc();
    }
}

pub fn run_attached(kind: &'static str) {
    if let Some(m) = get() {
        m.attaches.get_or_create(&KindLabels { kind }).inc();
    }
}

pub fn client_disconnected(kind: &'static str) {
    if let Some(m) = get() {
        m.disconnects.get_or_create(&KindLabels { kind }).inc();
    }
}

/// A provider and model as labels: the model named only when `listed` (its provider lists it,
/// or the operator named it), so a client's made-up model id never becomes a label.
#[derive(Clone, Debug)]
pub struct ModelLabel {
    provider: String,
    model: String,
}

impl ModelLabel {
    pub fn new(provider: &str, model: &str, listed: bool) -> Self {
        Self {
            provider: provider.to_string(),
            model: if listed { model } else { UNLISTED_MODEL }.to_string(),
        }
    }

    fn labels(&self) -> ModelLabels {
        ModelLabels {
            provider: self.provider.clone(),
            model: self.model.clone(),
        }
    }
}

/// How one provider turn went.
pub struct TurnRecord {
    pub took: Duration,
    pub first_token: Option<Duration>,
    /// Input and output tokens, when the provider reported them.
    pub tokens: Option<(u64, u64)>,
    /// The failure's kind ([`super::trace`]'s `error.type` too), if it failed.
    pub error: Option<&'static str>,
}

pub fn provider_turn(label: &ModelLabel, turn: &TurnRecord) {
    let Some(m) = get() else { return };
    let labels = label.labels();
    m.provider_turns.get_or_create(&labels).inc();
    m.provider_duration
        .get_or_create(&labels)
        .observe(secs(turn.took));
    if let Some(first) = turn.first_token {
        m.provider_first_token
            .get_or_create(&labels)
            .observe(secs(first));
    }
    if let Some((input, output)) = turn.tokens {
        for (direction, n) in [("input", input), ("output", output)] {
            m.provider_tokens
                .get_or_create(&TokenLabels {
                    provider: label.provider.clone(),
                    model: label.model.clone(),
                    direction,
                })
                .inc_by(n);
        }
    }
    if let Some(kind) = turn.error {
        m.provider_errors
            .get_or_create(&ProviderErrorLabels {
                provider: label.provider.clone(),
                model: label.model.clone(),
                kind,
            })
            .inc();
    }
}

/// A provider turn the upstream refused is tried again; `kind` is the refusal's error kind.
pub fn provider_retry(provider: &str, kind: &'static str) {
    if let Some(m) = get() {
        m.provider_retries
            .get_or_create(&RetryLabels {
                provider: provider.to_string(),
                kind,
            })
            .inc();
    }
}

/// A first turn `provider` could not answer goes to `fallback` (both operator ids).
pub fn provider_fallback(provider: &str, fallback: &str) {
    if let Some(m) = get() {
        m.provider_fallbacks
            .get_or_create(&FallbackLabels {
                provider: provider.to_string(),
                fallback: fallback.to_string(),
            })
            .inc();
    }
}

/// A model call of person `user` recorded in the ledger: its tokens, and its cost in nano-USD
/// when it has a price.
pub fn spent(user: &str, input_tokens: u64, output_tokens: u64, cost_nanos: Option<i64>) {
    if let Some(m) = get() {
        for (direction, n) in [("input", input_tokens), ("output", output_tokens)] {
            m.spend_tokens
                .get_or_create(&UserTokenLabels {
                    user: user.to_string(),
                    direction,
                })
                .inc_by(n);
        }
        if let Some(nanos) = cost_nanos {
            m.spend_usd
                .get_or_create(&UserLabels {
                    user: user.to_string(),
                })
                .inc_by(nanos as f64 / 1e9);
        }
    }
}

/// A request of person `user` refused because a budget was spent.
pub fn budget_refused(user: &str) {
    if let Some(m) = get() {
        m.budget_refusals
            .get_or_create(&UserLabels {
                user: user.to_string(),
            })
            .inc();
    }
}

/// A client stopped a run of `kind`.
pub fn run_cancelled(kind: &'static str) {
    if let Some(m) = get() {
        m.runs_cancelled.get_or_create(&KindLabels { kind }).inc();
    }
}

/// A tool call ended; `tool` is an enabled tool's name or [`UNKNOWN_TOOL`].
pub fn tool_call(tool: &str, ok: bool, took: Duration) {
    let Some(m) = get() else { return };
    let outcome = if ok { "ok" } else { "error" };
    m.tool_calls
        .get_or_create(&ToolLabels {
            tool: tool.to_string(),
            outcome,
        })
        .inc();
    m.tool_duration
        .get_or_create(&ToolNameLabels {
            tool: tool.to_string(),
        })
        .observe(secs(took));
}

/// A call into a plugin's sandbox ended: `ok`, `trap` or `timeout`; `memory_cap` when it was
/// refused memory past its cap.
pub fn plugin_call(plugin: &str, outcome: &'static str, memory_cap: bool) {
    let Some(m) = get() else { return };
    m.plugin_calls
        .get_or_create(&PluginCallLabels {
            plugin: plugin.to_string(),
            outcome,
        })
        .inc();
    if memory_cap {
        m.plugin_memory_cap
            .get_or_create(&PluginLabels {
                plugin: plugin.to_string(),
            })
            .inc();
    }
}

/// A PLUGINS_DIR file was loaded (`plugin`: its id) or refused (`plugin`: its file's stem).
pub fn plugin_load(plugin: &str, loaded: bool) {
    if let Some(m) = get() {
        m.plugin_loads
            .get_or_create(&PluginCallLabels {
                plugin: plugin.to_string(),
                outcome: if loaded { "loaded" } else { "refused" },
            })
            .inc();
    }
}

pub fn config_reload(applied: bool) {
    if let Some(m) = get() {
        m.config_reloads
            .get_or_create(&OutcomeLabels {
                outcome: if applied { "applied" } else { "refused" },
            })
            .inc();
    }
}

/// A store operation ended.
pub fn store_query(backend: &'static str, operation: &'static str, took: Duration, ok: bool) {
    let Some(m) = get() else { return };
    let labels = QueryLabels { backend, operation };
    m.store_queries.get_or_create(&labels).observe(secs(took));
    if !ok {
        m.store_errors.get_or_create(&labels).inc();
    }
}

/// The plugin instances' kept memory now (set at each scrape).
pub fn plugin_memory_kept(bytes: usize) {
    if let Some(m) = get() {
        m.plugin_memory_kept
            .set(i64::try_from(bytes).unwrap_or(i64::MAX));
    }
}

/// The pool's connections now (set at each scrape).
pub fn store_pool(backend: &'static str, in_use: u32, idle: u32) {
    let Some(m) = get() else { return };
    for (state, n) in [("in_use", in_use), ("idle", idle)] {
        m.store_pool
            .get_or_create(&PoolLabels { backend, state })
            .set(i64::from(n));
    }
}

/// PostgreSQL: a batch of run events committed, its oldest event having waited `waited`.
pub fn run_event_lag(waited: Duration) {
    if let Some(m) = get() {
        m.run_event_lag.observe(secs(waited));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_methods_and_unlisted_models_are_fixed_words() {
        let odd = axum::http::Method::from_bytes(b"FUZZ").unwrap();
        assert_eq!(method_label(&odd), "other");
        assert_eq!(method_label(&axum::http::Method::PATCH), "PATCH");
        let label = ModelLabel::new("provider_a", "made-up <model>", false);
        assert_eq!(label.model, UNLISTED_MODEL);
        assert_eq!(ModelLabel::new("p", "m", true).model, "m");
    }

    #[test]
    fn the_text_holds_every_family_with_its_help() {
        http_request("GET", "/v1/chats", 200, Duration::from_millis(3));
        let text = render();
        assert!(text.contains("# HELP chatd_http_requests HTTP requests answered"));
        assert!(text.contains("chatd_http_request_duration_seconds_bucket{"));
        assert!(text.contains("# TYPE chatd_run_event_write_lag_seconds histogram"));
        assert!(text.ends_with("# EOF\n"));
    }
}
