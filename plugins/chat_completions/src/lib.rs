//! The OpenAI-compatible chat completions wire format (`POST {base}/chat/completions`,
//! `GET {base}/models`), shared by two bundled provider plugins: `provider_c` (a model API, xAI
//! by default) and `provider_agent` (an agent server such as Hermes Agent). A library, not a
//! plugin: each plugin reads its own base URL and calls [`start`] and [`list_models`] with its
//! [`Flavor`].
//!
//! Anatomy: [`request`] builds the body from the host's turn request, [`wire`] holds the private
//! serde types (every field optional, unknown ones ignored), [`stream`] is the state machine of a
//! streamed answer, [`response`] reads a whole one; the model list is the SDK's OpenAI-style one.
//! All of it is pure and tested natively on the recordings in
//! `tests/fixtures/upstream/openai_chat/`. A turn's request is sent by the host (or by the SDK's
//! `codec::drive`); [`list_models`] sends its own. Credentials are never set here: the host adds
//! the key to requests to the granted base URL. [`embeddings`] is OpenAI's `/embeddings` wire,
//! which `provider_c` serves (WIT 0.1.4).

pub mod embeddings;
pub mod request;
pub mod response;
pub mod stream;
mod wire;

use chatd_plugin_sdk::codec::{Decoder, OptionKind, Tuning, TuningKind, TurnOptions, post_turn};
use chatd_plugin_sdk::host::{PluginError, Request, Usage};
use chatd_plugin_sdk::provider::{self, FinishReason, TurnRequest};

/// What kind of server is behind the base URL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// A model API: the host's tools are sent, the model's tool calls come back to the host.
    Standard,
    /// An agent server, which runs its own tools: no tools are sent, and only its text (and
    /// usage) reaches the host. Its own progress events (`event: hermes.tool.progress` …) and
    /// any tool-call deltas are dropped; the finish is never `tool-calls`.
    Agent,
}

impl Flavor {
    /// The host's tools go into the request.
    pub fn sends_tools(self) -> bool {
        self == Flavor::Standard
    }

    /// The upstream's tool calls become turn events.
    pub fn returns_tool_calls(self) -> bool {
        self == Flavor::Standard
    }

    /// Whether an SSE event of this name is a chat chunk. An agent server mixes its own named
    /// events into the stream; only unnamed ones (and `message`, the spec's default name) are
    /// chunks there. `error` events are errors whatever the flavor (see [`stream`]).
    pub fn parses_event(self, name: &str) -> bool {
        match self {
            Flavor::Standard => true,
            Flavor::Agent => name.is_empty() || name == "message",
        }
    }
}

/// The turn options this wire carries: all of them (`top_p`, `stop`, `tool_choice`,
/// `response_format` with `json_object` and `json_schema`).
pub const HONOURED: [OptionKind; 5] = [
    OptionKind::TopP,
    OptionKind::Stop,
    OptionKind::ToolChoice,
    OptionKind::JsonObject,
    OptionKind::JsonSchema,
];

/// The tuning this wire carries: all of it (`function.strict`, `parallel_tool_calls`,
/// `reasoning_effort`, `seed`, `presence_penalty` and `frequency_penalty`, `logit_bias`). A
/// server that lacks one answers for itself.
pub const TUNED: [TuningKind; 6] = [
    TuningKind::StrictTools,
    TuningKind::OneCallPerTurn,
    TuningKind::ReasoningEffort,
    TuningKind::Seed,
    TuningKind::Penalties,
    TuningKind::LogitBias,
];

/// The request of one turn to `{base_url}/chat/completions` and the decoder of its answer:
/// streamed server-sent events through [`stream::Stream`], or one JSON body through
/// [`response::parse`] (a turn that did not stream, or a server that ignored `stream: true`).
pub fn start(
    base_url: &str,
    request: &TurnRequest,
    options: &TurnOptions,
    tuning: &Tuning,
    flavor: Flavor,
) -> Result<(Request, Decoder), PluginError> {
    let body = request::body(request, options, tuning, flavor)?;
    let upstream = post_turn(
        format!("{base_url}/chat/completions"),
        &body,
        request.streaming,
    );
    let decoder = Decoder::new(
        request.streaming,
        stream::Stream::new(flavor),
        move |body| response::parse(body, flavor),
    );
    Ok((upstream, decoder))
}

/// The model ids of `GET {base_url}/models`, sorted.
pub fn list_models(base_url: &str) -> Result<Vec<String>, PluginError> {
    provider::list_models(
        &format!("{base_url}/models"),
        &[],
        provider::openai_model_ids,
    )
}

/// A wire `finish_reason` as the host's. A standard turn that produced tool calls finishes with
/// `tool-calls` whatever the upstream said (some servers say `stop`); an agent turn never does.
fn finish_reason(wire: Option<&str>, produced_calls: bool, flavor: Flavor) -> FinishReason {
    let mapped = match wire {
        None | Some("stop") => FinishReason::Stop,
        Some("tool_calls" | "function_call") => FinishReason::ToolCalls,
        Some("length") => FinishReason::Length,
        Some("content_filter") => FinishReason::ContentFilter,
        Some(_) => FinishReason::Other,
    };
    match flavor {
        Flavor::Standard if produced_calls => FinishReason::ToolCalls,
        Flavor::Agent if mapped == FinishReason::ToolCalls => FinishReason::Other,
        _ => mapped,
    }
}

fn usage(wire: &wire::WireUsage) -> Usage {
    let input = wire.prompt_tokens.unwrap_or(0);
    let output = wire.completion_tokens.unwrap_or(0);
    Usage {
        input_tokens: input,
        output_tokens: output,
        total_tokens: wire.total_tokens.unwrap_or(input + output),
    }
}

/// Turn events in a comparable form, for the tests.
#[cfg(test)]
mod test_support {
    use chatd_plugin_sdk::provider::TurnEvent;

    #[derive(Clone, Debug, PartialEq, Eq)]
    pub enum Ev {
        Text(String),
        Call {
            id: String,
            name: String,
            arguments: String,
        },
        Usage(u64, u64, u64),
        Continuation(String),
    }

    impl Ev {
        pub fn call(id: &str, name: &str, arguments: &str) -> Self {
            Ev::Call {
                id: id.into(),
                name: name.into(),
                arguments: arguments.into(),
            }
        }
    }

    pub fn evs(events: &[TurnEvent]) -> Vec<Ev> {
        events
            .iter()
            .map(|event| match event {
                TurnEvent::TextDelta(text) => Ev::Text(text.clone()),
                TurnEvent::ToolCall(call) => Ev::call(&call.id, &call.name, &call.arguments_json),
                TurnEvent::Usage(u) => Ev::Usage(u.input_tokens, u.output_tokens, u.total_tokens),
                TurnEvent::Continuation(state) => Ev::Continuation(state.clone()),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finish_reasons_per_flavor() {
        use FinishReason::*;
        assert_eq!(finish_reason(Some("stop"), false, Flavor::Standard), Stop);
        assert_eq!(finish_reason(None, false, Flavor::Standard), Stop);
        assert_eq!(
            finish_reason(Some("stop"), true, Flavor::Standard),
            ToolCalls
        );
        assert_eq!(
            finish_reason(Some("length"), true, Flavor::Standard),
            ToolCalls
        );
        assert_eq!(
            finish_reason(Some("tool_calls"), false, Flavor::Agent),
            Other
        );
        assert_eq!(finish_reason(Some("stop"), false, Flavor::Agent), Stop);
        assert_eq!(finish_reason(Some("length"), false, Flavor::Agent), Length);
        assert_eq!(
            finish_reason(Some("content_filter"), false, Flavor::Agent),
            ContentFilter
        );
    }

    #[test]
    fn usage_without_a_total_sums() {
        let u = usage(&wire::WireUsage {
            prompt_tokens: Some(3),
            completion_tokens: Some(4),
            total_tokens: None,
        });
        assert_eq!((u.input_tokens, u.output_tokens, u.total_tokens), (3, 4, 7));
    }

    #[test]
    fn only_the_agent_flavor_filters_events() {
        assert!(Flavor::Agent.parses_event(""));
        assert!(Flavor::Agent.parses_event("message"));
        assert!(!Flavor::Agent.parses_event("hermes.tool.progress"));
        assert!(Flavor::Standard.parses_event("anything"));
    }
}
