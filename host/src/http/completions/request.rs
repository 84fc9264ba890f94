//! A completion request, validated into what runs: each front's body read into the one [`Ask`]
//! (the contract's [`CompletionRequest`] here; `/openai/v1`'s in `http/openai/`), then
//! [`prepare_with`]'s shared checks: the provider's plugin, the model, the transcript the provider
//! gets, the tools, the fallback and the attachments it accepts. Nothing is stored or sent until
//! all of it holds.

use crate::people::Caller;
use crate::runs::chat::ChatRun;
use std::sync::Arc;

use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::super::AppState;
use super::super::chats::{CHAT_NOT_FOUND, MessageInput, new_messages, system_prompt};
use super::super::error::{ApiError, ApiResult};
use super::super::limits::{self, MAX_MODEL_CHARS};
use crate::chat::completion::{Completion, Fallback};
use crate::chat::{TOOL_LOOP_INSTRUCTION, history};
use crate::plugins::loading::load::Plugin;
use crate::plugins::loading::snapshot::{ServedProvider, Snapshot};
use crate::plugins::worlds::provider as wit;
use crate::plugins::worlds::provider::{TurnAsks, turn_options, turn_tuning};
use crate::store::{ChatSettings, MessageRecord, NewMessage};
use crate::tools::Offer;
use crate::tools::enabled::EnabledTool;
use crate::tools::python::Container;
use crate::usage::{DEFAULT_MAX_OUTPUT, Source};
use crate::vocabulary::Role;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompletionRequest {
    /// An existing chat; its new history rows are stored.
    pub chat_id: Option<String>,
    /// A provider this server has (`GET /v1/models` lists them).
    pub provider: String,
    pub model: String,
    /// The history, oldest first; at least one message.
    pub messages: Vec<MessageInput>,
    /// A one-off system prompt, sent first and never stored.
    pub additional_system_prompt: Option<String>,
    /// Tools for this request; omitted: the chat's setting, else every tool; empty: none.
    pub enabled_tools: Option<Vec<String>>,
    /// 0 to 2.
    pub temperature: Option<f64>,
    /// 1 to 1,000,000.
    #[serde(default, deserialize_with = "crate::vocabulary::whole::option_u64")]
    pub max_tokens: Option<u64>,
    /// Streaming only (default true): false writes nothing and needs no `chatId`.
    pub persist: Option<bool>,
}

/// What OpenAI's wire (`http/openai/`) adds to a completion that the contract's request does
/// not carry: the client's own tools, offered to the model but run by the client; its tool
/// exchange, row by row of `messages` ([`history::Exchange`]); the turn options beyond
/// temperature and max tokens, each one the provider honours (`http/openai/options.rs` checks);
/// the tuning the client asked (`http/openai/tuning.rs`), of which each provider gets what it
/// honours; and the `python` tool's container (`http/openai/containers.rs`).
pub struct Extras {
    pub specs: Vec<wit::ToolSpec>,
    pub exchange: Vec<Option<history::Exchange>>,
    pub options: turn_options::Options,
    pub tuning: turn_tuning::Tuning,
    /// The `python` tool's container, when the request offers it (`http/openai/files.rs`).
    pub container: Option<Container>,
    /// The route kind its calls are recorded under (`usage/`).
    pub source: Source,
}

impl Default for Extras {
    fn default() -> Self {
        Self {
            specs: Vec::new(),
            exchange: Vec::new(),
            options: turn_options::none(),
            tuning: turn_tuning::none(),
            container: None,
            source: Source::Chat,
        }
    }
}

/// A completion asked for, whichever front it came through (the contract's
/// [`CompletionRequest`], `/openai/v1`'s chat completions and responses): each front checks its
/// own fields in its own words and finds the provider in the snapshot of the request's
/// [`Offer`]; [`prepare_with`] checks what every front shares, once.
pub(in crate::http) struct Ask {
    /// An existing chat; its new history rows are stored.
    pub chat_id: Option<String>,
    /// The provider, as the request's snapshot serves it.
    pub provider: Arc<ServedProvider>,
    /// Checked by [`model`].
    pub model: String,
    pub messages: Vec<MessageInput>,
    /// Where the messages were in the request, for the shared checks' refusals.
    pub origins: Origins,
    pub additional_system_prompt: Option<String>,
    pub enabled_tools: Option<Vec<String>>,
    pub temperature: Option<f32>,
    pub max_tokens: Option<u32>,
}

/// Where an [`Ask`]'s messages were in its request: the field holding them (`messages`, as on
/// the contract's routes, unless a front says otherwise) and, where message `i` is not that
/// field's item `i`, each one's own path (the Responses API's items, after its instructions and
/// with calls joined to the message before them). A shared check's refusal names the field as
/// the client sent it, so no front renames another's errors.
pub(in crate::http) struct Origins {
    list: &'static str,
    each: Vec<String>,
}

impl Default for Origins {
    fn default() -> Self {
        Self::new("messages", Vec::new())
    }
}

impl Origins {
    /// The messages of `list`, message `i` at `each[i]`.
    pub fn new(list: &'static str, each: Vec<String>) -> Self {
        Self { list, each }
    }

    fn list(&self) -> &'static str {
        self.list
    }

    /// Message `i`'s path.
    fn at(&self, i: usize) -> String {
        self.each
            .get(i)
            .cloned()
            .unwrap_or_else(|| format!("{}[{i}]", self.list()))
    }
}

impl CompletionRequest {
    /// The contract's checks of its fields before the shared ones: `provider` one of
    /// `snapshot`'s, `model`, `temperature` and `maxTokens`.
    fn ask(self, snapshot: &Snapshot) -> ApiResult<Ask> {
        let provider = snapshot
            .provider(&self.provider)
            .ok_or_else(|| {
                ApiError::invalid("provider", snapshot.unknown_provider(&self.provider))
            })?
            .clone();
        let model = model(&self.model)?;
        let temperature = temperature(self.temperature)?;
        let max_tokens = max_tokens("maxTokens", self.max_tokens)?;
        Ok(Ask {
            chat_id: self.chat_id,
            provider,
            model,
            messages: self.messages,
            origins: Origins::default(),
            additional_system_prompt: self.additional_system_prompt,
            enabled_tools: self.enabled_tools,
            temperature,
            max_tokens,
        })
    }
}

/// A request's `temperature` (every front's): 0 to 2.
pub(in crate::http) fn temperature(temperature: Option<f64>) -> ApiResult<Option<f32>> {
    match temperature {
        Some(t) if !(t.is_finite() && (0.0..=2.0).contains(&t)) => Err(ApiError::invalid(
            "temperature",
            "must be a number from 0 to 2",
        )),
        t => Ok(t.map(|t| t as f32)),
    }
}

/// A request's limit on its answer's tokens, named `field` on its front: 1 to 1,000,000.
pub(in crate::http) fn max_tokens(field: &str, limit: Option<u64>) -> ApiResult<Option<u32>> {
    match limit {
        Some(n) if !(1..=1_000_000).contains(&n) => Err(ApiError::invalid(
            field,
            format!("must be an integer from 1 to 1000000, not {n}"),
        )),
        n => Ok(n.map(|n| n as u32)),
    }
}

/// A request's `model` (every front's): non-blank, at most [`MAX_MODEL_CHARS`], trimmed.
pub(in crate::http) fn model(model: &str) -> ApiResult<String> {
    limits::optional(Some(model), "model", MAX_MODEL_CHARS)?
        .ok_or_else(|| ApiError::invalid("model", "must be a non-blank string"))
}

/// The contract's request made ready to run: the provider and the caller's tools read from one
/// snapshot, the tools (a look at the store for the caller's MCP logins) once the provider,
/// the model and the sampling hold.
pub(in crate::http) async fn prepare(
    state: &AppState,
    caller: &Caller,
    body: CompletionRequest,
    streaming: bool,
) -> ApiResult<ChatRun> {
    let snapshot = state.plugins.snapshot();
    let ask = body.ask(&snapshot)?;
    let offer = state.tools.offered_in(snapshot, caller.owner()).await;
    prepare_with(state, caller, &offer, ask, streaming, Extras::default()).await
}

/// What every front's [`Ask`] goes through before it runs: the messages, the attachments the
/// provider takes, the chat, the tools of `offer` (the request's one snapshot), the transcript,
/// the provider's own check of its parameters and the caller's budget. Nothing is stored or
/// sent until all of it holds.
pub(in crate::http) async fn prepare_with(
    state: &AppState,
    caller: &Caller,
    offer: &Offer<'_>,
    mut ask: Ask,
    streaming: bool,
    client: Extras,
) -> ApiResult<ChatRun> {
    let provider = Arc::clone(&ask.provider);
    if ask.messages.is_empty() {
        return Err(ApiError::invalid(
            ask.origins.list(),
            "must hold at least one message",
        ));
    }
    let history = new_messages(std::mem::take(&mut ask.messages), |i| ask.origins.at(i))?;
    check_attachments(&provider, &history, &ask.origins)?;
    let (chat, transcript) = owned_chat(state, caller, ask.chat_id.as_deref())
        .await?
        .unzip();
    let transcript = transcript.flatten();
    let plugin = provider_plugin(&provider)?;
    let tools = enabled_tools(offer, &provider, &ask, chat.as_ref());
    let instruction = provider.profile.tool_instruction && !tools.is_empty();
    let messages =
        provider_transcript(&ask, chat.as_ref(), instruction, &history, &client.exchange)?;
    let (temperature, max_tokens) = (ask.temperature, ask.max_tokens);
    let mut completion = Completion {
        provider: provider.id.clone(),
        model: ask.model.clone(),
        plugin,
        messages,
        tools,
        client_tools: client.specs,
        temperature,
        max_tokens,
        asks: Arc::new(TurnAsks {
            options: client.options,
            tuning: turn_tuning::only(&client.tuning, &provider.profile.tuning),
        }),
        tuning_asked: client.tuning,
        streaming,
        max_rounds: state.chat.max_tool_rounds,
        listed: state.models.lists(&provider.id, &ask.model),
        retry: provider.retry.clone(),
        fallback: fallback(state, offer.snapshot(), &provider, &history),
        container: client.container,
        spender: None,
    };
    // A parameter the model does not take is refused now, before anything is stored or sent.
    completion
        .check()
        .await
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let estimate = crate::usage::Ask {
        source: client.source,
        provider: &provider.id,
        model: &ask.model,
        input_tokens: history::token_estimate(&completion.messages),
        max_output_tokens: max_tokens.map_or(DEFAULT_MAX_OUTPUT, u64::from),
    };
    completion.spender = state.admit(caller, &estimate).await?;
    Ok(ChatRun {
        provider: provider.id.clone(),
        model: ask.model,
        chat_id: ask.chat_id,
        history: history.into(),
        transcript,
        new_chat_tools: match &ask.enabled_tools {
            Some(requested) => offer.keep_known(requested),
            None => offer.names(),
        },
        owner: caller.owner().to_string(),
        completion,
    })
}

/// The settings of the chat `id` names, when the caller owns it (another's is not found, as a
/// missing one), and its transcript where the store reads it ahead: the call's record picks the
/// history's new rows from it, unless it grows in between (`Store::chat_to_continue`).
async fn owned_chat(
    state: &AppState,
    caller: &Caller,
    id: Option<&str>,
) -> ApiResult<Option<(ChatSettings, Option<Vec<MessageRecord>>)>> {
    let Some(id) = id else { return Ok(None) };
    let chat = state.store.chat_to_continue(id, caller.owner()).await?;
    chat.map(Some)
        .ok_or_else(|| ApiError::not_found(CHAT_NOT_FOUND))
}

/// What the provider gets: the system prompts (the tool loop's `instruction`, when tools are on
/// for a provider that wants it; the request's or the chat's `additionalSystemPrompt`), then the
/// history. 400 when it gives the model nothing to answer.
fn provider_transcript(
    ask: &Ask,
    chat: Option<&ChatSettings>,
    instruction: bool,
    history: &[NewMessage],
    exchange: &[Option<history::Exchange>],
) -> ApiResult<Vec<wit::Message>> {
    let extra_prompt = match &ask.additional_system_prompt {
        Some(prompt) => system_prompt(Some(prompt))?,
        None => chat.and_then(|c| c.additional_system_prompt.clone()),
    };
    let mut system: Vec<&str> = Vec::new();
    if instruction {
        system.push(TOOL_LOOP_INSTRUCTION);
    }
    if let Some(prompt) = &extra_prompt {
        system.push(prompt);
    }
    let messages = history::to_provider(&system, history, exchange);
    if !history::has_user_turn(&messages) {
        return Err(ApiError::invalid(
            ask.origins.list(),
            "must hold a user message with text or an attachment (blank messages are not sent, \
             and system or tool messages alone give the model nothing to answer)",
        ));
    }
    Ok(messages)
}

/// The tools the model may call: the request's `enabledTools`, else the chat's, else every
/// tool `offer`ed to the caller (none for a provider whose profile declines the host's tools),
/// each with the plugin or MCP session serving it in the offer's snapshot.
fn enabled_tools(
    offer: &Offer,
    provider: &ServedProvider,
    ask: &Ask,
    chat: Option<&ChatSettings>,
) -> Vec<EnabledTool> {
    let names = match (&ask.enabled_tools, chat) {
        _ if !provider.profile.tools => Vec::new(),
        (Some(requested), _) => offer.keep_known(requested),
        (None, Some(chat)) => offer.keep_known(&chat.enabled_tools),
        (None, None) => offer.names(),
    };
    names.iter().filter_map(|name| offer.find(name)).collect()
}

/// The operator's fallback for `provider` (`[retry.providers.ID].fallback`), when this server
/// serves it now and it takes the request's attachments; else none, said in the log.
fn fallback(
    state: &AppState,
    snapshot: &Snapshot,
    provider: &ServedProvider,
    history: &[NewMessage],
) -> Option<Fallback> {
    let wanted = provider.retry.fallback.as_ref()?;
    let usable = snapshot
        .provider(&wanted.provider)
        .and_then(|served| served.plugin.clone().map(|plugin| (served, plugin)))
        .filter(|(served, _)| check_attachments(served, history, &Origins::default()).is_ok());
    let Some((served, plugin)) = usable else {
        tracing::warn!(
            provider = provider.id.as_str(),
            fallback = wanted.provider.as_str(),
            "the provider's fallback is not served now, or does not take this request's \
             attachments; the request has none"
        );
        return None;
    };
    Some(Fallback {
        provider: wanted.provider.clone(),
        model: wanted.model.clone(),
        plugin,
        listed: state.models.lists(&wanted.provider, &wanted.model),
        tools: served.profile.tools,
        options: served.profile.options.clone(),
        tuning: served.profile.tuning.clone(),
        retry: crate::config::retry::RetryPolicy {
            fallback: None,
            ..served.retry.clone()
        },
    })
}

/// The loaded plugin serving `provider`; 503 when nothing serves it now.
pub(crate) fn provider_plugin(provider: &ServedProvider) -> ApiResult<Arc<Plugin>> {
    provider.plugin.clone().ok_or_else(|| {
        let why = provider
            .error
            .as_deref()
            .unwrap_or("no provider plugin is loaded");
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("{}: {why}", provider.id),
        )
    })
}

/// 400 for an attachment the provider's profile says it does not understand, naming it where
/// `origins` says its message was.
fn check_attachments(
    provider: &ServedProvider,
    history: &[NewMessage],
    origins: &Origins,
) -> ApiResult<()> {
    let profile = &provider.profile;
    if profile.images && profile.text_files {
        return Ok(());
    }
    // Only a user message's attachments reach the provider (`chat::history`).
    for (i, message) in history.iter().enumerate() {
        if message.role != Role::User {
            continue;
        }
        let attachments = message
            .metadata
            .as_ref()
            .and_then(|m| m.get("attachments"))
            .and_then(Value::as_array);
        for (j, attachment) in attachments.into_iter().flatten().enumerate() {
            let (refused, kind) = match attachment.get("kind").and_then(Value::as_str) {
                Some("image") => (!profile.images, "images"),
                _ => (!profile.text_files, "text files"),
            };
            if refused {
                return Err(ApiError::invalid(
                    format!("{}.attachments[{j}]", origins.at(i)),
                    format!("provider {} does not take {kind}", provider.id),
                ));
            }
        }
    }
    Ok(())
}
