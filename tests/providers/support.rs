//! Running a bundled provider plugin in the real host against a scripted upstream, and reading
//! what came back: the turn's events (drained from the channel while the turn runs, as the host
//! does), its outcome, and the transcript pieces the scenarios send.

use std::path::PathBuf;

use chatd::plugins::loading::load::Plugin;
use chatd::plugins::testing::TestHost;
use chatd::plugins::worlds::provider::{
    ContentPart, FinishReason, Message, PluginError, ProviderPlugin, Role, ToolCall, ToolResult,
    ToolSpec, TurnEvent, TurnOutcome, TurnRequest, UpstreamError,
};
use tokio::sync::mpsc;

/// The compile cache the `api` tests use too (`tests/api/support.rs`): compiling a component is
/// slow in debug builds, and every test here loads one.
pub fn plugin_cache_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/test-plugin-cache")
}

/// Loads bundled plugin `id` in a host configured with chatd's `flags`.
pub async fn load(id: &str, flags: &[String]) -> Plugin {
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    TestHost::new(&flags)
        .with_cache(plugin_cache_dir())
        .load_bundled(id)
        .await
        .unwrap_or_else(|e| panic!("{id} loads: {e}"))
}

/// The plugin's provider export.
pub fn provider(plugin: &Plugin) -> &ProviderPlugin {
    plugin.as_provider().expect("a provider plugin")
}

/// What one turn produced.
#[derive(Debug)]
pub struct Turn {
    /// The events, in the order the plugin emitted them.
    pub events: Vec<TurnEvent>,
    pub outcome: Result<TurnOutcome, PluginError>,
}

/// Runs one turn, reading its events while it runs: the channel is bounded, so a reader that
/// waited for the end would hold the turn back forever. `plugin_driven`: through the `provider`
/// world's `turn` rather than the host's driver.
pub async fn run(provider: &ProviderPlugin, request: TurnRequest, plugin_driven: bool) -> Turn {
    let (sender, mut receiver) = mpsc::channel(4);
    let call = async {
        if plugin_driven {
            let none = std::sync::Arc::new(chatd::plugins::worlds::provider::no_asks());
            provider.plugin_driven_turn(request, none, sender).await
        } else if provider.takes_references() {
            // As chatd's loop passes them: the large values by reference, filled in as the
            // request is sent.
            let mut request = request;
            let mut refs = chatd::plugins::worlds::provider::references::Refs::new();
            refs.take_large(&mut request.messages);
            provider
                .turn(request, Some(std::sync::Arc::new(refs)), sender)
                .await
        } else {
            provider.turn(request, None, sender).await
        }
    };
    tokio::pin!(call);
    let mut events = Vec::new();
    let outcome = loop {
        tokio::select! {
            Some(event) = receiver.recv() => events.push(event),
            done = &mut call => break done,
        }
    };
    // Events sent just before the call returned.
    while let Ok(event) = receiver.try_recv() {
        events.push(event);
    }
    Turn {
        events,
        outcome: outcome.expect("the call finishes in the sandbox"),
    }
}

impl Turn {
    /// The text deltas, concatenated.
    pub fn text(&self) -> String {
        self.deltas().concat()
    }

    /// The text deltas, one by one.
    pub fn deltas(&self) -> Vec<&str> {
        self.events
            .iter()
            .filter_map(|event| match event {
                TurnEvent::TextDelta(text) => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The tool calls, in order.
    pub fn calls(&self) -> Vec<&ToolCall> {
        self.events
            .iter()
            .filter_map(|event| match event {
                TurnEvent::ToolCall(call) => Some(call),
                _ => None,
            })
            .collect()
    }

    /// The last usage event as (input, output, total): the last one counts.
    pub fn usage(&self) -> Option<(u64, u64, u64)> {
        self.events.iter().rev().find_map(|event| match event {
            TurnEvent::Usage(u) => Some((u.input_tokens, u.output_tokens, u.total_tokens)),
            _ => None,
        })
    }

    /// The continuation the turn emitted, if any.
    pub fn continuation(&self) -> Option<String> {
        self.events.iter().find_map(|event| match event {
            TurnEvent::Continuation(state) => Some(state.clone()),
            _ => None,
        })
    }

    /// The outcome of a turn that must have succeeded.
    pub fn ok(&self) -> &TurnOutcome {
        match &self.outcome {
            Ok(outcome) => outcome,
            Err(e) => panic!("the turn failed: {e:?} (events: {:?})", self.events),
        }
    }

    pub fn finish(&self) -> FinishReason {
        self.ok().finish
    }

    /// The upstream error a turn must have failed with.
    pub fn upstream_error(&self) -> &UpstreamError {
        match &self.outcome {
            Err(PluginError::Upstream(error)) => error,
            other => panic!("expected an upstream error, got {other:?}"),
        }
    }
}

/// A turn request with no tools, no limits, not continued.
pub fn request(model: &str, messages: Vec<Message>, streaming: bool) -> TurnRequest {
    TurnRequest {
        model: model.into(),
        messages,
        tools: Vec::new(),
        temperature: None,
        max_tokens: None,
        streaming,
        may_continue: false,
        continuation: None,
    }
}

pub fn user(parts: Vec<ContentPart>) -> Message {
    Message {
        role: Role::User,
        content: parts,
        tool_calls: Vec::new(),
        tool_result: None,
    }
}

pub fn user_text(text: &str) -> Message {
    user(vec![ContentPart::Text(text.into())])
}

/// The assistant turn that made `calls` (no text: a pure tool-call turn).
pub fn assistant_calls(calls: Vec<ToolCall>) -> Message {
    Message {
        role: Role::Assistant,
        content: Vec::new(),
        tool_calls: calls,
        tool_result: None,
    }
}

pub fn tool_message(result: ToolResult) -> Message {
    Message {
        role: Role::Tool,
        content: Vec::new(),
        tool_calls: Vec::new(),
        tool_result: Some(result),
    }
}

pub fn tool_spec(name: &str, description: &str, schema: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: description.into(),
        parameters_schema_json: schema.into(),
    }
}

/// Tool-call arguments as JSON: providers may re-serialise them (provider_b does, compactly), so
/// they are compared as values, not text.
pub fn arguments(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("arguments {text:?} are not JSON: {e}"))
}
