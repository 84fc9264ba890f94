//! The transcript a client sends, against the one stored: which rows are new (stored once, never
//! twice), and what the provider receives.
//!
//! Deliberately not sent to providers: history rows of role `tool`. They are the stored logs of
//! earlier tool calls (`metadata.kind = "tool_call"`), with no call for them to answer in the
//! provider's terms, and the assistant reply that followed them already carries what the model
//! learned. Tool calls and results of the running completion are sent, as the vendor's own items.

use serde::Deserialize;
use serde_json::Value;

use crate::attachments::Attachment;
use crate::plugins::worlds::provider::{self as wit, ContentPart};
use crate::store::{MessageRecord, NewMessage};
use crate::vocabulary::Role;

/// The rows of `supplied` the chat does not have yet, in order. Assistant rows are never taken
/// from a client (the chat's assistant rows are the ones the service wrote).
///
/// The supplied history is anchored on its last assistant row, found among the stored replies
/// (from the newest): only what follows it can be new, so a client that sends a window of the
/// transcript, or the same words twice, is read right. Without an anchor (no reply yet, or one
/// the chat does not have) the whole history is compared. In the compared part, a supplied row
/// is already stored when it matches (role and content) a stored non-assistant row after the
/// previous match: stored rows the client left out (tool logs, say) are skipped over, a resent
/// history matches row for row, and the same words sent again as a new turn come after the last
/// match, so they are new.
pub fn new_rows(stored: &[MessageRecord], supplied: &[NewMessage]) -> Vec<NewMessage> {
    let anchor = supplied
        .iter()
        .rposition(|m| m.role == Role::Assistant)
        .and_then(|i| {
            let reply = &supplied[i];
            let at = stored
                .iter()
                .rposition(|s| s.role == Role::Assistant && s.content == reply.content)?;
            Some((i + 1, at + 1))
        });
    let (supplied, stored) = match anchor {
        Some((from, after)) => (&supplied[from..], &stored[after..]),
        None => (supplied, stored),
    };
    let stored: Vec<&MessageRecord> = stored
        .iter()
        .filter(|m| m.role != Role::Assistant)
        .collect();
    let mut cursor = 0;
    let mut fresh = Vec::new();
    for message in supplied.iter().filter(|m| m.role != Role::Assistant) {
        let found = stored[cursor..]
            .iter()
            .position(|s| s.role == message.role && s.content == message.content);
        match found {
            Some(offset) => cursor += offset + 1,
            None => fresh.push(message.clone()),
        }
    }
    fresh
}

/// A client's own tool exchange on one history row, which the contract's rows do not carry:
/// OpenAI's wire (`http/openai/`) has an assistant's `tool_calls` and a `tool` message's result
/// for tools the client runs. Given beside the rows, never read from a row's metadata, so no
/// stored row can become one.
#[derive(Clone, Debug)]
pub enum Exchange {
    /// The calls of an assistant row, after `before`: the rounds of chatd's tools that came
    /// before them in the completion that made them, kept for this request (`chat/kept.rs`).
    Calls {
        calls: Vec<wit::ToolCall>,
        before: Vec<wit::Message>,
    },
    /// A tool row answering a call: its id and the tool's name; the row's content is the
    /// output.
    Result { call_id: String, name: String },
}

/// The provider transcript: the system prompt(s) first, then the history without tool logs.
/// Blank text is left out, and so is a message with nothing else: upstreams refuse empty
/// content, and it tells the model nothing. `exchange`, when given, holds row by row the
/// client's own tool calls and results ([`Exchange`]); a tool row with one is sent as a result.
pub fn to_provider(
    system: &[&str],
    history: &[NewMessage],
    exchange: &[Option<Exchange>],
) -> Vec<wit::Message> {
    let mut messages: Vec<wit::Message> = system
        .iter()
        .filter(|s| !s.trim().is_empty())
        .map(|s| text_message(wit::Role::System, s))
        .collect();
    for (i, message) in history.iter().enumerate() {
        let (tool_calls, tool_result) = match exchange.get(i).cloned().flatten() {
            Some(Exchange::Calls { calls, before }) => {
                messages.extend(before);
                (calls, None)
            }
            Some(Exchange::Result { call_id, name }) => (
                Vec::new(),
                Some(wit::ToolResult {
                    call_id,
                    name,
                    output: message.content.clone(),
                    is_error: false,
                }),
            ),
            None => (Vec::new(), None),
        };
        if let Some(result) = tool_result.filter(|_| message.role == Role::Tool) {
            messages.push(wit::Message {
                role: wit::Role::Tool,
                content: Vec::new(),
                tool_calls: Vec::new(),
                tool_result: Some(result),
            });
            continue;
        }
        let role = match message.role {
            Role::System => wit::Role::System,
            Role::User => wit::Role::User,
            Role::Assistant => wit::Role::Assistant,
            Role::Tool => continue,
        };
        let mut content = Vec::new();
        if !message.content.trim().is_empty() {
            content.push(ContentPart::Text(message.content.clone()));
        }
        // Attachments are the user's (the contract's "Attachments apply to user messages"): a
        // stored one on another role stays in the chat but is not sent, as providers refuse
        // images outside user turns.
        if role == wit::Role::User {
            content.extend(attachments(message.metadata.as_ref()).into_iter().map(part));
        }
        let tool_calls = if role == wit::Role::Assistant {
            tool_calls
        } else {
            Vec::new()
        };
        if content.is_empty() && tool_calls.is_empty() {
            continue;
        }
        messages.push(wit::Message {
            role,
            content,
            tool_calls,
            tool_result: None,
        });
    }
    messages
}

pub fn text_message(role: wit::Role, text: &str) -> wit::Message {
    wit::Message {
        role,
        content: vec![ContentPart::Text(text.to_string())],
        tool_calls: Vec::new(),
        tool_result: None,
    }
}

/// A guess at the input tokens of `messages`, for a budget's hold (`usage/`): about four bytes
/// of text a token, a thousand an image, and a few for each message's framing. Only a hold:
/// what is recorded is what the provider reports.
pub fn token_estimate(messages: &[wit::Message]) -> u64 {
    let text = |t: &str| t.len() as u64 / 4 + 1;
    messages
        .iter()
        .map(|m| {
            let parts: u64 = m
                .content
                .iter()
                .map(|p| match p {
                    ContentPart::Text(t) => text(t),
                    ContentPart::TextFile(f) => text(&f.text),
                    ContentPart::Image(_) => 1_000,
                })
                .sum();
            let calls: u64 = m.tool_calls.iter().map(|c| text(&c.arguments_json)).sum();
            let result = m.tool_result.as_ref().map_or(0, |r| text(&r.output));
            4 + parts + calls + result
        })
        .sum()
}

/// Whether a provider transcript gives the model something to answer: a user message (with
/// content, as [`to_provider`] keeps only those).
pub fn has_user_turn(messages: &[wit::Message]) -> bool {
    messages.iter().any(|m| matches!(m.role, wit::Role::User))
}

/// The validated attachments the HTTP layer folded into `metadata.attachments`, read in place
/// (no copy of the list first: an image is megabytes).
fn attachments(metadata: Option<&Value>) -> Vec<Attachment> {
    metadata
        .and_then(|m| m.get("attachments"))
        .and_then(|a| Vec::<Attachment>::deserialize(a).ok())
        .unwrap_or_default()
}

fn part(attachment: Attachment) -> ContentPart {
    match attachment {
        Attachment::Image {
            mime_type,
            data_url,
            ..
        } => {
            // Validated: `data:<mime>;base64,<data>`. The URL's own buffer becomes the data's.
            let mut data = data_url;
            let start = data.find(',').map_or(data.len(), |comma| comma + 1);
            data.drain(..start);
            ContentPart::Image(wit::Image {
                mime_type,
                data_base64: data,
            })
        }
        Attachment::Text {
            filename,
            mime_type,
            text,
            truncated,
            ..
        } => ContentPart::TextFile(wit::TextFile {
            filename,
            mime_type,
            text,
            truncated,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(role: Role, content: &str) -> MessageRecord {
        MessageRecord {
            id: String::new(),
            created_at: String::new(),
            role,
            content: content.into(),
            name: None,
            metadata: None,
        }
    }

    fn sent(role: Role, content: &str) -> NewMessage {
        NewMessage {
            role,
            content: content.into(),
            name: None,
            metadata: None,
        }
    }

    fn contents(rows: Vec<NewMessage>) -> Vec<String> {
        rows.into_iter().map(|m| m.content).collect()
    }

    #[test]
    fn a_resent_history_stores_only_its_new_turn() {
        let db = [
            stored(Role::System, "sys"),
            stored(Role::User, "hi"),
            stored(Role::Tool, "log"),
            stored(Role::Assistant, "hello"),
        ];
        let history = [
            sent(Role::System, "sys"),
            sent(Role::User, "hi"),
            sent(Role::Assistant, "hello"),
            sent(Role::User, "hi"),
        ];
        assert_eq!(contents(new_rows(&db, &history)), ["hi"]);
        assert!(new_rows(&db, &history[..3]).is_empty());
        // Assistant rows from a client are never stored.
        assert!(new_rows(&[], &[sent(Role::Assistant, "x")]).is_empty());
        assert_eq!(
            contents(new_rows(
                &[],
                &[sent(Role::User, "a"), sent(Role::User, "a")]
            )),
            ["a", "a"]
        );
    }

    #[test]
    fn a_window_of_the_transcript_is_anchored_on_its_last_reply() {
        let db = [
            stored(Role::User, "continue"),
            stored(Role::Assistant, "one"),
            stored(Role::User, "continue"),
            stored(Role::Assistant, "two"),
        ];
        let window = [
            sent(Role::User, "continue"),
            sent(Role::Assistant, "two"),
            sent(Role::User, "continue"),
        ];
        assert_eq!(contents(new_rows(&db, &window)), ["continue"]);
        // The whole transcript again: nothing new.
        let all: Vec<NewMessage> = db.iter().map(|m| sent(m.role, &m.content)).collect();
        assert!(new_rows(&db, &all).is_empty());
    }

    #[test]
    fn the_provider_gets_prompts_first_and_no_tool_logs() {
        let metadata = serde_json::json!({"attachments": [
            {"kind": "image", "id": "i", "filename": "a.png", "mimeType": "image/png", "sizeBytes": 1, "dataUrl": "data:image/png;base64,AAAA"},
            {"kind": "text", "id": "t", "filename": "a.md", "mimeType": "text/markdown", "sizeBytes": 1, "text": "# A", "truncated": true}
        ]});
        let mut user = sent(Role::User, "look");
        user.metadata = Some(metadata);
        let out = to_provider(
            &["internal", "", "extra"],
            &[
                user,
                sent(Role::Tool, "log"),
                sent(Role::Assistant, ""),
                sent(Role::User, " \n"),
            ],
            &[],
        );
        assert_eq!(out.len(), 3);
        assert!(has_user_turn(&out));
        assert!(!has_user_turn(&out[..2]));
        assert!(matches!(out[0].role, wit::Role::System));
        assert!(matches!(&out[1].content[0], ContentPart::Text(t) if t == "extra"));
        let parts = &out[2].content;
        assert!(
            matches!(&parts[1], ContentPart::Image(i) if i.data_base64 == "AAAA" && i.mime_type == "image/png")
        );
        assert!(matches!(&parts[2], ContentPart::TextFile(f) if f.truncated && f.text == "# A"));
    }
}
