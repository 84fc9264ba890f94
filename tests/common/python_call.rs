//! The recorded chat-completions tool-call stream (`fixtures/upstream/openai_chat`), varied to
//! call chatd's `python` tool with given code: what a scripted model sends in the tests of the
//! interpreter (`tests/api/python.rs`, `tests/web/chat.rs`).

use std::sync::atomic::{AtomicUsize, Ordering};

const TOOL_STREAM: &str =
    include_str!("../fixtures/upstream/openai_chat/01_stream_tool_call_include_usage.response.sse");

/// The stream calling `python` with `{"code": code}`, under a call id of its own.
pub fn python_call(code: &str) -> String {
    tool_call_raw(&serde_json::json!({ "code": code }).to_string())
}

/// The stream calling `python` with `arguments` as they are (not necessarily an object with a
/// string `code`).
pub fn tool_call_raw(arguments: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(1);
    let encoded = serde_json::to_string(arguments).unwrap();
    let id = format!("call_py_{}", NEXT.fetch_add(1, Ordering::Relaxed));
    TOOL_STREAM
        .replace("call_ZR5UUuTt3pf61kjwAJIYdVMj", &id)
        .replace("get_capital", "python")
        .replace(
            r#""arguments":"{\""}"#,
            &format!(r#""arguments":{encoded}}}"#),
        )
        .replace(r#""arguments":"country"}"#, r#""arguments":""}"#)
        .replace(r#""arguments":"\":\""}"#, r#""arguments":""}"#)
        .replace(r#""arguments":"UK"}"#, r#""arguments":""}"#)
        .replace(r#""arguments":"\"}"}"#, r#""arguments":""}"#)
}

/// The stream calling `python` once per code, all in one round (parallel tool calls), each
/// call under an id of its own: the recorded stream's first chunk carrying every call whole,
/// then its finish and usage chunks.
#[allow(dead_code)] // tests/web includes this file and calls one at a time
pub fn python_calls(codes: &[&str]) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(1);
    let mut lines = TOOL_STREAM.lines().filter_map(|l| l.strip_prefix("data: "));
    let mut first: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    let calls: Vec<serde_json::Value> = codes
        .iter()
        .enumerate()
        .map(|(index, code)| {
            let id = format!("call_pyp_{}", NEXT.fetch_add(1, Ordering::Relaxed));
            serde_json::json!({"index": index, "id": id, "type": "function", "function": {
                "name": "python",
                "arguments": serde_json::json!({"code": code}).to_string()}})
        })
        .collect();
    first["choices"][0]["delta"]["tool_calls"] = serde_json::Value::Array(calls);
    let mut stream = format!("data: {first}\n\n");
    // The finish chunk, the usage chunk and [DONE].
    for line in TOOL_STREAM.lines().filter(|l| {
        l.contains("finish_reason\":\"tool_calls")
            || l.contains("\"usage\":{")
            || l == &"data: [DONE]"
    }) {
        stream.push_str(line);
        stream.push_str("\n\n");
    }
    stream
}
