//! One chat completion: the model↔tool loop over a provider plugin and the tool plugins.
//!
//! A round is one provider turn. When it asks for tools, each call is announced (`initiated`),
//! run in its tool plugin (`tool_calls.rs`), and answered to the model in the next round. At
//! most `max_rounds` rounds of tool calls run; a model still asking after that gets a tool-limit
//! message as the answer.
//!
//! Text streams as it arrives, with tools on too: a round's kind is decided by what the upstream
//! says first (`round.rs` has the rule and what happens to text before a tool call). A turn the
//! upstream refused before answering is tried again (`retry.rs`), and a first turn whose tries
//! are exhausted may go to the operator's fallback provider. A client's stop
//! ([`crate::runlog::Stop`]) drops the turn (and its upstream request) or the tool calls running,
//! and the completion ends with the text sent so far ([`Finished::stopped`]).
//!
//! A failing tool is a failed call the model sees, never a failed run. A failing provider ends the
//! completion with [`CompletionError`].

use crate::plugins::failure::{describe_call_error, describe_plugin_error};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use tokio::sync::mpsc;

use super::events::Usage;
use super::failure::{CompletionError, error_kind, refused_request};
use super::kept;
use super::paid::Paying;
use super::retry;
use super::round::{Reply, Turn};
use super::sink::Sink;
use super::strict;
use super::tool_calls::{self, Ran};
use crate::config::retry::RetryPolicy;
use crate::plugins::loading::load::Plugin;
use crate::plugins::runtime::CallError;
use crate::plugins::worlds::provider::references::Refs;
use crate::plugins::worlds::provider::turn_options::{self, OptionKind, ToolChoice};
use crate::plugins::worlds::provider::turn_tuning::{self, Tuning, TuningKind};
use crate::plugins::worlds::provider::{
    self as wit, ContentPart, PluginError, ToolResult, ToolSpec, TurnAsks, TurnRequest,
    UpstreamSeen,
};
use crate::telemetry::{metrics, trace};
use crate::tools::enabled::EnabledTool;
use crate::tools::python::{CallContext, Container, SessionKey, inputs};
use crate::usage::Spender;
use tracing::Instrument as _;

/// Events a provider may get ahead of the loop before its `emit` waits.
const TURN_EVENT_BUFFER: usize = 64;

/// Everything one completion needs.
pub struct Completion {
    pub provider: String,
    pub model: String,
    pub plugin: Arc<Plugin>,
    /// The transcript, system prompts first.
    pub messages: Vec<wit::Message>,
    pub tools: Vec<EnabledTool>,
    /// Tools the client runs (OpenAI's wire): offered to the model beside `tools`; a turn that
    /// calls one ends the completion with its calls ([`Finished::client_calls`]).
    pub client_tools: Vec<ToolSpec>,
    pub temperature: Option<f32>,
    pub max_tokens: Option<u32>,
    /// What the turns ask beyond temperature and max tokens (OpenAI's wire): the options, each
    /// one the provider honours ([`Profile::options`](crate::plugins::worlds::provider::Profile)),
    /// a tool choice that names or requires a call holding for the first round only, so the
    /// tool loop can end; and the tuning the provider honours of what the client asked
    /// ([`Completion::tuning_asked`]).
    pub asks: Arc<TurnAsks>,
    /// The tuning the client asked for, whoever answers: a fallback gets the kinds it honours.
    pub tuning_asked: Tuning,
    /// Whether the provider streams from its upstream.
    pub streaming: bool,
    pub max_rounds: u32,
    /// Whether the provider lists the model (or the operator named it): only then is the
    /// model named in metrics (`telemetry::metrics::ModelLabel`).
    pub listed: bool,
    /// How a turn the upstream refused is tried again.
    pub retry: RetryPolicy,
    /// Who answers a first turn whose tries were exhausted.
    pub fallback: Option<Fallback>,
    /// The `python` tool's container of an `/openai/v1` request (no chat): its session, where
    /// its files are kept; `None` elsewhere.
    pub container: Option<Container>,
    /// Whose account each turn is recorded in (`usage/`); `None` when nothing is recorded.
    pub spender: Option<Arc<Spender>>,
}

/// Another provider and model for a first turn the requested one could not answer.
pub struct Fallback {
    pub provider: String,
    pub model: String,
    pub plugin: Arc<Plugin>,
    pub listed: bool,
    /// Its profile takes the host's tools (else it runs without them).
    pub tools: bool,
    /// The turn options its profile honours.
    pub options: Vec<OptionKind>,
    /// The tuning its profile honours.
    pub tuning: Vec<TuningKind>,
    /// Its own retry policy (its fallback is not followed: one hop).
    pub retry: RetryPolicy,
}

/// What a finished completion produced.
#[derive(Debug, Default)]
pub struct Finished {
    /// The assistant's answer: exactly the concatenated deltas.
    pub text: String,
    /// Summed over the rounds; `None` when the provider reported none.
    pub usage: Option<Usage>,
    /// The last upstream response (non-streaming turns only).
    pub raw: Option<Value>,
    /// A client stopped the run: `text` is what was sent until then.
    pub stopped: bool,
    /// The fallback's provider and model, when the fallback answered.
    pub fallback: Option<(String, String)>,
    /// The last turn's calls, when it called a client's tool: the client runs them.
    pub client_calls: Vec<wit::ToolCall>,
    /// Why the last turn's model stopped, as its provider said (`None` when no turn answered:
    /// stopped before).
    pub finish: Option<wit::FinishReason>,
    /// The rounds of chatd's tools before `client_calls` (`chat/kept.rs`), to keep for the
    /// client's next request under those calls' ids; empty when there were none.
    pub kept: Vec<wit::Message>,
}

impl Finished {
    /// Keeps `rounds` for the client's next request: its calls get ids of chatd's own, which
    /// the store keeps them under ([`kept::mint_id`]).
    fn keep(&mut self, mut rounds: Vec<wit::Message>) {
        if rounds.is_empty() {
            return;
        }
        for call in &mut self.client_calls {
            call.id = kept::mint_id();
        }
        // The kept calls get ids of chatd's too: an upstream that numbers its calls from 0
        // would give two kept rounds of one conversation the same ids, which upstreams refuse.
        kept::renumber(&mut rounds);
        self.kept = rounds;
    }

    /// The completion's end, with the reply as sent.
    fn ended(mut self, reply: Reply, stopped: bool) -> Self {
        self.text = reply.into_text();
        self.stopped = stopped;
        self
    }
}

impl Completion {
    /// When the request sets `temperature`, `maxTokens` or a turn option, has the provider build its first
    /// turn's upstream request and drops it, so that a parameter the model does not take is
    /// refused before anything is stored or sent (`refused: true`, a 400). For a provider that
    /// takes references (`plugins/worlds/provider/references.rs`), whose large values need not be copied for it.
    pub async fn check(&self) -> Result<(), CompletionError> {
        let Some(provider) = self.plugin.as_provider() else {
            return Ok(());
        };
        let sets_parameters = self.temperature.is_some()
            || self.max_tokens.is_some()
            || !turn_options::kinds(&self.asks.options).is_empty()
            || !turn_tuning::kinds(&self.asks.tuning).is_empty();
        if !sets_parameters || !provider.takes_references() {
            return Ok(());
        }
        let request = TurnRequest {
            model: self.model.clone(),
            messages: Refs::stand_ins(&self.messages),
            tools: self.specs(),
            temperature: self.temperature,
            max_tokens: self.max_tokens,
            streaming: self.streaming,
            may_continue: !self.tools.is_empty() || !self.client_tools.is_empty(),
            continuation: None,
        };
        match provider.check(request, self.asks.clone()).await {
            Ok(Err(error)) if matches!(error, PluginError::InvalidInput(_)) => {
                Err(CompletionError::Provider {
                    provider: self.provider.clone(),
                    detail: describe_plugin_error(&error),
                    usage: None,
                    refused: true,
                    upstream_status: None,
                    retry_after: None,
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
    /// caller sends `meta` before and `done`/`error` after). Its account's hold ends with it.
    /// Once: the completion is spent after it (its transcript, fallback and asks used up).
    ///
    /// By reference, not by value: an `async fn` keeps a copy of each argument it is given
    /// beside the argument itself, so a `Completion` (632 bytes) moved down `run` and `rounds`
    /// was held four times in their futures, memory every live stream keeps for its whole run
    /// (BENCHMARKS.md, "Where a live stream's memory goes").
    pub async fn run(&mut self, sink: &Sink) -> Result<Finished, CompletionError> {
        let finished = self.rounds(sink).await;
        if let Some(spender) = &self.spender {
            spender.settle().await;
        }
        finished
    }

    async fn rounds(&mut self, sink: &Sink) -> Result<Finished, CompletionError> {
        let mut refs = self.references();
        let mut reply = Reply::default();
        let mut out = Finished::default();
        let mut continuation = None;
        let mut rounds = 0u32;
        // Where the interpreter runs this completion's calls (its chat's session, or the run's
        // own), made at the first tool round; a run's own session ends with it.
        let mut context: Option<CallContext> = None;
        // The named provider's failure, once its fallback took over.
        let mut primary_failure: Option<String> = None;
        // The rounds of chatd's tools, when the client's next request may need them.
        let mut kept = Vec::new();
        loop {
            let mut turn = self
                .tried(continuation.take(), refs.clone(), &mut reply, sink)
                .await;
            add_usage(&mut out.usage, turn.usage);
            let outcome = match turn.result.take() {
                None => return Ok(out.ended(reply, true)),
                Some(Ok(Ok(outcome))) => outcome,
                Some(result) => {
                    let exhausted =
                        retry::retryable(&result, turn.events, turn.unanswered).is_some();
                    if rounds == 0 && exhausted && self.may_fall_back() {
                        primary_failure =
                            Some(self.failure(result, false, None, None, None).to_string());
                        self.fall_back();
                        out.fallback = Some((self.provider.clone(), self.model.clone()));
                        continue;
                    }
                    let (after, wait) = (primary_failure.as_deref(), turn.retry_after);
                    return Err(self.failed(result, rounds, &out, after, wait));
                }
            };
            // A turn answered: its fallback is needed no more.
            self.fallback = None;
            out.finish = Some(outcome.finish);
            if let Some(json) = outcome.raw_json {
                out.raw = Some(serde_json::from_str(&json).unwrap_or(Value::String(json)));
            }
            if turn.calls.is_empty() {
                return Ok(out.ended(reply, false));
            }
            if self.calls_a_client_tool(&turn.calls) {
                let strict = &self.tuning_asked.strict_tools;
                if let Some(why) = strict::mismatch(&turn.calls, &self.client_tools, strict) {
                    return Err(CompletionError::Provider {
                        provider: self.provider.clone(),
                        detail: why,
                        usage: out.usage,
                        refused: false,
                        upstream_status: None,
                        retry_after: None,
                    });
                }
                let calls = std::mem::take(&mut turn.calls);
                let ran = self.ours_first(
                    calls,
                    rounds,
                    &mut kept,
                    &mut context,
                    refs.as_deref(),
                    sink,
                );
                let Some(theirs) = ran.await? else {
                    return Ok(out.ended(reply, true));
                };
                turn.release_held(&mut reply, sink);
                out.client_calls = theirs;
                out.keep(kept);
                return Ok(out.ended(reply, false));
            }
            if rounds >= self.max_rounds {
                turn.release_held(&mut reply, sink);
                reply.send(&tool_limit(rounds), true, sink);
                return Ok(out.ended(reply, false));
            }
            rounds += 1;
            self.asks = first_round_only(&self.asks);
            continuation = turn.continuation.take();
            let ran = self.run_calls(&turn.calls, sink, &mut context, refs.as_deref());
            let Some(results) = ran.await? else {
                return Ok(out.ended(reply, true));
            };
            // A round that began with a tool call sends its text once its calls have ended, so
            // all of its `tool_call` events come before it.
            turn.release_held(&mut reply, sink);
            if self.keeps_exchanges() {
                kept.extend(round_messages(
                    String::new(),
                    turn.calls.clone(),
                    results.clone(),
                ));
            }
            self.add_round(turn, results, &mut refs);
        }
    }

    /// A turn's calls when one names a client's tool: chatd's run here first, their round
    /// kept for the client's next request, and the rest are the client's. Past the tool limit
    /// chatd's do not run (and are not told of). `None` when the run was stopped.
    async fn ours_first(
        &self,
        calls: Vec<wit::ToolCall>,
        rounds: u32,
        kept: &mut Vec<wit::Message>,
        context: &mut Option<CallContext>,
        refs: Option<&Refs>,
        sink: &Sink,
    ) -> Result<Option<Vec<wit::ToolCall>>, CompletionError> {
        let (ours, theirs): (Vec<_>, Vec<_>) = calls
            .into_iter()
            .partition(|call| self.tools.iter().any(|t| t.spec.name == call.name));
        if !ours.is_empty() && rounds < self.max_rounds {
            let Some(results) = self.run_calls(&ours, sink, context, refs).await? else {
                return Ok(None);
            };
            kept.extend(round_messages(String::new(), ours, results));
        }
        Ok(Some(theirs))
    }

    /// Runs a round's calls of chatd's tools to their results; `None` when the run was stopped.
    async fn run_calls(
        &self,
        calls: &[wit::ToolCall],
        sink: &Sink,
        context: &mut Option<CallContext>,
        refs: Option<&Refs>,
    ) -> Result<Option<Vec<ToolResult>>, CompletionError> {
        let started = tool_calls::announce(calls, sink);
        let context = context.get_or_insert_with(|| self.call_context(sink, refs));
        // Boxed: the tools run between turns, and inline their state would be part of the
        // run's future, and so of the memory a live stream holds, for the whole run.
        let run = tool_calls::run(&self.tools, calls, started, sink, context);
        Ok(match Box::pin(run).await? {
            Ran::All(results) => Some(results),
            Ran::Stopped => None,
        })
    }

    /// Whether the rounds of chatd's tools are kept ([`Finished::kept`]): the client offered
    /// tools beside them, so a turn may end with its calls.
    fn keeps_exchanges(&self) -> bool {
        !self.tools.is_empty() && !self.client_tools.is_empty()
    }

    /// Whether a turn's calls go to the client: any of them names one of its tools. Those
    /// naming chatd's tools run first; a name neither offered goes back with the client's, as
    /// the model said it.
    fn calls_a_client_tool(&self, calls: &[wit::ToolCall]) -> bool {
        calls
            .iter()
            .any(|call| self.client_tools.iter().any(|t| t.name == call.name))
    }

    /// All the tools' specs, chatd's then the client's.
    fn specs(&self) -> Vec<ToolSpec> {
        let ours = self.tools.iter().map(|t| t.spec.clone());
        ours.chain(self.client_tools.iter().cloned()).collect()
    }

    /// The interpreter's context for this completion's tool calls: the chat's session (or one
    /// for this run alone) and the transcript's attachments as its first files.
    fn call_context(&self, sink: &Sink, refs: Option<&Refs>) -> CallContext {
        let resolve = |text: &str| match refs {
            Some(refs) => refs.resolve(text).to_string(),
            None => text.to_string(),
        };
        let (session, store) = match (&self.container, &sink.chat) {
            (Some(container), None) => (
                SessionKey::Container(container.id.clone()),
                Some(container.store.clone()),
            ),
            (_, chat) => (
                SessionKey::for_run(chat.as_ref().map(|c| c.chat_id.as_str())),
                chat.as_ref().map(|c| c.store.clone()),
            ),
        };
        CallContext {
            session,
            inputs: Arc::new(inputs::from_messages(&self.messages, &resolve)),
            store,
            container: self.container.clone().filter(|_| sink.chat.is_none()),
        }
    }

    /// A provider that takes references gets the large values (attachments, long texts) as
    /// tokens, filled in as its request is sent: its sandbox holds the turn's small parts. Only
    /// when the fallback takes them too: the values are not put back.
    fn references(&mut self) -> Option<Arc<Refs>> {
        let takes = |plugin: &Plugin| plugin.as_provider().is_some_and(|p| p.takes_references());
        let by_reference =
            takes(&self.plugin) && self.fallback.as_ref().is_none_or(|f| takes(&f.plugin));
        by_reference.then(Refs::new).map(|mut refs| {
            refs.take_large(&mut self.messages);
            Arc::new(refs)
        })
    }

    /// The error a failed turn ends the completion with. Only the first turn of the provider
    /// the client named is its request as sent: a fallback's refusal is not the client's doing.
    fn failed(
        &self,
        result: Result<Result<wit::TurnOutcome, PluginError>, CallError>,
        rounds: u32,
        out: &Finished,
        primary_failure: Option<&str>,
        retry_after: Option<Duration>,
    ) -> CompletionError {
        let refusable = rounds == 0 && out.fallback.is_none();
        self.failure(result, refusable, out.usage, primary_failure, retry_after)
    }

    /// The round's assistant message (its text and calls) and the calls' results, added to the
    /// transcript the model sees next.
    fn add_round(
        &mut self,
        mut turn: Turn,
        results: Vec<ToolResult>,
        refs: &mut Option<Arc<Refs>>,
    ) {
        let text = std::mem::take(&mut turn.text);
        let mut added = round_messages(text, std::mem::take(&mut turn.calls), results);
        // The turn that used the values is over, so this is their one holder; were it not,
        // the new messages would simply stay inline.
        if let Some(refs) = refs.as_mut().and_then(Arc::get_mut) {
            refs.take_large(&mut added);
        }
        self.messages.extend(added);
    }

    /// Whether a fallback may answer: there is one, it takes tools if the client offered its
    /// own or chose a tool (they would be dropped otherwise: the client asked for them, so the
    /// named provider's failure is the answer), it honours every turn option set, and one call
    /// per turn when that was asked (the other tuning is its own to honour or leave).
    fn may_fall_back(&self) -> bool {
        let asked = turn_options::kinds(&self.asks.options);
        self.fallback.as_ref().is_some_and(|f| {
            // Without tools it would be sent no tools, so neither the client's nor a tool
            // choice (which names, or requires, one of them).
            let tools_needed =
                !self.client_tools.is_empty() || self.asks.options.tool_choice.is_some();
            // And it keeps to what the client asked that changes its answer, as the provider
            // it stands in for does (`turn_tuning::BINDING`).
            let binding = turn_tuning::unhonoured(&self.tuning_asked, &f.tuning).is_empty();
            // And a USD budget pays only for priced models.
            let payable = self
                .spender
                .as_ref()
                .is_none_or(|s| s.may_call(&f.provider, &f.model));
            (f.tools || !tools_needed)
                && binding
                && payable
                && asked.iter().all(|k| f.options.contains(k))
        })
    }

    /// Moves the completion to its fallback, if it has one; whether it did.
    fn fall_back(&mut self) -> bool {
        let Some(to) = self.fallback.take() else {
            return false;
        };
        metrics::provider_fallback(&self.provider, &to.provider);
        tracing::warn!(
            provider = self.provider.as_str(),
            fallback = to.provider.as_str(),
            "the provider's tries were exhausted; its fallback answers"
        );
        self.provider = to.provider;
        self.model = to.model;
        self.plugin = to.plugin;
        self.listed = to.listed;
        self.retry = to.retry;
        // The tuning the fallback honours of what was asked (the rest is the host's or left).
        let mut asks = TurnAsks::clone(&self.asks);
        asks.tuning = turn_tuning::only(&self.tuning_asked, &to.tuning);
        self.asks = Arc::new(asks);
        if !to.tools {
            // Without tools the tool loop's instruction would only mislead the model.
            self.tools.clear();
            self.messages.retain(|m| {
                !(matches!(m.role, wit::Role::System)
                    && matches!(m.content.as_slice(),
                        [ContentPart::Text(t)] if t == super::TOOL_LOOP_INSTRUCTION))
            });
        }
        true
    }

    /// The completion's error for a turn that failed. `refusable`: the turn is the client's
    /// request as sent (the first turn of the provider it named), so a refusal of it is the
    /// client's doing ([`refused_request`]). `after`: the named provider's failure, when this
    /// was its fallback's. `retry_after`: the wait the upstream asked for.
    fn failure(
        &self,
        result: Result<Result<wit::TurnOutcome, PluginError>, CallError>,
        refusable: bool,
        usage: Option<Usage>,
        after: Option<&str>,
        retry_after: Option<Duration>,
    ) -> CompletionError {
        let upstream_status = match &result {
            Ok(Err(PluginError::Upstream(e))) => Some(e.status),
            _ => None,
        };
        let (mut detail, refused) = match result {
            Ok(Err(error)) => (
                describe_plugin_error(&error),
                refusable && refused_request(&error),
            ),
            Err(error) => (describe_call_error(&error), false),
            Ok(Ok(_)) => unreachable!("a failure is an error"),
        };
        if let Some(after) = after {
            detail = format!("{detail} (the fallback, after {after})");
        }
        CompletionError::Provider {
            provider: self.provider.clone(),
            detail,
            usage,
            refused,
            upstream_status,
            retry_after,
        }
    }

    /// One round's turn, tried again while the upstream refuses it before answering
    /// (`retry.rs`), waiting what it asks within the policy's budget. A stop during a wait
    /// ends the round as stopped.
    async fn tried(
        &mut self,
        continuation: Option<String>,
        refs: Option<Arc<Refs>>,
        reply: &mut Reply,
        sink: &Sink,
    ) -> Turn {
        // Each try gets a copy of the transcript. Without tools this is the only round: once
        // its turn has given an event it is not tried again, and the copy kept for a new try is
        // let go (`turn_events`), so a live stream holds no transcript it will not send.
        let mut transcript = Some(std::mem::take(&mut self.messages));
        let turn = self
            .tries(continuation, refs, reply, sink, &mut transcript)
            .await;
        self.messages = transcript.unwrap_or_default();
        turn
    }

    async fn tries(
        &self,
        continuation: Option<String>,
        refs: Option<Arc<Refs>>,
        reply: &mut Reply,
        sink: &Sink,
        transcript: &mut Option<Vec<wit::Message>>,
    ) -> Turn {
        let specs = self.specs();
        let (mut failed, mut waited) = (0u32, Duration::ZERO);
        loop {
            let request = TurnRequest {
                model: self.model.clone(),
                // With references (chatd's providers) the copy holds no attachment.
                messages: transcript.clone().unwrap_or_default(),
                tools: specs.clone(),
                temperature: self.temperature,
                max_tokens: self.max_tokens,
                streaming: self.streaming,
                may_continue: !specs.is_empty(),
                continuation: continuation.clone(),
            };
            let mut turn = self
                .turn(request, refs.clone(), reply, sink, transcript)
                .await;
            failed += 1;
            let Some(result) = &turn.result else {
                return turn;
            };
            let Some(kind) = retry::retryable(result, turn.events, turn.unanswered) else {
                return turn;
            };
            let Some(wait) = retry::delay(&self.retry, failed, waited, turn.retry_after) else {
                return turn;
            };
            tracing::info!(
                provider = self.provider.as_str(),
                attempt = failed + 1,
                wait_ms = wait.as_millis() as u64,
                "the upstream refused a turn before answering; trying again"
            );
            tokio::select! {
                () = tokio::time::sleep(wait) => waited += wait,
                // Stopped while waiting: the round ends without a result.
                () = sink.stop.requested() => {
                    turn.result = None;
                    return turn;
                }
            }
            metrics::provider_retry(&self.provider, kind);
        }
    }

    /// One provider turn, its events read while it runs, in a span of its own and recorded in
    /// the provider metrics.
    async fn turn(
        &self,
        request: TurnRequest,
        refs: Option<Arc<Refs>>,
        reply: &mut Reply,
        sink: &Sink,
        transcript: &mut Option<Vec<wit::Message>>,
    ) -> Turn {
        let span = trace::provider_turn(&self.provider, &self.model);
        let paying = self.spender.as_ref().map(|_| Paying::new(&request, reply));
        let started = Instant::now();
        let turn = self
            .turn_events(request, refs, reply, sink, started, transcript)
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
        if let (Some(spender), Some(paying)) = (&self.spender, paying) {
            let model = (self.provider.as_str(), self.model.as_str());
            // Boxed: inline, this write's state (4 KiB) would size every turn's future, and
            // so every live stream's, budgets or not.
            Box::pin(paying.record(spender, model, &turn, tokens, reply)).await;
        }
        turn
    }

    async fn turn_events(
        &self,
        request: TurnRequest,
        refs: Option<Arc<Refs>>,
        reply: &mut Reply,
        sink: &Sink,
        started: Instant,
        transcript: &mut Option<Vec<wit::Message>>,
    ) -> Turn {
        let provider = self
            .plugin
            .as_provider()
            .expect("the caller checked the plugin's kind");
        let tools = !self.tools.is_empty() || !self.client_tools.is_empty();
        let (tx, mut rx) = mpsc::channel(TURN_EVENT_BUFFER);
        let seen = UpstreamSeen::default();
        let call = provider.turn_seen(request, self.asks.clone(), refs, tx, &seen);
        tokio::pin!(call);
        let mut turn = Turn::default();
        let mut result = None;
        let mut drained = false;
        // One wait for the whole turn, not one per event.
        let stop = sink.stop.requested();
        tokio::pin!(stop);
        // Until both the call has returned and its channel is drained (the sender lives in the
        // call's store, so the channel closes when the call is done).
        while result.is_none() || !drained {
            tokio::select! {
                // A stop first, then events: what the plugin emitted before returning is
                // handled before its result.
                biased;
                // Returning drops the call, and with it the upstream request; the turn has no
                // result, which says it was stopped.
                () = &mut stop => return turn,
                event = rx.recv(), if !drained => match event {
                    Some(event) => {
                        let first = matches!(&event, wit::TurnEvent::TextDelta(t) if !t.is_empty())
                            || matches!(event, wit::TurnEvent::ToolCall(_));
                        if first && turn.first_token.is_none() {
                            turn.first_token = Some(started.elapsed());
                        }
                        // Answered: no new try, and without tools no next round either.
                        if !tools {
                            *transcript = None;
                        }
                        turn.take(event, tools, reply, sink)
                    }
                    None => drained = true,
                },
                r = &mut call, if result.is_none() => result = Some(r),
            }
        }
        turn.result = result;
        turn.retry_after = seen.retry_after();
        turn.unanswered = seen.unanswered();
        turn
    }
}

/// What the rounds after the first ask: a tool choice that requires a call, or names one, was
/// the first round's (held on every round it would never let the loop end); `none`, the other
/// options and the tuning hold throughout.
fn first_round_only(asks: &Arc<TurnAsks>) -> Arc<TurnAsks> {
    match asks.options.tool_choice {
        Some(ToolChoice::Required | ToolChoice::Named(_)) => {
            let mut asks = TurnAsks::clone(asks);
            asks.options.tool_choice = None;
            Arc::new(asks)
        }
        _ => asks.clone(),
    }
}

/// A round as the transcript holds it: the assistant's text and calls, then each result.
fn round_messages(
    text: String,
    calls: Vec<wit::ToolCall>,
    results: Vec<ToolResult>,
) -> Vec<wit::Message> {
    let content = if text.is_empty() {
        Vec::new()
    } else {
        vec![ContentPart::Text(text)]
    };
    let assistant = wit::Message {
        role: wit::Role::Assistant,
        content,
        tool_calls: calls,
        tool_result: None,
    };
    std::iter::once(assistant)
        .chain(results.into_iter().map(|result| wit::Message {
            role: wit::Role::Tool,
            content: Vec::new(),
            tool_calls: Vec::new(),
            tool_result: Some(result),
        }))
        .collect()
}

/// Adds a turn's usage to the completion's.
fn add_usage(total: &mut Option<Usage>, turn: Option<Usage>) {
    if let Some(u) = turn {
        let total = total.get_or_insert_with(Usage::default);
        total.input_tokens += u.input_tokens;
        total.output_tokens += u.output_tokens;
        total.total_tokens += u.total_tokens;
    }
}

/// The answer of a model still asking for tools after the last round allowed.
fn tool_limit(rounds: u32) -> String {
    format!(
        "I stopped after {rounds} rounds of tool calls, the limit for one reply \
         (CHAT_MAX_TOOL_ROUNDS), before reaching an answer."
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::worlds::provider::UpstreamError;

    #[test]
    fn refusals_are_the_requests_fault_only_for_what_the_client_sent() {
        let status = |status| {
            PluginError::Upstream(UpstreamError {
                status,
                message: String::new(),
            })
        };
        assert!(refused_request(&status(400)));
        assert!(!refused_request(&status(429)));
        assert!(refused_request(&PluginError::InvalidInput("x".into())));
    }
}
