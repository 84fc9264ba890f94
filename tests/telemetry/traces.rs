//! Traces over OTLP and the JSON log: a completion with a tool call, sent with a W3C
//! `traceparent`, is one trace continuing the caller's, with the spans of the request, the run,
//! each provider turn, the tool call, the plugin calls and the store operations, each under the
//! right parent; no attribute holds the message, the system prompt or a key; the JSON log's
//! lines carry the trace id.

use chatd::plugins::testing::Reply;
use reqwest::Method;
use serde_json::{Value, json};

use crate::binary::Chatd;
use crate::otlp::{Receiver, Span};
use crate::stream;
use crate::upstream::{COMPLETIONS, Upstreams, exa_results, text_reply, web_search_call};

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";

#[tokio::test]
async fn a_completion_with_a_tool_call_is_one_trace_continuing_the_callers() {
    let receiver = Receiver::start().await;
    let upstreams = Upstreams::start([
        (COMPLETIONS, web_search_call()),
        (COMPLETIONS, text_reply(&["The capital ", "is London."])),
        ("POST /search", Reply::json(200, exa_results(2))),
    ])
    .await;
    let mut env = upstreams.env();
    env.extend([
        ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url.clone()),
        // Batches go every 50 ms rather than every 5 s.
        ("OTEL_BSP_SCHEDULE_DELAY", "50".into()),
        ("LOG_FORMAT", "json".into()),
    ]);
    let chatd = Chatd::start(env);
    let secret = "my-secret-question-about-the-capital";
    let system = "my-hidden-system-prompt";
    let chat_id = crate::new_chat(&chatd, json!({"additionalSystemPrompt": system})).await;
    let traceparent = format!("00-{TRACE_ID}-{CALLER_SPAN}-01");
    let events = stream(
        &chatd,
        json!({"chatId": chat_id, "provider": "provider_c", "model": "gpt-4",
               "messages": [{"role": "user", "content": secret}]}),
        &[("traceparent", &traceparent)],
    )
    .await;
    assert_eq!(events.last().unwrap().0, "done", "{events:?}");

    let ours = |spans: &[Span]| -> Vec<Span> {
        spans
            .iter()
            .filter(|s| s.trace_id == TRACE_ID)
            .cloned()
            .collect()
    };
    let named = |spans: &[Span], name: &str| spans.iter().filter(|s| s.name == name).count();
    // Everything ends by the last store operation, which records the reply after the turns.
    let spans = receiver
        .until(|all| {
            let trace = ours(all);
            named(&trace, "chat gpt-4") == 2
                && named(&trace, "execute_tool web_search") == 1
                && named(&trace, "chat run") == 1
                && named(&trace, "finish_call") == 1
                && named(&trace, "POST /v1/chat-completions/stream") == 1
        })
        .await;
    let trace = ours(&spans);
    let one = |name: &str| -> &Span {
        let found: Vec<&Span> = trace.iter().filter(|s| s.name == name).collect();
        assert_eq!(found.len(), 1, "{name}: {found:#?}");
        found[0]
    };
    let http = one("POST /v1/chat-completions/stream");
    assert_eq!(
        http.parent_span_id, CALLER_SPAN,
        "the caller's span is the parent"
    );
    assert_eq!(
        http.attribute("http.route"),
        Some("/v1/chat-completions/stream")
    );
    assert_eq!(http.attribute("http.response.status_code"), Some("200"));
    assert_eq!(http.service, "chatd");
    assert_ne!(http.status, 2, "a 200 is not an error");
    let run = one("chat run");
    assert_eq!(run.parent_span_id, http.span_id);
    let turns: Vec<&Span> = trace.iter().filter(|s| s.name == "chat gpt-4").collect();
    for turn in &turns {
        assert_eq!(turn.parent_span_id, run.span_id, "{turn:#?}");
        assert_eq!(turn.attribute("gen_ai.system"), Some("provider_c"));
        assert_eq!(turn.attribute("gen_ai.operation.name"), Some("chat"));
        assert_eq!(turn.attribute("gen_ai.request.model"), Some("gpt-4"));
        let input: u64 = turn
            .attribute("gen_ai.usage.input_tokens")
            .expect("input tokens")
            .parse()
            .unwrap();
        assert!(input > 0);
        assert!(turn.attribute("gen_ai.usage.output_tokens").is_some());
        // The provider plugin's calls: building the request, decoding the answer.
        for operation in ["start", "decode"] {
            let name = format!("plugin provider_c {operation}");
            assert!(
                trace
                    .iter()
                    .any(|s| s.name == name && s.parent_span_id == turn.span_id),
                "{name} under {turn:#?}"
            );
        }
    }
    let tool = one("execute_tool web_search");
    assert_eq!(tool.parent_span_id, run.span_id);
    assert_eq!(tool.attribute("gen_ai.tool.name"), Some("web_search"));
    assert!(tool.attribute("gen_ai.tool.call.id").is_some());
    let plugin = one("plugin web_search invoke");
    assert_eq!(plugin.parent_span_id, tool.span_id);
    // Store operations: the call begun and finished in the run, the tool's row stored.
    for operation in ["begin_call", "append_message", "finish_call"] {
        let span = one(operation);
        assert_eq!(span.parent_span_id, run.span_id, "{span:#?}");
        assert_eq!(span.attribute("db.system.name"), Some("sqlite"));
        assert_eq!(span.attribute("db.operation.name"), Some(operation));
    }
    // Every span of the trace hangs from one of its own spans, or from the caller's.
    let ids: Vec<&str> = trace.iter().map(|s| s.span_id.as_str()).collect();
    for span in &trace {
        assert!(
            span.parent_span_id == CALLER_SPAN || ids.contains(&span.parent_span_id.as_str()),
            "{span:#?}"
        );
    }
    // Nothing the user wrote, nor a key, is an attribute of any span exported.
    for span in &spans {
        for (key, value) in &span.attributes {
            for word in [secret, system, "c-key", "e-key", "capital"] {
                assert!(!value.contains(word), "{} {key}={value}", span.name);
            }
        }
    }

    // The JSON log: one object per line; the request's line has the trace id.
    let mut request_line = None;
    while let Ok(line) = chatd.lines.recv_timeout(std::time::Duration::from_secs(5)) {
        let object: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("a log line that is not JSON ({e}): {line}"));
        if object["fields"]["route"] == "/v1/chat-completions/stream" {
            request_line = Some(object);
            break;
        }
    }
    let line = request_line.expect("the stream's request line");
    assert_eq!(line["openTelemetry"]["traceId"], TRACE_ID, "{line}");
    assert_eq!(line["level"], "INFO");
}

#[tokio::test]
async fn without_log_format_the_log_stays_text() {
    let chatd = Chatd::start([("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")]);
    let (status, _) = crate::call(Method::GET, &format!("{}/v1/chats", chatd.base), None).await;
    assert_eq!(status, 200);
    let line = chatd
        .lines
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("the request's line");
    assert!(line.contains("request"), "{line}");
    assert!(
        serde_json::from_str::<Value>(&line).is_err(),
        "text: {line}"
    );
}
