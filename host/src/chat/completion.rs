//! One chat completion: the model↔tool loop over a provider plugin and the tool plugins.
//!
//! A round is one provider turn. When it asks for tools, each call is announced (`initiated`),
//! run in its tool plugin (the calls of a round run concurrently), logged as a `tool` message
//! before its terminal `tool_call` event, and answered to the model in the next round. At most
//! `max_rounds` rounds of tool calls run; a model still asking after that gets a tool-limit
//! message as the answer.
//!
//! Text order: the contract's stream is `meta → tool_call* → delta* → done`. With tools enabled a
//! round's text is held until the round ends: if the round asked for tools, its text stays in the
//! transcript the model sees next and never becomes a delta; otherwise it is released as deltas,
//! piece by piece. Without tools there is nothing to decide and deltas go out as they arrive.
//!
//! A failing tool is a failed call the model sees, never a failed run. A failing provider ends the
//! completion with [`CompletionError`].

use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};

use super::events::{ChatEvent, ToolCallEvent, ToolStatus, Usage};
use crate::model::{Role, now, to_millis};
use crate::plugins::CallError;
use crate::plugins::load::Plugin;
use crate::plugins::provider::{
    self as wit, ContentPart, PluginError, ToolResult, ToolSpec, TurnEvent, TurnRequest,
};
use crate::plugins::refs::Refs;
use crate::runs::RunLog;
use crate::store::{NewMessage, Store, StoreError};
use crate::telemetry::{metrics, trace};
use tracing::Instrument as _;

/// Events a provider may get ahead of the loop before its `emit` waits.
const TURN_EVENT_BUFFER: usize = 64;
/// The longest `resultPreview`, in characters.
const PREVIEW_CHARS: usize = 400;
/// The longest `summary`, in characters.
const SUMMARY_CHARS: usize = 120;

/// A tool the model may call in this completion, and the plugin that runs it.
#[derive(Clone)]
pub struct EnabledTool {
    pub spec: ToolSpec,
    pub plugin: Arc<Plugin>,
}

/// Everything one completion needs.
pub struct Completion {
    pub provider: String,
    pub model: String,
    pub plugin: Arc<Plugin>,
    /// The transcript, system prompts first.
    pub messages: Vec<wit::Message>,
    pub tools: Vec<EnabledTool>,
    pub temperature: Option<f32>,
    pub max_tokens: Option<u32>,
    /// Whether the provider streams from its upstream.
    pub streaming: bool,
    pub max_rounds: u32,
    /// Whether the provider lists the model (or the operator named it): only then is the
    /// model named in metrics (`telemetry::metrics::ModelLabel`).
    pub listed: bool,
}

/// What a finished completion produced.
#[derive(Debug)]
pub struct Finished {
    /// The assistant's answer: exactly the concatenated deltas.
    pub text: String,
    /// Summed over the rounds; `None` when the provider reported none.
    pub usage: Option<Usage>,
    /// The last upstream response (non-streaming turns only).
    pub raw: Option<Value>,
}

#[derive(Debug, thiserror::Error)]
pub enum CompletionError {
    /// The provider's upstream failed, or its plugin did.
    #[error("{provider}: {detail}")]
    Provider {
        provider: String,
        detail: String,
        /// What had been counted before the failure.
        usage: Option<Usage>,
        /// The request was refused for what the client sent ([`refused_request`]), not for a
        /// failure of the upstream or the plugin.
        refused: bool,
    },
    #[error("could not store the tool call: {0}")]
    Store(#[from] StoreError),
    /// The call's own record could not be written, so its tool calls cannot be either.
    #[error("the request could not be stored")]
    NotRecorded,
}

impl CompletionError {
    pub fn usage(&self) -> Option<Usage> {
        match self {
            CompletionError::Provider { usage, .. } => *usage,
            CompletionError::Store(_) | CompletionError::NotRecorded => None,
        }
    }
}

/// Where a completion's events and tool logs go: a run's log (streams) and a chat (persisted).
/// Both optional: a non-streaming completion keeps no log, a `persist: false` stream no chat.
pub struct Sink {
    pub log: Option<Arc<RunLog>>,
    pub chat: Option<ChatWriter>,
}

/// The chat a completion's tool calls are stored in.
pub struct ChatWriter {
    pub store: Store,
    pub chat_id: String,
    /// Whether the call's own record (and the history rows before it) is written: `None` while
    /// it is being written beside the first turn. Tool rows wait for it, so they come after the
    /// history in the transcript.
    pub recorded: watch::Receiver<Option<bool>>,
}

impl Sink {
    pub fn emit(&self, event: &ChatEvent) {
        if let Some(log) = &self.log {
            log.push(event.name(), &event.data(), event.is_terminal());
        }
    }

    async fn store_tool_log(&self, message: NewMessage) -> Result<(), CompletionError> {
        if let Some(chat) = &self.chat {
            let mut recorded = chat.recorded.clone();
            match recorded.wait_for(Option::is_some).await.map(|r| *r) {
                Ok(Some(true)) => {}
                _ => return Err(CompletionError::NotRecorded),
            }
            chat.store.append_message(&chat.chat_id, message).await?;
        }
        Ok(())
    }
}

/// The words the contract's error events and 502 bodies carry for a provider's failure.
pub fn describe_plugin_error(error: &PluginError) -> String {
    match error {
        PluginError::Upstream(e) if e.status > 0 => {
            format!("upstream answered {}: {}", e.status, e.message)
        }
        PluginError::Upstream(e) => format!("upstream error: {}", e.message),
        PluginError::Transport(m) => format!("upstream connection failed: {m}"),
        PluginError::MalformedResponse(m) => format!("malformed upstream response: {m}"),
        PluginError::Denied(m) => format!("request denied by the host: {m}"),
        PluginError::InvalidInput(m) => format!("invalid request: {m}"),
        PluginError::Unsupported(m) => format!("not supported: {m}"),
        PluginError::Internal(m) => format!("plugin error: {m}"),
    }
}

/// Whether a provider's failure is the request's fault rather than the upstream's or the
/// plugin's: the plugin found the input invalid before calling (a parameter the model does not
/// take), or the upstream refused it as invalid (400), for a model it does not have (404), as
/// too large (413) or as unprocessable (422). Not 401, 403 or 429: the operator's key and quota
/// are not the client's doing.
pub fn refused_request(error: &PluginError) -> bool {
    match error {
        PluginError::InvalidInput(_) => true,
        PluginError::Upstream(e) => matches!(e.status, 400 | 404 | 413 | 422),
        _ => false,
    }
}

/// A failed turn's kind, as metrics and traces name it (a fixed word).
fn error_kind(
    result: &Result<Result<wit::TurnOutcome, PluginError>, CallError>,
) -> Option<&'static str> {
    Some(match result {
        Ok(Ok(_)) => return None,
        Ok(Err(PluginError::Upstream(e))) => match e.status {
            400..=499 => "upstream_4xx",
            500..=599 => "upstream_5xx",
            _ => "upstream",
        },
        Ok(Err(PluginError::Transport(_))) => "transport",
        Ok(Err(PluginError::MalformedResponse(_))) => "malformed_response",
        Ok(Err(PluginError::Denied(_))) => "denied",
        Ok(Err(PluginError::InvalidInput(_))) => "invalid_input",
        Ok(Err(PluginError::Unsupported(_))) => "unsupported",
        Ok(Err(PluginError::Internal(_))) => "internal",
        Err(CallError::Trap { .. }) => "trap",
        Err(CallError::Timeout { .. }) => "timeout",
    })
}

/// The words for a plugin call that trapped or ran out of time.
pub fn describe_call_error(error: &CallError) -> String {
    match error {
        CallError::Trap { reason, .. } => format!("the plugin failed: {reason}"),
        CallError::Timeout { after, .. } => {
            format!("no answer within the plugin's {} s limit", after.as_secs())
        }
    }
}

impl Completion {
    /// When the request sets `temperature` or `maxTokens`, has the provider build its first
    /// turn's upstream request and drops it, so that a parameter the model does not take is
    /// refused before anything is stored or sent (`refused: true`, a 400). For a provider that
    /// takes references (`plugins/refs.rs`), whose large values need not be copied for it.
    pub async fn check(&self) -> Result<(), CompletionError> {
        let Some(provider) = self.plugin.as_provider() else {
            return Ok(());
        };
        let sets_parameters = self.temperature.is_some() || self.max_tokens.is_some();
        if !sets_parameters || !provider.takes_references() {
            return Ok(());
        }
        let request = TurnRequest {
            model: self.model.clone(),
            messages: Refs::stand_ins(&self.messages),
            tools: self.tools.iter().map(|t| t.spec.clone()).collect(),
            temperature: self.temperature,
            max_tokens: self.max_tokens,
            streaming: self.streaming,
            may_continue: !self.tools.is_empty(),
            continuation: None,
        };
        match provider.check(request).await {
            Ok(Err(error)) if matches!(error, PluginError::InvalidInput(_)) => {
                Err(CompletionError::Provider {
                    provider: self.provider.clone(),
                    detail: describe_plugin_error(&error),
                    usage: None,
                    refused: true,
                })
            }
            // A call that failed says nothing of the request; the turn will show it, as the
            // contract's error.
            Err(error) => {
                tracing::warn!(provider = self.provider.as_str(), error = %describe_call_error(&error),
                    "the provider's check of a request failed");
                Ok(())
            }
            // Anything else shows in the turn itself, as the contract's error.
            _ => Ok(()),
        }
    }

    /// Runs the loop to its answer, reporting `tool_call` and `delta` events to `sink` (the
    /// caller sends `meta` before and `done`/`error` after).
    pub async fn run(mut self, sink: &Sink) -> Result<Finished, CompletionError> {
        let provider_id = self.provider.as_str();
        // A provider that takes references gets the large values (attachments, long texts) as
        // tokens, filled in as its request is sent: its sandbox holds the turn's small parts.
        let mut refs = self
            .plugin
            .as_provider()
            .is_some_and(|p| p.takes_references())
            .then(Refs::new)
            .map(|mut refs| {
                refs.take_large(&mut self.messages);
                Arc::new(refs)
            });
        let hold_text = !self.tools.is_empty();
        let specs: Vec<ToolSpec> = self.tools.iter().map(|t| t.spec.clone()).collect();
        let mut usage: Option<Usage> = None;
        let mut continuation = None;
        let mut raw = None;
        let mut rounds = 0u32;
        loop {
            let request = TurnRequest {
                model: self.model.clone(),
                // Without tools this is the only round: the transcript (attachments included)
                // moves into the request instead of being copied.
                messages: if specs.is_empty() {
                    std::mem::take(&mut self.messages)
                } else {
                    self.messages.clone()
                },
                tools: specs.clone(),
                temperature: self.temperature,
                max_tokens: self.max_tokens,
                streaming: self.streaming,
                may_continue: !specs.is_empty(),
                continuation: continuation.take(),
            };
            let mut turn = self.turn(request, refs.clone(), hold_text, sink).await;
            if let Some(u) = turn.usage {
                let total = usage.get_or_insert_with(Usage::default);
                total.input_tokens += u.input_tokens;
                total.output_tokens += u.output_tokens;
                total.total_tokens += u.total_tokens;
            }
            let outcome = match turn.result.expect("a finished turn has its result") {
                Ok(Ok(outcome)) => outcome,
                Ok(Err(error)) => {
                    return Err(CompletionError::Provider {
                        provider: provider_id.to_string(),
                        detail: describe_plugin_error(&error),
                        usage,
                        // Only the first turn is the client's request as sent; a later one also
                        // carries what the model and the tools added.
                        refused: rounds == 0 && refused_request(&error),
                    });
                }
                Err(error) => {
                    return Err(CompletionError::Provider {
                        provider: provider_id.to_string(),
                        detail: describe_call_error(&error),
                        usage,
                        refused: false,
                    });
                }
            };
            if let Some(json) = outcome.raw_json {
                raw = Some(serde_json::from_str(&json).unwrap_or(Value::String(json)));
            }
            let text = std::mem::take(&mut turn.text);
            if turn.calls.is_empty() {
                for piece in &turn.held {
                    sink.emit(&ChatEvent::Delta(piece.clone()));
                }
                return Ok(Finished { text, usage, raw });
            }
            if rounds >= self.max_rounds {
                let limit = format!(
                    "I stopped after {rounds} rounds of tool calls, the limit for one reply \
                     (CHAT_MAX_TOOL_ROUNDS), before reaching an answer."
                );
                let text = if text.trim().is_empty() {
                    limit
                } else {
                    format!("{text}\n\n{limit}")
                };
                sink.emit(&ChatEvent::Delta(text.clone()));
                return Ok(Finished { text, usage, raw });
            }
            rounds += 1;
            continuation = turn.continuation;
            // Boxed: the tools run between turns, and inline their state would be part of the
            // run's future, and so of the memory a live stream holds, for the whole run.
            let results = Box::pin(self.run_tools(&turn.calls, sink)).await?;
            let mut content = Vec::new();
            if !text.is_empty() {
                content.push(ContentPart::Text(text));
            }
            let assistant = wit::Message {
                role: wit::Role::Assistant,
                content,
                tool_calls: turn.calls,
                tool_result: None,
            };
            let mut added: Vec<wit::Message> = std::iter::once(assistant)
                .chain(results.into_iter().map(|result| wit::Message {
                    role: wit::Role::Tool,
                    content: Vec::new(),
                    tool_calls: Vec::new(),
                    tool_result: Some(result),
                }))
                .collect();
            // The turn that used the values is over, so this is their one holder; were it not,
            // the new messages would simply stay inline.
            if let Some(refs) = refs.as_mut().and_then(Arc::get_mut) {
                refs.take_large(&mut added);
            }
            self.messages.extend(added);
        }
    }

    /// One provider turn, its events read while it runs, in a span of its own and recorded in
    /// the provider metrics.
    async fn turn(
        &self,
        request: TurnRequest,
        refs: Option<Arc<Refs>>,
        hold_text: bool,
        sink: &Sink,
    ) -> Turn {
        let span = trace::provider_turn(&self.provider, &self.model);
        let started = Instant::now();
        let turn = self
            .turn_events(request, refs, hold_text, sink, started)
            .instrument(span.clone())
            .await;
        let error = turn.result.as_ref().and_then(error_kind);
        let tokens = turn.usage.map(|u| (u.input_tokens, u.output_tokens));
        trace::provider_turn_end(&span, tokens, error);
        let record = metrics::TurnRecord {
            took: started.elapsed(),
            first_token: turn.first_token,
            tokens,
            error,
        };
        metrics::provider_turn(
            &metrics::ModelLabel::new(&self.provider, &self.model, self.listed),
            &record,
        );
        turn
    }

    async fn turn_events(
        &self,
        request: TurnRequest,
        refs: Option<Arc<Refs>>,
        hold_text: bool,
        sink: &Sink,
        started: Instant,
    ) -> Turn {
        let provider = self
            .plugin
            .as_provider()
            .expect("the caller checked the plugin's kind");
        let (tx, mut rx) = mpsc::channel(TURN_EVENT_BUFFER);
        let call = provider.turn(request, refs, tx);
        tokio::pin!(call);
        let mut turn = Turn::default();
        let mut result = None;
        let mut drained = false;
        // Until both the call has returned and its channel is drained (the sender lives in the
        // call's store, so the channel closes when the call is done).
        while result.is_none() || !drained {
            tokio::select! {
                // Events first: what the plugin emitted before returning is handled before
                // its result.
                biased;
                event = rx.recv(), if !drained => match event {
                    Some(event) => {
                        let first = matches!(&event, TurnEvent::TextDelta(t) if !t.is_empty())
                            || matches!(event, TurnEvent::ToolCall(_));
                        if first && turn.first_token.is_none() {
                            turn.first_token = Some(started.elapsed());
                        }
                        turn.take(event, hold_text, sink)
                    }
                    None => drained = true,
                },
                r = &mut call, if result.is_none() => result = Some(r),
            }
        }
        turn.result = result;
        turn
    }

    /// Runs a round's tool calls concurrently; returns their results in call order.
    async fn run_tools(
        &self,
        calls: &[wit::ToolCall],
        sink: &Sink,
    ) -> Result<Vec<ToolResult>, CompletionError> {
        let mut started = Vec::with_capacity(calls.len());
        for call in calls {
            let args = parse_args(&call.arguments_json);
            let event = ToolCallEvent {
                tool_call_id: call.id.clone(),
                name: call.name.clone(),
                status: ToolStatus::Initiated,
                summary: summarize(&call.name, &args),
                args,
                started_at: to_millis(&now()),
                completed_at: None,
                duration_ms: None,
                result_preview: None,
                error: None,
            };
            sink.emit(&ChatEvent::ToolCall(event.clone()));
            started.push(event);
        }
        let mut running: FuturesUnordered<_> = calls
            .iter()
            .enumerate()
            .map(|(i, call)| async move {
                let tool = self.tool_label(&call.name);
                let span = trace::tool_call(tool, &call.id);
                let clock = Instant::now();
                let outcome = self.invoke(call).instrument(span.clone()).await;
                let took = clock.elapsed();
                metrics::tool_call(tool, outcome.is_ok(), took);
                trace::failed(&span, outcome.is_err().then_some("tool_error"));
                (i, outcome, took)
            })
            .collect();
        let mut results: Vec<Option<ToolResult>> = vec![None; calls.len()];
        while let Some((i, outcome, took)) = running.next().await {
            let call = &calls[i];
            let mut event = started[i].clone();
            event.completed_at = Some(to_millis(&now()));
            event.duration_ms = Some(took.as_millis() as u64);
            let (output, is_error) = match outcome {
                Ok((content, summary)) => {
                    event.status = ToolStatus::Completed;
                    if let Some(summary) = summary.filter(|s| !s.trim().is_empty()) {
                        event.summary = cut(&summary, SUMMARY_CHARS);
                    }
                    event.result_preview = Some(cut(&content, PREVIEW_CHARS));
                    (content, false)
                }
                Err(error) => {
                    event.status = ToolStatus::Failed;
                    event.error = Some(error.clone());
                    (format!("Error: {error}"), true)
                }
            };
            sink.store_tool_log(tool_log(&event, &output)).await?;
            sink.emit(&ChatEvent::ToolCall(event));
            results[i] = Some(ToolResult {
                call_id: call.id.clone(),
                name: call.name.clone(),
                output,
                is_error,
            });
        }
        Ok(results.into_iter().flatten().collect())
    }

    /// The tool's name for metrics and traces: an enabled tool's, or `unknown` for a name the
    /// model made up (model output never becomes a label).
    fn tool_label(&self, name: &str) -> &str {
        self.tools
            .iter()
            .find(|t| t.spec.name == name)
            .map_or(metrics::UNKNOWN_TOOL, |t| t.spec.name.as_str())
    }

    /// Runs one call in its plugin: the output and the tool's summary, or why it failed.
    async fn invoke(&self, call: &wit::ToolCall) -> Result<(String, Option<String>), String> {
        let Some(tool) = self.tools.iter().find(|t| t.spec.name == call.name) else {
            return Err(format!(
                "the tool {} is not enabled for this chat",
                call.name
            ));
        };
        let plugin = tool.plugin.as_tool().expect("tool plugins are tools");
        match plugin.invoke(&call.name, &call.arguments_json).await {
            Ok(Ok(output)) => Ok((output.content, output.summary)),
            Ok(Err(error)) => Err(tool_error(&error)),
            Err(error) => Err(describe_call_error(&error)),
        }
    }
}

/// What one provider turn produced.
#[derive(Default)]
struct Turn {
    /// The turn's text so far.
    text: String,
    /// Its pieces, kept only while they are held back (a turn that may call tools sends its
    /// text once it turns out to be the answer, piece by piece as it came).
    held: Vec<String>,
    calls: Vec<wit::ToolCall>,
    usage: Option<Usage>,
    continuation: Option<String>,
    result: Option<Result<Result<wit::TurnOutcome, PluginError>, CallError>>,
    /// When its first text or tool call arrived, from its start.
    first_token: Option<std::time::Duration>,
}

impl Turn {
    fn take(&mut self, event: TurnEvent, hold_text: bool, sink: &Sink) {
        match event {
            TurnEvent::TextDelta(text) => {
                if text.is_empty() {
                    return;
                }
                self.text.push_str(&text);
                if hold_text {
                    self.held.push(text);
                } else {
                    sink.emit(&ChatEvent::Delta(text));
                }
            }
            // Without tools offered, a call is the model's own mistake: the turn stays final (its
            // text already went out as deltas, and the order is meta → tool_call* → delta*).
            TurnEvent::ToolCall(call) if hold_text => self.calls.push(call),
            TurnEvent::ToolCall(_) => {}
            // The last report of a turn counts.
            TurnEvent::Usage(u) => {
                self.usage = Some(Usage {
                    input_tokens: u.input_tokens,
                    output_tokens: u.output_tokens,
                    total_tokens: u.total_tokens,
                })
            }
            TurnEvent::Continuation(state) => self.continuation = Some(state),
        }
    }
}

/// A tool's own error, as the model and the UI see it.
fn tool_error(error: &PluginError) -> String {
    match error {
        PluginError::InvalidInput(m) => format!("invalid arguments: {m}"),
        other => describe_plugin_error(other),
    }
}

/// The arguments as a JSON object; anything else is shown under `_raw`.
fn parse_args(text: &str) -> Value {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Value::Object(map),
        _ if text.trim().is_empty() => json!({}),
        _ => json!({ "_raw": text }),
    }
}

/// A one-line description of a call: its name and the first string argument (the query, the
/// URL, the command).
fn summarize(name: &str, args: &Value) -> String {
    let first = args
        .as_object()
        .and_then(|map| map.values().find_map(Value::as_str));
    match first {
        Some(value) => cut(&format!("{name}: {}", value.trim()), SUMMARY_CHARS),
        None => name.to_string(),
    }
}

fn cut(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

/// The stored `tool` message of a finished call.
fn tool_log(event: &ToolCallEvent, output: &str) -> NewMessage {
    let mut metadata = serde_json::to_value(event).expect("tool events serialize");
    if let Value::Object(map) = &mut metadata {
        map.insert("kind".into(), json!("tool_call"));
    }
    NewMessage {
        role: Role::Tool,
        content: output.to_string(),
        name: Some(event.name.clone()),
        metadata: Some(metadata),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_and_previews_are_one_bounded_line() {
        assert_eq!(
            summarize("web_search", &json!({"query": " rust ", "n": 3})),
            "web_search: rust"
        );
        assert_eq!(summarize("x", &json!({"n": 3})), "x");
        assert_eq!(cut("héllo", 2), "hé…");
        assert_eq!(parse_args("[1]"), json!({"_raw": "[1]"}));
        assert_eq!(parse_args(""), json!({}));
    }

    #[test]
    fn a_tool_log_carries_the_call_metadata() {
        let event = ToolCallEvent {
            tool_call_id: "c".into(),
            name: "fetch_url".into(),
            status: ToolStatus::Failed,
            summary: "fetch_url: x".into(),
            args: json!({"url": "x"}),
            started_at: "s".into(),
            completed_at: Some("e".into()),
            duration_ms: Some(3),
            result_preview: None,
            error: Some("boom".into()),
        };
        let log = tool_log(&event, "Error: boom");
        assert_eq!(log.role, Role::Tool);
        let meta = log.metadata.unwrap();
        assert_eq!(meta["kind"], "tool_call");
        assert_eq!(meta["status"], "failed");
        assert_eq!(meta["args"], json!({"url": "x"}));
        assert_eq!(meta["durationMs"], 3);
    }
}
