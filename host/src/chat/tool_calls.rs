//! A round's tool calls: announced (`initiated`), run in their tool plugins concurrently, each
//! stored as a `tool` message before its terminal `tool_call` event. A client's stop ends the
//! calls still running as failed, stored and announced the same way, and drops them (a call's
//! plugin instance, with its HTTP request or SSH session, goes with it).

use crate::store::files::{ChatFileRecord, NewChatFile};
use crate::tools::enabled::EnabledTool;
use crate::tools::python::result::Written;
use crate::tools::python::{CallContext, Ran as PythonRan};
use std::time::Instant;

use futures::StreamExt;
use futures::stream::FuturesUnordered;

use serde_json::{Value, json};
use tracing::Instrument as _;

use super::events::{ChatEvent, ToolCallEvent, ToolStatus};
use super::failure::CompletionError;
use super::sink::Sink;
use crate::plugins::worlds::provider::{self as wit, ToolResult};
use crate::store::NewMessage;
use crate::telemetry::{metrics, trace};
use crate::vocabulary::{Role, now, to_millis};

/// The longest `resultPreview`, in characters.
const PREVIEW_CHARS: usize = 400;
/// The longest `summary`, in characters.
const SUMMARY_CHARS: usize = 120;

/// The error of a call still running when the client stopped the reply.
pub const STOPPED_CALL: &str = "stopped: the reply was stopped before the tool finished";

/// How a round's calls ended.
pub(super) enum Ran {
    /// Every call ended; their results, in call order.
    All(Vec<ToolResult>),
    /// The client stopped the run; the calls still running ended as failed.
    Stopped,
}

/// Announces the calls: one `initiated` event each, in call order.
pub(super) fn announce(calls: &[wit::ToolCall], sink: &Sink) -> Vec<ToolCallEvent> {
    calls
        .iter()
        .map(|call| {
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
            event
        })
        .collect()
}

/// Runs the announced calls concurrently until they end or the client stops the run.
pub(super) async fn run(
    tools: &[EnabledTool],
    calls: &[wit::ToolCall],
    started: Vec<ToolCallEvent>,
    sink: &Sink,
    context: &CallContext,
) -> Result<Ran, CompletionError> {
    let began = Instant::now();
    let mut running: FuturesUnordered<_> = calls
        .iter()
        .enumerate()
        .map(|(i, call)| async move {
            let tool = tool_label(tools, &call.name);
            let span = trace::tool_call(tool, &call.id);
            let clock = Instant::now();
            let outcome = invoke(tools, call, context).instrument(span.clone()).await;
            let took = clock.elapsed();
            metrics::tool_call(tool, outcome.is_ok(), took);
            trace::failed(&span, outcome.is_err().then_some("tool_error"));
            (i, outcome, took)
        })
        .collect();
    let mut results: Vec<Option<ToolResult>> = vec![None; calls.len()];
    let stop = sink.stop.requested();
    tokio::pin!(stop);
    loop {
        let next = tokio::select! {
            next = running.next() => next,
            () = &mut stop => break,
        };
        let Some((i, outcome, took)) = next else {
            return Ok(Ran::All(results.into_iter().flatten().collect()));
        };
        let mut event = started[i].clone();
        event.completed_at = Some(to_millis(&now()));
        event.duration_ms = Some(took.as_millis() as u64);
        let mut files = None;
        let (output, is_error) = match outcome {
            Ok(ran) => {
                event.status = ToolStatus::Completed;
                if let Some(summary) = ran.summary.filter(|s| !s.trim().is_empty()) {
                    event.summary = cut(&summary, SUMMARY_CHARS);
                }
                let mut content = ran.content;
                // A chat keeps its files with it; an `/openai/v1` request in its container.
                let kept = match &context.container {
                    Some(container) => container.keep(to_keep(ran.files)).await.map(|()| None),
                    None => sink.keep_files(to_keep(ran.files)).await,
                };
                match kept {
                    Ok(kept) => files = kept,
                    Err(why) => content = with_note(content, &why),
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
        sink.store_tool_log(tool_log(&event, &output, files.as_deref()))
            .await?;
        sink.emit(&ChatEvent::ToolCall(event));
        results[i] = Some(ToolResult {
            call_id: calls[i].id.clone(),
            name: calls[i].name.clone(),
            output,
            is_error,
        });
    }
    // Stopped: the calls still running are dropped now, then ended as failed, in call order.
    drop(running);
    for (i, event) in started.into_iter().enumerate() {
        if results[i].is_some() {
            continue;
        }
        let mut event = event;
        event.status = ToolStatus::Failed;
        event.completed_at = Some(to_millis(&now()));
        event.duration_ms = Some(began.elapsed().as_millis() as u64);
        event.error = Some(STOPPED_CALL.into());
        metrics::tool_call(tool_label(tools, &event.name), false, began.elapsed());
        sink.store_tool_log(tool_log(&event, &format!("Error: {STOPPED_CALL}"), None))
            .await?;
        sink.emit(&ChatEvent::ToolCall(event));
    }
    Ok(Ran::Stopped)
}

/// The tool's name for metrics and traces: an enabled tool's, or `unknown` for a name the
/// model made up (model output never becomes a label).
fn tool_label<'a>(tools: &'a [EnabledTool], name: &str) -> &'a str {
    tools
        .iter()
        .find(|t| t.spec.name == name)
        .map_or(metrics::UNKNOWN_TOOL, |t| t.spec.name.as_str())
}

/// Runs one call in its plugin: the output and the tool's summary, or why it failed.
async fn invoke(
    tools: &[EnabledTool],
    call: &wit::ToolCall,
    context: &CallContext,
) -> Result<PythonRan, String> {
    let Some(tool) = tools.iter().find(|t| t.spec.name == call.name) else {
        return Err(format!(
            "the tool {} is not enabled for this chat",
            call.name
        ));
    };
    tool.run(&call.arguments_json, context).await
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

/// The files a call wrote, as the chat keeps them.
fn to_keep(files: Vec<Written>) -> Vec<NewChatFile> {
    files
        .into_iter()
        .map(|f| NewChatFile {
            name: f.name,
            mime_type: f.mime_type.to_string(),
            data: f.bytes,
        })
        .collect()
}

/// A result with a note for the model: in its JSON object when it is one.
fn with_note(content: String, why: &str) -> String {
    let note = format!("the files were not kept with the chat: {why}");
    match serde_json::from_str::<Value>(&content) {
        Ok(Value::Object(mut map)) => {
            map.insert("filesNotKept".into(), json!(note));
            Value::Object(map).to_string()
        }
        _ => format!("{content}\n({note})"),
    }
}

/// The stored `tool` message of a finished call; `files`, those it wrote and the chat kept
/// (`metadata.files`: `[{id, name, mimeType, sizeBytes}]`).
fn tool_log(event: &ToolCallEvent, output: &str, files: Option<&[ChatFileRecord]>) -> NewMessage {
    let mut metadata = serde_json::to_value(event).expect("tool events serialize");
    if let Value::Object(map) = &mut metadata {
        map.insert("kind".into(), json!("tool_call"));
        if let Some(files) = files {
            let listed: Vec<Value> = files
                .iter()
                .map(|f| {
                    json!({"id": f.id, "name": f.name, "mimeType": f.mime_type,
                           "sizeBytes": f.size_bytes})
                })
                .collect();
            map.insert("files".into(), Value::Array(listed));
        }
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
        let log = tool_log(&event, "Error: boom", None);
        assert_eq!(log.role, Role::Tool);
        let meta = log.metadata.unwrap();
        assert_eq!(meta["kind"], "tool_call");
        assert_eq!(meta["status"], "failed");
        assert_eq!(meta["args"], json!({"url": "x"}));
        assert_eq!(meta["durationMs"], 3);
    }
}
