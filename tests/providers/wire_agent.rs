//! provider_agent: an agent server's chat completions API (Hermes Agent's, by default), the same
//! wire as provider_c (`wire_c.rs`) with the `agent` flavor: the agent runs its own tools, so the
//! plugin never sends the host's tools, drops tool-call deltas and the agent's own named SSE
//! events (`event: hermes.tool.progress` …), and passes only text and usage on. Tool calls are
//! therefore [`Support::Absent`]: scenarios 3 and 4 assert that documented behaviour on the
//! recorded tool-call streams.

use chatd::plugins::testing::{Recorded, Reply};
use chatd::plugins::worlds::provider::{FinishReason, Image, TextFile};
use serde_json::Value;

use crate::recorded::insert_before;
use crate::wire::{
    Absent, Canned, Cut, HttpError, MidStream, Models, Parallel, Support, ToolLoop, Wire,
    assert_bearer, service_flags,
};
use crate::wire_c::{self, CALL_STREAM, PARALLEL_STREAM, TEXT_STREAM, WireC};

/// Hermes Agent's progress events around its own tool run, named so that an OpenAI client
/// skips them (the shape the plugin's docs and unit tests use).
const PROGRESS: &str = concat!(
    "event: hermes.tool.progress\n",
    r#"data: {"tool_call_id":"call_123","name":"web_search","status":"started","emoji":"🔍","label":"Searching..."}"#,
    "\n\n",
    ": keepalive\n\n",
    "event: hermes.tool.progress\n",
    r#"data: {"tool_call_id":"call_123","name":"web_search","status":"completed"}"#,
    "\n\n",
);

const WHY: &str = "the agent runs its own tools: provider_agent sends none and drops tool-call \
                   deltas, so the host never sees a call";

pub struct WireAgent;

impl Wire for WireAgent {
    const PLUGIN: &'static str = "provider_agent";
    const MODEL: &'static str = "hermes-agent";
    const TURN_PATH: &'static str = "/v1/chat/completions";
    const MODELS_PATH: &'static str = "/v1/models";

    fn flags(base_url: &str) -> Vec<String> {
        service_flags("--agent-api-base-url", "--agent-api-key", base_url)
    }

    fn assert_credentials(request: &Recorded) {
        assert_bearer(request);
    }

    fn text_whole() -> Canned {
        wire_c::text_whole()
    }

    fn text_stream() -> Canned {
        // 02 with the agent's progress events in the middle of the text: they must not break
        // or add to it.
        wire_c::text_stream(insert_before(TEXT_STREAM, r#""content":" is""#, PROGRESS))
    }

    fn tool_loop() -> Support<ToolLoop> {
        // The recorded tool-call stream (01): the call is dropped, and its `tool_calls` finish
        // reason is not the host's `ToolCalls` (documented: `Other`).
        Support::Absent(Absent {
            why: WHY,
            reply: Reply::sse(CALL_STREAM),
            streaming: true,
            finish: FinishReason::Other,
            assert_sent: assert_no_tools,
        })
    }

    fn parallel_calls() -> Support<Parallel> {
        Support::Absent(Absent {
            why: WHY,
            reply: Reply::sse(PARALLEL_STREAM),
            streaming: true,
            finish: FinishReason::Other,
            assert_sent: assert_no_tools,
        })
    }

    fn assert_attachments(sent: &Value, image: &Image, file: &TextFile) {
        wire_c::assert_attachments(sent, image, file)
    }

    fn http_error(status: u16) -> HttpError {
        WireC::http_error(status)
    }

    fn mid_stream_errors() -> Vec<MidStream> {
        wire_c::mid_stream_errors()
    }

    fn cut() -> Cut {
        wire_c::cut()
    }

    fn models() -> Models {
        wire_c::models()
    }
}

/// The host's tools were offered to the turn; none reach the agent.
fn assert_no_tools(sent: &Value) {
    assert!(sent.get("tools").is_none(), "no tools are sent: {sent}");
    assert!(sent.get("tool_choice").is_none(), "{sent}");
}
