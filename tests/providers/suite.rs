//! The scenarios, each a generic function over a [`Wire`], and [`every_scenario!`], which makes
//! one test per scenario per provider: every provider runs every scenario (TensorZero's
//! generated provider tests work the same way). A provider whose API lacks a feature says so in
//! its wire description ([`Support::Absent`]), and the scenario asserts what it does instead.
//!
//! Every scenario also checks the first request it caused: its path, the credential the host
//! injected, and the model.

use std::time::Duration;

use chatd::plugins::loading::load::Plugin;
use chatd::plugins::testing::{Recorded, Reply, ScriptedUpstream};
use chatd::plugins::worlds::provider::{
    ContentPart, FinishReason, Image, PluginError, TextFile, ToolResult, ToolSpec, TurnRequest,
};
use serde_json::Value;

use crate::support::{
    Turn, arguments, assistant_calls, load, provider, request, run, tool_message, tool_spec, user,
    user_text,
};
use crate::wire::{Absent, Call, Support, Wire};

/// A scripted upstream answering the turn route with `replies` in order, and the provider
/// pointed at it (`{upstream}/v1`, the shape of the real base URLs).
struct Setup {
    upstream: ScriptedUpstream,
    plugin: Plugin,
    plugin_driven: bool,
}

/// Who drives a turn: the host, through the plugin's `turn-codec` (how chatd runs its bundled
/// providers), or the plugin itself, through the `provider` world's `turn` (how a host that
/// knows only that world runs them). Every scenario runs both ways.
pub trait Driver {
    const PLUGIN_DRIVEN: bool;
}

pub struct HostDriven;
impl Driver for HostDriven {
    const PLUGIN_DRIVEN: bool = false;
}

pub struct PluginDriven;
impl Driver for PluginDriven {
    const PLUGIN_DRIVEN: bool = true;
}

async fn setup<W: Wire, D: Driver>(replies: Vec<Reply>) -> Setup {
    let route = format!("POST {}", W::TURN_PATH);
    setup_routes::<W, D>(replies.into_iter().map(|r| (route.clone(), r)).collect()).await
}

async fn setup_routes<W: Wire, D: Driver>(routes: Vec<(String, Reply)>) -> Setup {
    let upstream = ScriptedUpstream::start(
        routes
            .iter()
            .map(|(route, reply)| (route.as_str(), reply.clone())),
    )
    .await;
    let plugin = load(W::PLUGIN, &W::flags(&format!("{}/v1", upstream.url()))).await;
    Setup {
        upstream,
        plugin,
        plugin_driven: D::PLUGIN_DRIVEN,
    }
}

impl Setup {
    async fn turn(&self, request: TurnRequest) -> Turn {
        let provider = provider(&self.plugin);
        assert!(
            provider.host_driven(),
            "a bundled provider is a codec provider"
        );
        run(provider, request, self.plugin_driven).await
    }

    /// Request `n` (0-based) to the turn route, checked like every turn request.
    fn sent<W: Wire>(&self, n: usize) -> Recorded {
        let requests = self.upstream.requests();
        let request = requests
            .get(n)
            .unwrap_or_else(|| panic!("request {n} was sent (got {})", requests.len()))
            .clone();
        assert_eq!(request.method, "POST");
        assert_eq!(request.path, W::TURN_PATH);
        W::assert_credentials(&request);
        assert_eq!(request.json()["model"], W::MODEL, "the model asked for");
        request
    }
}

/// 1. A whole answer: its text, `Stop`, the upstream's body as `raw_json`, the usage.
pub async fn text_whole<W: Wire, D: Driver>() {
    let canned = W::text_whole();
    let s = setup::<W, D>(vec![canned.reply(false)]).await;
    let turn = s
        .turn(request(W::MODEL, vec![user_text("Hello!")], false))
        .await;

    let sent = s.sent::<W>(0).json();
    assert_ne!(sent["stream"], true, "a whole answer is asked for");
    assert_eq!(turn.text(), canned.text);
    assert!(turn.calls().is_empty());
    assert_eq!(turn.finish(), FinishReason::Stop);
    let raw = turn
        .ok()
        .raw_json
        .as_deref()
        .expect("raw_json of a whole answer");
    let raw: Value = serde_json::from_str(raw).expect("raw_json is JSON");
    let recorded: Value = serde_json::from_str(&canned.body).unwrap();
    assert_eq!(raw, recorded, "raw_json is the upstream's body");
    assert_eq!(turn.usage(), Some(canned.usage));
}

/// 2. A streamed answer: several deltas that make the text, the usage, `Stop`, no raw_json.
pub async fn text_stream<W: Wire, D: Driver>() {
    let canned = W::text_stream();
    let s = setup::<W, D>(vec![canned.reply(true)]).await;
    let turn = s
        .turn(request(W::MODEL, vec![user_text("Hello!")], true))
        .await;

    assert_eq!(s.sent::<W>(0).json()["stream"], true);
    assert!(
        turn.deltas().len() > 1,
        "streamed in pieces: {:?}",
        turn.deltas()
    );
    assert_eq!(turn.text(), canned.text);
    assert!(turn.calls().is_empty());
    assert_eq!(turn.usage(), Some(canned.usage));
    assert_eq!(turn.finish(), FinishReason::Stop);
    assert!(turn.ok().raw_json.is_none(), "no raw_json when streaming");
}

/// Checks the calls of a turn against the recorded ones, in order.
fn assert_calls(turn: &Turn, expected: &[Call]) {
    let calls = turn.calls();
    assert_eq!(calls.len(), expected.len(), "calls: {calls:?}");
    for (call, expected) in calls.iter().zip(expected) {
        assert_eq!(call.id, expected.id);
        assert_eq!(call.name, expected.name);
        assert_eq!(
            arguments(&call.arguments_json),
            arguments(expected.arguments),
            "arguments of {}",
            expected.id
        );
    }
}

/// A tool of this name with an empty schema (the plugins send "no parameters" for it).
fn tool_named(name: &str) -> ToolSpec {
    tool_spec(name, "", "")
}

/// What a provider without tool calls does with an answer that has some: never asks for tools,
/// passes no call on, and does not finish with `ToolCalls`.
async fn assert_absent<W: Wire, D: Driver>(absent: Absent) {
    let s = setup::<W, D>(vec![absent.reply]).await;
    let mut turn_request = request(W::MODEL, vec![user_text("Use the tool.")], absent.streaming);
    turn_request.tools = vec![tool_named("get_capital"), tool_named("get_weather")];
    turn_request.may_continue = true;
    let turn = s.turn(turn_request).await;

    (absent.assert_sent)(&s.sent::<W>(0).json());
    assert!(
        turn.calls().is_empty(),
        "{}: {:?}",
        absent.why,
        turn.calls()
    );
    assert_eq!(turn.finish(), absent.finish, "{}", absent.why);
    assert_ne!(turn.finish(), FinishReason::ToolCalls, "{}", absent.why);
}

/// 3. A tool loop: the call, then its result sent back in the vendor's shape, then the answer.
pub async fn tool_round_trip<W: Wire, D: Driver>() {
    let tool_loop = match W::tool_loop() {
        Support::Present(tool_loop) => tool_loop,
        Support::Absent(absent) => return assert_absent::<W, D>(absent).await,
    };
    let s = setup::<W, D>(vec![
        Reply::sse(&tool_loop.first),
        tool_loop.second.reply(true),
    ])
    .await;
    let question = user_text(tool_loop.question);
    let mut first_request = request(W::MODEL, vec![question.clone()], true);
    first_request.tools = vec![tool_loop.tool.clone()];
    first_request.may_continue = true;
    let first = s.turn(first_request).await;

    let sent = s.sent::<W>(0).json();
    assert!(
        sent["tools"]
            .as_array()
            .is_some_and(|tools| tools.len() == 1),
        "the tool is offered: {sent}"
    );
    assert_calls(&first, &[tool_loop.call]);
    assert_eq!(first.finish(), FinishReason::ToolCalls);
    assert_eq!(first.continuation().as_deref(), tool_loop.continuation);

    let call = first.calls()[0].clone();
    let result = ToolResult {
        call_id: call.id.clone(),
        name: call.name.clone(),
        output: tool_loop.output.into(),
        is_error: false,
    };
    let mut second_request = request(
        W::MODEL,
        vec![
            question,
            assistant_calls(vec![call.clone()]),
            tool_message(result.clone()),
        ],
        true,
    );
    second_request.tools = vec![tool_loop.tool.clone()];
    second_request.may_continue = true;
    second_request.continuation = first.continuation();
    let second = s.turn(second_request).await;

    let follow_up = s.sent::<W>(1).json();
    (tool_loop.assert_follow_up)(&follow_up, &call, &result, first.continuation().as_deref());
    assert_eq!(second.text(), tool_loop.second.text);
    assert!(second.calls().is_empty());
    assert_eq!(second.finish(), FinishReason::Stop);
    assert_eq!(second.usage(), Some(tool_loop.second.usage));
}

/// 4. Several calls in one answer, passed on in order.
pub async fn parallel_tool_calls<W: Wire, D: Driver>() {
    let parallel = match W::parallel_calls() {
        Support::Present(parallel) => parallel,
        Support::Absent(absent) => return assert_absent::<W, D>(absent).await,
    };
    let s = setup::<W, D>(vec![parallel.reply]).await;
    let mut turn_request = request(W::MODEL, vec![user_text("Call both.")], parallel.streaming);
    let mut names: Vec<&str> = parallel.calls.iter().map(|c| c.name).collect();
    names.dedup();
    turn_request.tools = names.into_iter().map(tool_named).collect();
    let turn = s.turn(turn_request).await;

    s.sent::<W>(0);
    assert!(parallel.calls.len() > 1);
    assert_calls(&turn, &parallel.calls);
    assert_eq!(turn.finish(), FinishReason::ToolCalls);
}

/// A 1×1 PNG.
const PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

/// 5. An image and a text file in a user message reach the upstream in the vendor's shape.
pub async fn attachments<W: Wire, D: Driver>() {
    let canned = W::text_whole();
    let s = setup::<W, D>(vec![canned.reply(false)]).await;
    let image = Image {
        mime_type: "image/png".into(),
        data_base64: PNG_BASE64.into(),
    };
    let file = TextFile {
        filename: "notes.md".into(),
        mime_type: "text/markdown".into(),
        text: "# Notes\n\nThe launch moved to Thursday.".into(),
        truncated: false,
    };
    let message = user(vec![
        ContentPart::Text("What do these say?".into()),
        ContentPart::Image(image.clone()),
        ContentPart::TextFile(file.clone()),
    ]);
    let turn = s.turn(request(W::MODEL, vec![message], false)).await;

    W::assert_attachments(&s.sent::<W>(0).json(), &image, &file);
    assert_eq!(turn.text(), canned.text);
    assert_eq!(turn.finish(), FinishReason::Stop);
}

/// 6. Usage, whole and streamed: the recorded input, output and total.
pub async fn usage<W: Wire, D: Driver>() {
    for (canned, streaming) in [(W::text_whole(), false), (W::text_stream(), true)] {
        let s = setup::<W, D>(vec![canned.reply(streaming)]).await;
        let turn = s
            .turn(request(W::MODEL, vec![user_text("Hello!")], streaming))
            .await;
        s.sent::<W>(0);
        let (input, output, total) = turn.usage().expect("a usage event");
        let (recorded_input, recorded_output, recorded_total) = canned.usage;
        assert_eq!(
            input, recorded_input,
            "input tokens (streaming: {streaming})"
        );
        assert_eq!(
            output, recorded_output,
            "output tokens (streaming: {streaming})"
        );
        assert_eq!(
            total, recorded_total,
            "total tokens (streaming: {streaming})"
        );
    }
}

/// 7. An error status before any output: `Upstream` with that status and the upstream's message.
pub async fn http_errors<W: Wire, D: Driver>() {
    let cases = [(401, false), (401, true), (429, true), (500, false)];
    let errors: Vec<_> = cases
        .iter()
        .map(|(status, _)| W::http_error(*status))
        .collect();
    let replies = cases
        .iter()
        .zip(&errors)
        .map(|((status, _), error)| Reply::text(*status, "application/json", &error.body))
        .collect();
    let s = setup::<W, D>(replies).await;
    for (n, ((status, streaming), error)) in cases.iter().zip(&errors).enumerate() {
        let turn = s
            .turn(request(W::MODEL, vec![user_text("Hello!")], *streaming))
            .await;
        s.sent::<W>(n);
        let got = turn.upstream_error();
        assert_eq!(got.status, *status);
        assert_eq!(got.message, error.message, "status {status}");
        assert!(
            turn.events.is_empty(),
            "nothing before the error: {:?}",
            turn.events
        );
    }
}

/// 8. An error inside the stream: the text before it delivered, then `Upstream` with status 0.
pub async fn mid_stream_error<W: Wire, D: Driver>() {
    for case in W::mid_stream_errors() {
        let s = setup::<W, D>(vec![Reply::sse(&case.sse)]).await;
        let turn = s
            .turn(request(W::MODEL, vec![user_text("Hello!")], true))
            .await;
        s.sent::<W>(0);
        assert_eq!(turn.text(), case.text_before, "{}", case.case);
        let got = turn.upstream_error();
        assert_eq!(got.status, 0, "{}", case.case);
        assert_eq!(got.message, case.message, "{}", case.case);
    }
}

/// 9. The connection drops partway: the text of the whole events before it, then `Transport`.
///
/// The scripted upstream needs the body paced for that: an unpaced `Reply::cut()` aborts the
/// connection before hyper has flushed even the status line, so the plugin sees a connection
/// closed before any answer (checked too: also `Transport`, with nothing delivered). With a
/// pause after each piece the body is pending there, and hyper writes out what it has before
/// the cut: the pause orders the writes, the outcome does not depend on its length.
pub async fn connection_cut<W: Wire, D: Driver>() {
    let cut = W::cut();
    // The whole events, then the event the cut falls in.
    let whole = cut.sse.rfind("\n\n").map_or(0, |end| end + 2);
    let (events, partial) = cut.sse.split_at(whole);
    let pieces = vec![events.as_bytes().to_vec(), partial.as_bytes().to_vec()];
    let s = setup::<W, D>(vec![
        Reply::sse(&cut.sse)
            .paced(pieces, Duration::from_millis(5))
            .cut(),
        Reply::sse(&cut.sse).cut(),
    ])
    .await;

    let turn = s
        .turn(request(W::MODEL, vec![user_text("Hello!")], true))
        .await;
    s.sent::<W>(0);
    assert_eq!(turn.text(), cut.text_before, "{:?}", turn.outcome);
    assert!(
        matches!(turn.outcome, Err(PluginError::Transport(_))),
        "a transport error, got {:?}",
        turn.outcome
    );

    let turn = s
        .turn(request(W::MODEL, vec![user_text("Hello!")], true))
        .await;
    s.sent::<W>(1);
    assert!(turn.events.is_empty(), "{:?}", turn.events);
    assert!(
        matches!(turn.outcome, Err(PluginError::Transport(_))),
        "a transport error, got {:?}",
        turn.outcome
    );
}

/// 10. The model list.
pub async fn list_models<W: Wire>() {
    let models = W::models();
    let route = format!("GET {}", W::MODELS_PATH);
    let s = setup_routes::<W, HostDriven>(vec![(
        route,
        Reply::text(200, "application/json", &models.body),
    )])
    .await;
    let ids = provider(&s.plugin)
        .list_models()
        .await
        .expect("the call finishes in the sandbox")
        .unwrap_or_else(|e| panic!("the model list: {e:?}"));

    let requests = s.upstream.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].method, "GET");
    assert_eq!(requests[0].path, W::MODELS_PATH);
    assert_eq!(requests[0].query.as_deref(), models.query);
    W::assert_credentials(&requests[0]);
    assert_eq!(ids, models.ids);
}

/// One test per scenario and driver for each `module => wire` pair.
macro_rules! every_scenario {
    ($($module:ident => $wire:ty),* $(,)?) => {$(
        mod $module {
            mod host_driven {
                crate::suite::scenarios!($wire, crate::suite::HostDriven);
            }
            mod plugin_driven {
                crate::suite::scenarios!($wire, crate::suite::PluginDriven);
            }
            // The model list is one call either way.
            #[tokio::test]
            async fn list_models() {
                crate::suite::list_models::<$wire>().await
            }
        }
    )*};
}
pub(crate) use every_scenario;

/// The scenario tests for one wire and driver.
macro_rules! scenarios {
    ($wire:ty, $driver:ty) => {
        #[tokio::test]
        async fn text_non_streaming() {
            crate::suite::text_whole::<$wire, $driver>().await
        }
        #[tokio::test]
        async fn text_streaming() {
            crate::suite::text_stream::<$wire, $driver>().await
        }
        #[tokio::test]
        async fn tool_call_round_trip() {
            crate::suite::tool_round_trip::<$wire, $driver>().await
        }
        #[tokio::test]
        async fn parallel_tool_calls() {
            crate::suite::parallel_tool_calls::<$wire, $driver>().await
        }
        #[tokio::test]
        async fn image_and_text_file_attachments() {
            crate::suite::attachments::<$wire, $driver>().await
        }
        #[tokio::test]
        async fn usage() {
            crate::suite::usage::<$wire, $driver>().await
        }
        #[tokio::test]
        async fn error_status_before_the_stream() {
            crate::suite::http_errors::<$wire, $driver>().await
        }
        #[tokio::test]
        async fn error_inside_the_stream() {
            crate::suite::mid_stream_error::<$wire, $driver>().await
        }
        #[tokio::test]
        async fn connection_cut() {
            crate::suite::connection_cut::<$wire, $driver>().await
        }
    };
}
pub(crate) use scenarios;
