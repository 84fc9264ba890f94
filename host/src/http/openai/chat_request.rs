//! A `POST /openai/v1/chat/completions` body, checked in OpenAI's words and turned into the
//! completion every front asks for (`http::completions::Ask`, without a chat), so the run is the
//! one `/v1` runs: the same shared checks, attachment rules, tool loop, retries and fallback.
//!
//! A field chatd does not honour is refused naming it, never dropped: the client asked for a
//! behaviour it would not get. A field at its no-op value (`top_p: 1`, `stop: []`, `null`) is
//! accepted, as clients send those by default. The messages are read by hand
//! ([`messages`]) so that every refusal names its path (`messages[2].content[1].type`).
//!
//! The Responses API's body comes here too (`responses_request.rs`): its items read into
//! messages already, its other fields moved here as sent, and [`Wire::Responses`] telling each
//! reader where they are and what a refusal names.

use serde::Deserialize;
use serde_json::{Map, Value};

use std::collections::HashMap;

use super::client_tools::{self, SentCall, ToolNames};
use super::errors::OpenAiError;
use super::options;
use super::tuning;
use super::wire::Wire;
use crate::attachments::AttachmentInput;
use crate::chat::history::Exchange;
use crate::http::chats::MessageInput;
use crate::http::completions::{self, Ask, Extras, Origins};
use crate::plugins::loading::snapshot::{ServedProvider, Snapshot};
use crate::plugins::worlds::provider as wit;
use crate::tools::Offer;
use crate::vocabulary::Role;
use std::sync::Arc;

#[derive(Debug, Deserialize)]
pub struct ChatCompletionRequest {
    pub model: String,
    pub messages: Vec<Value>,
    #[serde(default)]
    pub stream: Option<bool>,
    /// `{"include_usage": bool}`, read by [`ChatCompletionRequest::include_usage`].
    #[serde(default)]
    pub stream_options: Option<Value>,
    #[serde(default)]
    pub temperature: Option<f64>,
    #[serde(default, deserialize_with = "crate::vocabulary::whole::option_u64")]
    pub max_tokens: Option<u64>,
    #[serde(default, deserialize_with = "crate::vocabulary::whole::option_u64")]
    pub max_completion_tokens: Option<u64>,
    /// chatd's own tools (names of `GET /v1/chat-tools`) run on the server; none when omitted.
    #[serde(default)]
    pub chatd_tools: Option<Vec<String>>,
    /// The `python` tool's session to continue (`files.rs`): a container's id an earlier
    /// answer gave.
    #[serde(default)]
    pub chatd_session: Option<Value>,
    /// The client's own function tools (`client_tools.rs`).
    #[serde(default)]
    pub tools: Option<Value>,
    #[serde(default)]
    pub tool_choice: Option<Value>,
    /// `parallel_tool_calls`, `reasoning_effort`, `seed`, `verbosity`, the penalties and
    /// `logit_bias` are read by `tuning.rs`.
    #[serde(default)]
    pub parallel_tool_calls: Option<Value>,
    #[serde(default)]
    pub presence_penalty: Option<Value>,
    #[serde(default)]
    pub frequency_penalty: Option<Value>,
    #[serde(default)]
    pub logit_bias: Option<Value>,
    #[serde(default)]
    pub reasoning_effort: Option<Value>,
    #[serde(default)]
    pub seed: Option<Value>,
    #[serde(default)]
    pub verbosity: Option<Value>,
    /// `top_p`, `stop` and `response_format` are read with `tool_choice` by `options.rs`.
    #[serde(default)]
    pub top_p: Option<Value>,
    #[serde(default)]
    pub stop: Option<Value>,
    #[serde(default)]
    pub response_format: Option<Value>,
    /// Every other field: each is checked by [`refuse_unhonoured`].
    #[serde(flatten)]
    pub other: Map<String, Value>,
    /// The API the fields came through, for where each is and what a refusal names: chat
    /// completions' when this is its body, the Responses API's when `responses_request.rs`
    /// moved its fields here as they were sent.
    #[serde(skip)]
    pub wire: Wire,
}

/// Whether `value` is what the field means when it is left out: accepted, as it asks for
/// nothing chatd does not do.
fn no_op(name: &str, value: &Value) -> bool {
    if value.is_null() {
        return true;
    }
    let empty = |v: &Value| {
        v.as_array().is_some_and(Vec::is_empty) || v.as_object().is_some_and(Map::is_empty)
    };
    match name {
        "n" => value.as_f64() == Some(1.0),
        "functions" | "metadata" => empty(value),
        "modalities" => value == &serde_json::json!(["text"]),
        // The deprecated `functions` are never offered, so none may be called either way.
        "function_call" => value == "none" || value == "auto",
        "logprobs" | "store" => value == &Value::Bool(false),
        "service_tier" => value == "auto" || value == "default",
        // An end user's id, for the client's own records: accepted, sent nowhere.
        "user" | "safety_identifier" => value.is_string(),
        _ => false,
    }
}

/// Refuses every field the front door does not honour yet (a 400 naming it).
fn refuse_unhonoured(other: &Map<String, Value>) -> Result<(), OpenAiError> {
    match other.iter().find(|(name, value)| !no_op(name, value)) {
        None => Ok(()),
        Some((name, _)) => Err(unsupported(name)),
    }
}

/// The provider and the model of `PROVIDER/MODEL`, when `snapshot` serves the provider.
fn split_model(
    snapshot: &Snapshot,
    id: &str,
) -> Result<(Arc<ServedProvider>, String), OpenAiError> {
    let (provider, model) = id
        .split_once('/')
        .filter(|(_, model)| !model.is_empty())
        .and_then(|(provider, model)| Some((snapshot.provider(provider)?.clone(), model)))
        .ok_or_else(|| OpenAiError::model_not_found(id))?;
    Ok((provider, completions::model(model)?))
}

impl ChatCompletionRequest {
    /// Whether a stream ends with a usage chunk (`stream_options.include_usage`); the options
    /// are refused without `stream: true`, as OpenAI refuses them.
    pub fn include_usage(&self) -> Result<bool, OpenAiError> {
        let Some(options) = self.stream_options.as_ref().filter(|v| !v.is_null()) else {
            return Ok(false);
        };
        if self.stream != Some(true) {
            return Err(OpenAiError::bad_request(
                "stream_options",
                "stream_options: only allowed when stream is true",
            ));
        }
        let Some(options) = options.as_object() else {
            return Err(OpenAiError::bad_request(
                "stream_options",
                "stream_options: must be an object",
            ));
        };
        let mut include_usage = false;
        for (name, value) in options {
            let param = format!("stream_options.{name}");
            match (name.as_str(), value) {
                ("include_usage", Value::Bool(b)) => include_usage = *b,
                ("include_usage", Value::Null) => {}
                ("include_usage", _) => {
                    return Err(OpenAiError::bad_request(
                        &param,
                        format!("{param}: must be true or false"),
                    ));
                }
                _ => return Err(unsupported(&param)),
            }
        }
        Ok(include_usage)
    }

    /// The completion asked for, without a chat, and what the contract's request does not
    /// carry: the client's own tools and its tool exchange, under the names of [`ToolNames`].
    /// `offer`: chatd's tools offered to the caller, and the request's one plugin snapshot.
    pub fn into_contract(self, offer: &Offer<'_>) -> Result<Contracted, OpenAiError> {
        self.contract(offer, None)
    }

    /// [`ChatCompletionRequest::into_contract`], with the messages a front read itself (the
    /// Responses API's input items, each naming its own fields) in place of `messages`.
    pub(super) fn contract(
        mut self,
        offer: &Offer<'_>,
        read: Option<Vec<ReadMessage>>,
    ) -> Result<Contracted, OpenAiError> {
        refuse_unhonoured(&self.other)?;
        let (served, model) = split_model(offer.snapshot(), &self.model)?;
        let temperature = completions::temperature(self.temperature)?;
        let max_tokens = self.max_tokens()?;
        let chatd_offered = offer.names();
        let ours = chatd_tools(&served, &chatd_offered, self.chatd_tools.take())?;
        let tools = client_tools::parse_tools(self.tools.as_ref(), self.wire)?;
        if !tools.is_empty() {
            offers_client_tools(&served)?;
        }
        let read = match read {
            Some(read) => read,
            None => messages(&self.messages)?,
        };
        let Apart {
            inputs,
            exchange,
            paths,
        } = apart(read, &served)?;
        let called = exchange.iter().flatten().flat_map(|sent| match sent {
            Sent::Calls(calls) => calls.iter().map(|c| c.name.as_str()).collect(),
            Sent::Result { .. } => Vec::new(),
        });
        let reserved = chatd_offered.iter().cloned().collect();
        let names = ToolNames::new(
            tools.iter().map(|t| t.name.as_str()).chain(called),
            &reserved,
        );
        let exchange = answered(exchange, &paths, &names)?;
        let specs = names.specs(&tools);
        let client: Vec<String> = specs.iter().map(|s| s.name.clone()).collect();
        let offered = options::Offered {
            client: &client,
            chatd: &ours,
            names: &names,
        };
        // Every value is checked before what the provider honours, so a bad value is refused
        // as such whichever provider is asked.
        let options = self.options(&offered)?;
        let tuning = self.tuning(!ours.is_empty(), &tools, &names)?;
        options::honoured_by(self.wire, &options, &served.id, &served.profile)?;
        tuning::honoured_by(&tuning, &served.id, &served.profile)?;
        let origins = paths.into_iter().map(|p| p.at).collect();
        Ok(Contracted {
            session: self.chatd_session,
            request: Ask {
                chat_id: None,
                provider: served,
                model,
                messages: inputs,
                origins: Origins::new(self.wire.messages(), origins),
                additional_system_prompt: None,
                enabled_tools: Some(ours),
                temperature,
                max_tokens,
            },
            client: Extras {
                specs,
                exchange,
                options,
                tuning,
                container: None,
                source: crate::usage::Source::Openai,
            },
            names,
        })
    }

    /// The limit on the answer's tokens, by either of its names.
    fn max_tokens(&self) -> Result<Option<u32>, OpenAiError> {
        Ok(match (self.max_tokens, self.max_completion_tokens) {
            (Some(_), Some(_)) => {
                return Err(OpenAiError::bad_request(
                    "max_tokens",
                    "max_tokens: send it or max_completion_tokens, not both",
                ));
            }
            (Some(n), None) => completions::max_tokens("max_tokens", Some(n))?,
            (None, n) => completions::max_tokens(self.wire.max_completion_tokens(), n)?,
        })
    }

    /// The turn options asked (`options.rs`).
    fn options(
        &self,
        offered: &options::Offered,
    ) -> Result<wit::turn_options::Options, OpenAiError> {
        let asked = options::Asked {
            wire: self.wire,
            top_p: self.top_p.as_ref(),
            stop: self.stop.as_ref(),
            tool_choice: self.tool_choice.as_ref(),
            response_format: self.response_format.as_ref(),
        };
        options::read(&asked, offered)
    }

    /// The turn tuning asked (`tuning.rs`); `chatd_tools` whether any of chatd's tools is
    /// offered beside `tools`.
    fn tuning(
        &self,
        chatd_tools: bool,
        tools: &[client_tools::ClientTool],
        names: &ToolNames,
    ) -> Result<wit::turn_tuning::Tuning, OpenAiError> {
        let asked = tuning::Asked {
            wire: self.wire,
            parallel_tool_calls: self.parallel_tool_calls.as_ref(),
            reasoning_effort: self.reasoning_effort.as_ref(),
            seed: self.seed.as_ref(),
            verbosity: self.verbosity.as_ref(),
            presence_penalty: self.presence_penalty.as_ref(),
            frequency_penalty: self.frequency_penalty.as_ref(),
            logit_bias: self.logit_bias.as_ref(),
        };
        let any_tool = !tools.is_empty() || chatd_tools;
        tuning::read(&asked, any_tool, names.strict(tools))
    }
}

/// The messages read, apart: the contract's rows, what each carries beside its row, and where
/// each was.
struct Apart {
    inputs: Vec<MessageInput>,
    exchange: Vec<Option<Sent>>,
    paths: Vec<MessagePath>,
}

/// `read` apart; a client's calls or results are refused for a provider that takes no client
/// tools.
fn apart(read: Vec<ReadMessage>, served: &ServedProvider) -> Result<Apart, OpenAiError> {
    let mut inputs = Vec::with_capacity(read.len());
    let mut exchange = Vec::with_capacity(read.len());
    let mut paths = Vec::with_capacity(read.len());
    for message in read {
        inputs.push(message.input);
        exchange.push(message.sent);
        paths.push(message.path);
    }
    if let Some(i) = exchange.iter().position(Option::is_some)
        && !served.profile.tools
    {
        let field = match exchange[i] {
            Some(Sent::Calls(_)) => paths[i].calls.clone(),
            _ => paths[i].call_id(),
        };
        return Err(OpenAiError::invalid(
            &field,
            &format!(
                "{} takes no tools of a client's (it runs its own)",
                served.id
            ),
        ));
    }
    Ok(Apart {
        inputs,
        exchange,
        paths,
    })
}

/// A request read: the completion asked for, the client's tools, and their names both ways.
pub struct Contracted {
    /// `chatd_session`, as sent (`files::container` reads it).
    pub session: Option<Value>,
    pub request: Ask,
    pub client: Extras,
    pub names: ToolNames,
}

/// What a message carries beside the contract's row: an assistant's calls, or the id of the
/// call a `tool` message answers.
#[derive(Debug)]
pub(super) enum Sent {
    Calls(Vec<SentCall>),
    Result { call_id: String },
}

/// A message as a front read it: the contract's row, what it carries beside it, and where it
/// was, for a refusal of its calls found once the tools are known.
#[derive(Debug)]
pub(super) struct ReadMessage {
    pub input: MessageInput,
    pub sent: Option<Sent>,
    pub path: MessagePath,
}

/// Where a message was in the request, and how its front spells the fields of a call.
#[derive(Debug)]
pub(super) struct MessagePath {
    /// `messages[2]`, `input[3]`.
    pub at: String,
    /// The field naming the call a tool result answers: `tool_call_id`, `call_id`.
    pub call_id: &'static str,
    /// Where an assistant's calls are: its `tool_calls` (`messages[2].tool_calls`), or the
    /// first of the items they were read from (the Responses API's `function_call`s,
    /// `input[4]`).
    pub calls: String,
}

impl MessagePath {
    fn call_id(&self) -> String {
        format!("{}.{}", self.at, self.call_id)
    }
}

/// The client's tools need a provider that takes tools.
fn offers_client_tools(provider: &ServedProvider) -> Result<(), OpenAiError> {
    if !provider.profile.tools {
        return Err(OpenAiError::bad_request(
            "tools",
            format!(
                "tools: {} takes no tools of a client's (it runs its own)",
                provider.id
            ),
        ));
    }
    Ok(())
}

/// The exchange row by row under the WIT's names; a `tool` message must answer a call of an
/// earlier assistant message.
fn answered(
    sent: Vec<Option<Sent>>,
    paths: &[MessagePath],
    names: &ToolNames,
) -> Result<Vec<Option<Exchange>>, OpenAiError> {
    let mut called: HashMap<String, String> = HashMap::new();
    sent.into_iter()
        .enumerate()
        .map(|(i, sent)| {
            Ok(match sent {
                None => None,
                Some(Sent::Calls(calls)) => Some(Exchange::Calls {
                    calls: calls
                        .into_iter()
                        .map(|call| {
                            let name = names.wit(&call.name);
                            called.insert(call.id.clone(), name.clone());
                            wit::ToolCall {
                                id: call.id,
                                name,
                                arguments_json: call.arguments,
                            }
                        })
                        .collect(),
                    // Filled in from the store (`kept.rs`).
                    before: Vec::new(),
                }),
                Some(Sent::Result { call_id }) => {
                    let Some(name) = called.get(&call_id).cloned() else {
                        return Err(invalid(
                            &paths[i].call_id(),
                            "must be the id of a call in an earlier assistant message's tool_calls",
                        ));
                    };
                    Some(Exchange::Result { call_id, name })
                }
            })
        })
        .collect()
}

/// The server tools a request names: each must be one `GET /v1/chat-tools` lists, and a
/// provider whose profile declines chatd's tools (provider_agent, which runs its own) takes none.
fn chatd_tools(
    provider: &ServedProvider,
    known: &[String],
    names: Option<Vec<String>>,
) -> Result<Vec<String>, OpenAiError> {
    let names = names.unwrap_or_default();
    if names.is_empty() {
        return Ok(names);
    }
    if !provider.profile.tools {
        return Err(OpenAiError::bad_request(
            "chatd_tools",
            format!(
                "chatd_tools: {} takes none of chatd's tools (it runs its own)",
                provider.id
            ),
        ));
    }
    if let Some(unknown) = names.iter().find(|n| !known.contains(n)) {
        return Err(OpenAiError::bad_request(
            "chatd_tools",
            format!(
                "chatd_tools: {} is not a tool of this server (GET /v1/chat-tools lists them)",
                crate::http::error::quoted(unknown)
            ),
        ));
    }
    Ok(names)
}

/// The messages as the contract's, each one's images as attachments, and beside each what the
/// contract's row does not carry.
fn messages(messages: &[Value]) -> Result<Vec<ReadMessage>, OpenAiError> {
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| message(&format!("messages[{i}]"), m))
        .collect()
}

/// One message: its role, its content, an assistant's calls or the call a `tool` message
/// answers, and nothing else that asks for more than chatd does.
fn message(path: &str, message: &Value) -> Result<ReadMessage, OpenAiError> {
    let Some(fields) = message.as_object() else {
        return Err(invalid(path, "must be an object"));
    };
    let role = role(path, fields.get("role"))?;
    let mut sent = None;
    for (name, value) in fields {
        let read = match (name.as_str(), role, value) {
            ("role" | "content", ..) => true,
            (_, _, Value::Null) => true,
            ("tool_calls", Role::Assistant, Value::Array(calls)) => {
                let calls = client_tools::parse_calls(&format!("{path}.tool_calls"), calls)?;
                sent = (!calls.is_empty()).then_some(Sent::Calls(calls));
                true
            }
            ("tool_call_id", Role::Tool, Value::String(id)) => {
                sent = Some(Sent::Result {
                    call_id: id.clone(),
                });
                true
            }
            // A participant's name: accepted, and sent nowhere (no provider's turn carries
            // one; docs/openai.md).
            ("name", _, Value::String(_)) => true,
            // `refusal`, `audio`, `function_call`, …: null or refused.
            _ => false,
        };
        if !read {
            return Err(unsupported(&format!("{path}.{name}")));
        }
    }
    let path = MessagePath {
        at: path.to_string(),
        call_id: "tool_call_id",
        calls: format!("{path}.tool_calls"),
    };
    if role == Role::Tool && sent.is_none() {
        return Err(untold_call(&path));
    }
    let input = content(&path.at, role, fields.get("content"), chat_part)?;
    Ok(ReadMessage { input, sent, path })
}

/// A message's role, as either API names it.
pub(super) fn role(path: &str, role: Option<&Value>) -> Result<Role, OpenAiError> {
    match role.and_then(Value::as_str) {
        Some("system" | "developer") => Ok(Role::System),
        Some("user") => Ok(Role::User),
        Some("assistant") => Ok(Role::Assistant),
        Some("tool") => Ok(Role::Tool),
        Some("function") => Err(unsupported(&format!("{path}.role"))),
        _ => Err(invalid(
            &format!("{path}.role"),
            "must be one of system, developer, user, assistant, tool",
        )),
    }
}

/// The refusal of a `tool` message that names no call.
pub(super) fn untold_call(path: &MessagePath) -> OpenAiError {
    invalid(
        &path.call_id(),
        "must be the id of the call this message answers",
    )
}

/// A content part, as a front's reader of parts finds it.
pub(super) enum Part<'a> {
    /// Its text, unless it is not a string.
    Text(Option<&'a str>),
    /// An image: its URL and detail, each with the path a refusal of it names.
    Image {
        url: Option<&'a Value>,
        url_at: String,
        detail: Option<&'a Value>,
        detail_at: String,
    },
}

/// A chat completions part: `{"type": "text", "text"}` or `{"type": "image_url", "image_url":
/// {"url", "detail"}}`.
fn chat_part<'a>(at: &str, part: &'a Value) -> Result<Part<'a>, OpenAiError> {
    match part.get("type").and_then(Value::as_str) {
        Some("text") => Ok(Part::Text(part.get("text").and_then(Value::as_str))),
        Some("image_url") => Ok(Part::Image {
            url: part.pointer("/image_url/url"),
            url_at: format!("{at}.image_url.url"),
            detail: part.pointer("/image_url/detail"),
            detail_at: format!("{at}.image_url.detail"),
        }),
        _ => Err(invalid(
            &format!("{at}.type"),
            "must be text or image_url (the part types served here)",
        )),
    }
}

/// A message's content as the contract's row: a string, or parts (read by `part`: their text
/// joined with a blank line, a user's images as attachments); an assistant's may be absent.
pub(super) fn content<'a>(
    path: &str,
    role: Role,
    content: Option<&'a Value>,
    part: impl Fn(&str, &'a Value) -> Result<Part<'a>, OpenAiError>,
) -> Result<MessageInput, OpenAiError> {
    let (text, images) = match content {
        Some(Value::String(text)) => (text.clone(), Vec::new()),
        Some(Value::Array(parts)) => content_parts(path, role, parts, part)?,
        None | Some(Value::Null) if role == Role::Assistant => (String::new(), Vec::new()),
        _ => {
            return Err(invalid(
                &format!("{path}.content"),
                "must be a string or an array of content parts",
            ));
        }
    };
    Ok(MessageInput {
        role,
        content: text,
        name: None,
        attachments: (!images.is_empty()).then_some(images),
    })
}

/// A message's parts: its text parts joined with a blank line, its images as attachments (a
/// user's only; a data URL only: chatd fetches nothing a client names).
fn content_parts<'a>(
    path: &str,
    role: Role,
    parts: &'a [Value],
    part: impl Fn(&str, &'a Value) -> Result<Part<'a>, OpenAiError>,
) -> Result<(String, Vec<AttachmentInput>), OpenAiError> {
    let mut texts = Vec::new();
    let mut images = Vec::new();
    for (j, value) in parts.iter().enumerate() {
        let at = format!("{path}.content[{j}]");
        match part(&at, value)? {
            Part::Text(Some(text)) => texts.push(text.to_string()),
            Part::Text(None) => return Err(invalid(&format!("{at}.text"), "must be a string")),
            Part::Image { .. } if role != Role::User => {
                return Err(invalid(&at, "only a user message may carry an image"));
            }
            Part::Image {
                url,
                url_at,
                detail,
                detail_at,
            } => images.push(image(url, &url_at, detail, &detail_at)?),
        }
    }
    Ok((texts.join("\n\n"), images))
}

/// An image part: a data URL (checked as every attachment is, later), at the default detail.
fn image(
    url: Option<&Value>,
    url_at: &str,
    detail: Option<&Value>,
    detail_at: &str,
) -> Result<AttachmentInput, OpenAiError> {
    let Some(url) = url.and_then(Value::as_str) else {
        return Err(invalid(url_at, "must be a string"));
    };
    if !url.starts_with("data:") {
        return Err(invalid(
            url_at,
            "must be a data: URL (data:image/png;base64,…); chatd fetches no URL a client names",
        ));
    }
    match detail {
        None | Some(Value::Null) => {}
        Some(detail) if detail == "auto" => {}
        Some(_) => return Err(unsupported(detail_at)),
    }
    Ok(AttachmentInput::Image {
        id: None,
        filename: None,
        mime_type: None,
        size_bytes: None,
        data_url: url.to_string(),
    })
}

fn invalid(param: &str, rule: &str) -> OpenAiError {
    OpenAiError::invalid(param, rule)
}

fn unsupported(param: &str) -> OpenAiError {
    OpenAiError::unsupported(param)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn refused(body: Value) -> Option<String> {
        let other: Map<String, Value> = serde_json::from_value(body).unwrap();
        refuse_unhonoured(&other)
            .err()
            .map(|e| e.param_name().to_string())
    }

    #[test]
    fn fields_are_accepted_at_their_no_op_values_only() {
        let defaults = json!({"n": 1, "modalities": ["text"],
            "function_call": "auto", "service_tier": "auto", "user": "u-1", "seed": null});
        assert_eq!(refused(defaults), None);
        assert_eq!(refused(json!({"n": 2})), Some("n".into()));
        assert_eq!(
            refused(json!({"top_logprobs": 2})),
            Some("top_logprobs".into())
        );
        assert_eq!(
            refused(json!({"functions": [{"name": "f"}]})),
            Some("functions".into())
        );
    }

    #[test]
    fn messages_name_the_path_of_what_they_refuse() {
        let refusal = |m: Value| {
            message("messages[1]", &m)
                .unwrap_err()
                .param_name()
                .to_string()
        };
        assert!(
            message(
                "messages[1]",
                &json!({"role": "user", "content": "hi", "name": "ann"})
            )
            .is_ok()
        );
        assert_eq!(
            refusal(json!({"role": "user", "content": "hi", "name": 7})),
            "messages[1].name"
        );
        assert_eq!(
            refusal(json!({"role": "function", "content": "42", "name": "f"})),
            "messages[1].role"
        );
        assert_eq!(
            refusal(json!({"role": "tool", "content": "42"})),
            "messages[1].tool_call_id"
        );
        assert_eq!(
            refusal(
                json!({"role": "assistant", "tool_calls": [{"type": "function", "id": "c",
                "function": {"name": "f", "arguments": {}}}]})
            ),
            "messages[1].tool_calls[0].function.arguments"
        );
        assert_eq!(
            refusal(json!({"role": "user", "content": [{"type": "input_audio"}]})),
            "messages[1].content[0].type"
        );
        assert_eq!(
            refusal(json!({"role": "user", "content": [{"type": "image_url",
                "image_url": {"url": "https://example.com/a.png"}}]})),
            "messages[1].content[0].image_url.url"
        );
        assert_eq!(
            refusal(json!({"role": "user", "content": [{"type": "image_url",
                "image_url": {"url": "data:image/png;base64,AA==", "detail": "low"}}]})),
            "messages[1].content[0].image_url.detail"
        );
        assert_eq!(refusal(json!({"role": "robot"})), "messages[1].role");
    }

    #[test]
    fn parts_join_their_text_and_keep_a_users_images() {
        let m = json!({"role": "user", "content": [
            {"type": "text", "text": "a"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA==", "detail": "auto"}},
            {"type": "text", "text": "b"}
        ]});
        let input = message("messages[0]", &m).unwrap().input;
        assert_eq!(input.content, "a\n\nb");
        assert_eq!(input.attachments.map(|a| a.len()), Some(1));
        let assistant = json!({"role": "assistant", "content": null, "tool_calls": [],
            "refusal": null});
        assert_eq!(
            message("messages[0]", &assistant).unwrap().input.content,
            ""
        );
    }
}
