//! Each tool-loop provider's streamed wire, built from a round's items in the order the
//! upstream writes them, one SSE event (group) per piece, as the recordings of
//! `tests/fixtures/upstream` have them: the Responses API (`openai_responses/02`, `03`), the
//! Messages API (`anthropic_messages/04`, `05a`) and chat completions (`openai_chat/01`, `02`).
//! Shared by the black-box tests (`tests/api/live_replies.rs`) and `bench chat`.

use serde_json::{Value, json};

/// One output item of a round, in the order the upstream writes them.
#[derive(Clone, Debug)]
pub enum Item {
    /// A text item, one delta per piece.
    Text(Vec<String>),
    /// A tool call: id, name, arguments.
    Call(String, String, String),
}

/// A text item of `pieces`.
pub fn text(pieces: &[&str]) -> Item {
    Item::Text(pieces.iter().map(|p| p.to_string()).collect())
}

/// A tool call item.
pub fn call(id: &str, name: &str, arguments: &str) -> Item {
    Item::Call(id.into(), name.into(), arguments.into())
}

fn sse(name: Option<&str>, data: Value) -> Vec<u8> {
    match name {
        Some(name) => format!("event: {name}\ndata: {data}\n\n").into_bytes(),
        None => format!("data: {data}\n\n").into_bytes(),
    }
}

/// The Responses API (`openai_responses/02_stream_text`, `03_stream_function_call`).
pub fn responses_stream(items: &[Item]) -> Vec<Vec<u8>> {
    let ev = |name: &str, mut data: Value| {
        data["type"] = json!(name);
        sse(Some(name), data)
    };
    let mut out = vec![ev(
        "response.created",
        json!({"response": {"id": "resp_1", "status": "in_progress", "output": []}}),
    )];
    for (i, item) in items.iter().enumerate() {
        match item {
            Item::Text(pieces) => {
                let id = format!("msg_{i}");
                out.push(ev(
                    "response.output_item.added",
                    json!({"output_index": i, "item": {"type": "message", "id": id, "role": "assistant", "content": []}}),
                ));
                for piece in pieces {
                    out.push(ev(
                        "response.output_text.delta",
                        json!({"output_index": i, "item_id": id, "content_index": 0, "delta": piece}),
                    ));
                }
                let text: String = pieces.concat();
                out.push(ev(
                    "response.output_item.done",
                    json!({"output_index": i, "item": {"type": "message", "id": id, "role": "assistant",
                        "content": [{"type": "output_text", "text": text, "annotations": []}]}}),
                ));
            }
            Item::Call(id, name, arguments) => {
                let item = json!({"type": "function_call", "id": format!("fc_{i}"), "call_id": id,
                    "name": name, "arguments": arguments, "status": "completed"});
                let mut added = item.clone();
                added["arguments"] = json!("");
                out.push(ev(
                    "response.output_item.added",
                    json!({"output_index": i, "item": added}),
                ));
                out.push(ev(
                    "response.function_call_arguments.delta",
                    json!({"output_index": i, "item_id": format!("fc_{i}"), "delta": arguments}),
                ));
                out.push(ev(
                    "response.output_item.done",
                    json!({"output_index": i, "item": item}),
                ));
            }
        }
    }
    out.push(ev(
        "response.completed",
        json!({"response": {"id": "resp_1", "status": "completed", "output": [],
            "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}}),
    ));
    out
}

/// The Messages API (`anthropic_messages/04_stream_text`, `05a_stream_tool_use`).
pub fn messages_stream(items: &[Item]) -> Vec<Vec<u8>> {
    let ev = |name: &str, mut data: Value| {
        data["type"] = json!(name);
        sse(Some(name), data)
    };
    let mut out = vec![ev(
        "message_start",
        json!({"message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [],
            "model": "claude-haiku-4-5-20251001", "stop_reason": null,
            "usage": {"input_tokens": 10, "output_tokens": 1}}}),
    )];
    let mut calls = false;
    for (index, item) in items.iter().enumerate() {
        match item {
            Item::Text(pieces) => {
                out.push(ev(
                    "content_block_start",
                    json!({"index": index, "content_block": {"type": "text", "text": ""}}),
                ));
                for piece in pieces {
                    out.push(ev(
                        "content_block_delta",
                        json!({"index": index, "delta": {"type": "text_delta", "text": piece}}),
                    ));
                }
            }
            Item::Call(id, name, arguments) => {
                calls = true;
                out.push(ev(
                    "content_block_start",
                    json!({"index": index, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
                ));
                out.push(ev(
                    "content_block_delta",
                    json!({"index": index, "delta": {"type": "input_json_delta", "partial_json": arguments}}),
                ));
            }
        }
        out.push(ev("content_block_stop", json!({"index": index})));
    }
    let stop = if calls { "tool_use" } else { "end_turn" };
    out.push(ev(
        "message_delta",
        json!({"delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 5}}),
    ));
    out.push(ev("message_stop", json!({})));
    out
}

/// Chat completions (`openai_chat/01_stream_tool_call_include_usage`, `02_stream_text_…`).
pub fn chat_completions_stream(items: &[Item]) -> Vec<Vec<u8>> {
    let chunk = |delta: Value, finish: Value| {
        sse(
            None,
            json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
                "model": "grok-4", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
        )
    };
    let mut out = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    let mut calls = 0;
    for item in items {
        match item {
            Item::Text(pieces) => {
                for piece in pieces {
                    out.push(chunk(json!({"content": piece}), Value::Null));
                }
            }
            Item::Call(id, name, arguments) => {
                out.push(chunk(
                    json!({"tool_calls": [{"index": calls, "id": id, "type": "function",
                        "function": {"name": name, "arguments": ""}}]}),
                    Value::Null,
                ));
                out.push(chunk(
                    json!({"tool_calls": [{"index": calls, "function": {"arguments": arguments}}]}),
                    Value::Null,
                ));
                calls += 1;
            }
        }
    }
    let finish = if calls > 0 { "tool_calls" } else { "stop" };
    let mut tail = chunk(json!({}), json!(finish));
    tail.extend(sse(
        None,
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "grok-4",
            "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}),
    ));
    tail.extend(b"data: [DONE]\n\n");
    out.push(tail);
    out
}
