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
