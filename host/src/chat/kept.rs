//! The server tools' exchange of a completion that ended with calls of the client's own tools
//! (OpenAI's wire with `chatd_tools` and `tools` in one request): the rounds chatd ran, kept so
//! that the client's next request, which carries only its own calls and results, puts them back
//! into the model's context ([`history::Exchange::Calls`](super::history::Exchange)).
//!
//! A round is the assistant's calls of chatd's tools (its text is not kept: the client got it
//! in the reply, and sends it back as the assistant message's content) and their results. The
//! client's calls of such a completion, and the kept calls, get ids chatd makes ([`mint_id`]):
//! random, so no other request finds the exchange by guessing, and unique, whatever ids the
//! upstream gave (some servers number them from 0 every time). The upstream sees those ids in
//! the next request, as any ids of a transcript's calls. The store keeps it for [`KEPT_FOR`]
//! after it was last found (`store/exchanges.rs`).

use std::time::Duration;

use serde_json::{Value, json};

use crate::plugins::worlds::provider as wit;

/// How long an exchange is kept after it was made or last found: a client runs its tools and
/// answers within this, or the model goes on without the server tools' results.
pub const KEPT_FOR: Duration = Duration::from_secs(60 * 60);

/// The start of the ids chatd gives a client's calls whose completion kept an exchange.
pub const ID_PREFIX: &str = "call_chatd_";

/// A new id for a client's call: [`ID_PREFIX`] and a random (v4) UUID's 32 hex digits, 122
/// bits of them random.
pub fn mint_id() -> String {
    format!("{ID_PREFIX}{}", uuid::Uuid::new_v4().simple())
}

/// Gives each call of `rounds` an id of [`mint_id`]'s, and its result the same.
pub fn renumber(rounds: &mut [wit::Message]) {
    let mut minted = std::collections::HashMap::new();
    for message in rounds.iter_mut() {
        for call in &mut message.tool_calls {
            let id = mint_id();
            minted.insert(std::mem::replace(&mut call.id, id.clone()), id);
        }
        if let Some(result) = &mut message.tool_result
            && let Some(id) = minted.get(&result.call_id)
        {
            result.call_id = id.clone();
        }
    }
}

/// The kept rounds as stored: `[{"calls": [{id, name, arguments}]}, {"result": {callId, name,
/// output, isError}}, …]`.
pub fn to_json(rounds: &[wit::Message]) -> String {
    let rows: Vec<Value> = rounds
        .iter()
        .map(|m| match &m.tool_result {
            Some(r) => json!({"result": {"callId": r.call_id, "name": r.name,
                "output": r.output, "isError": r.is_error}}),
            None => json!({"calls": m.tool_calls.iter().map(|c| json!({
                "id": c.id, "name": c.name, "arguments": c.arguments_json})).collect::<Vec<_>>()}),
        })
        .collect();
    Value::Array(rows).to_string()
}

/// The rounds of [`to_json`]'s text; `None` for text it did not write.
pub fn from_json(text: &str) -> Option<Vec<wit::Message>> {
    let rows: Vec<Value> = serde_json::from_str(text).ok()?;
    let string = |v: &Value, key: &str| v.get(key)?.as_str().map(str::to_string);
    rows.iter()
        .map(|row| {
            if let Some(result) = row.get("result") {
                return Some(wit::Message {
                    role: wit::Role::Tool,
                    content: Vec::new(),
                    tool_calls: Vec::new(),
                    tool_result: Some(wit::ToolResult {
                        call_id: string(result, "callId")?,
                        name: string(result, "name")?,
                        output: string(result, "output")?,
                        is_error: result.get("isError")?.as_bool()?,
                    }),
                });
            }
            let calls = row.get("calls")?.as_array()?;
            Some(wit::Message {
                role: wit::Role::Assistant,
                content: Vec::new(),
                tool_calls: calls
                    .iter()
                    .map(|c| {
                        Some(wit::ToolCall {
                            id: string(c, "id")?,
                            name: string(c, "name")?,
                            arguments_json: string(c, "arguments")?,
                        })
                    })
                    .collect::<Option<_>>()?,
                tool_result: None,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_survive_the_store_and_ids_are_fresh() {
        let rounds = vec![
            wit::Message {
                role: wit::Role::Assistant,
                content: Vec::new(),
                tool_calls: vec![wit::ToolCall {
                    id: "call_0".into(),
                    name: "web_search".into(),
                    arguments_json: r#"{"query":"q"}"#.into(),
                }],
                tool_result: None,
            },
            wit::Message {
                role: wit::Role::Tool,
                content: Vec::new(),
                tool_calls: Vec::new(),
                tool_result: Some(wit::ToolResult {
                    call_id: "call_0".into(),
                    name: "web_search".into(),
                    output: "results".into(),
                    is_error: false,
                }),
            },
        ];
        let back = from_json(&to_json(&rounds)).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(back[0].tool_calls[0].arguments_json, r#"{"query":"q"}"#);
        assert_eq!(back[1].tool_result.as_ref().unwrap().output, "results");
        assert!(from_json("[{\"other\": 1}]").is_none());
        let (a, b) = (mint_id(), mint_id());
        assert!(a.starts_with(ID_PREFIX) && a.len() == ID_PREFIX.len() + 32);
        assert_ne!(a, b);
    }
}
