//! Large values of a turn held by the host and passed to a provider plugin by reference.
//!
//! Why: a turn's request is copied into the plugin's memory, and the plugin builds the upstream
//! body from it, so a request the contract allows (32 MiB of attachments) needed twice that in a
//! sandbox capped at 64 MiB, and more per turn of the tool loop. A provider whose manifest says
//! `"provider": {"references": true}` gets, in place of each image's data and of each text
//! longer than [`INLINE_BYTES`] (or than a token, once a turn's inline text would pass
//! [`INLINE_BUDGET`]), a short token. It puts the token where the value belongs in the
//! request body it builds, and the host, sending that body, puts the value back. The plugin's
//! memory then holds the turn's small parts; the host holds each value once, shared by every
//! turn of the completion.
//!
//! A token is `@chatd:<nonce>:<n>@`: the nonce is new per completion and unguessable (a UUIDv7:
//! 74 random bits), so no text of the chat can name a value, and the characters need no escaping in JSON. In a JSON body (a
//! Content-Type naming `json`) a text is written escaped for a JSON string, as the token stands
//! inside one; image data (base64) and any value in another body is written as it is.

use std::sync::Arc;

use memchr::memmem;

use crate::plugins::bindings::imports::chatd::plugin::types::{
    ContentPart, Image, Message, TextFile, ToolResult,
};

/// Texts up to this many bytes stay inline: the common case costs nothing.
pub const INLINE_BYTES: usize = 16 * 1024;

/// The most text a turn's messages keep inline in all: past it (a long history of short
/// messages), every text longer than a token goes by reference too.
pub const INLINE_BUDGET: usize = 4 * 1024 * 1024;

/// Texts this short stay inline whatever the budget: a token is about as long.
const SHORTER_THAN_A_TOKEN: usize = 64;

/// The values of one completion's turns, by reference.
#[derive(Debug)]
pub struct Refs {
    /// `@chatd:<nonce>:`, what every token of this completion starts with.
    prefix: String,
    values: Vec<Held>,
}

/// The length past which a text of `messages` goes by reference: [`INLINE_BYTES`], or, when the
/// texts up to it pass [`INLINE_BUDGET`] in all, that of a token.
fn inline_limit(messages: &[Message]) -> usize {
    inline_limit_of(messages.iter().flat_map(text_lengths))
}

fn inline_limit_of(lengths: impl Iterator<Item = usize>) -> usize {
    let inline: usize = lengths.filter(|&n| n <= INLINE_BYTES).sum();
    if inline > INLINE_BUDGET {
        SHORTER_THAN_A_TOKEN
    } else {
        INLINE_BYTES
    }
}

/// The lengths of [`texts`].
fn text_lengths(message: &Message) -> impl Iterator<Item = usize> + '_ {
    let parts = message.content.iter().filter_map(|part| match part {
        ContentPart::Text(text) => Some(text.len()),
        ContentPart::TextFile(file) => Some(file.text.len()),
        ContentPart::Image(_) => None,
    });
    parts.chain(message.tool_result.as_ref().map(|r| r.output.len()))
}

/// The texts of a message that may go by reference: its text parts, text files and tool result
/// (not its tool calls' arguments, which a provider parses).
fn texts(message: &mut Message) -> impl Iterator<Item = &mut String> {
    let parts = message.content.iter_mut().filter_map(|part| match part {
        ContentPart::Text(text) => Some(text),
        ContentPart::TextFile(file) => Some(&mut file.text),
        ContentPart::Image(_) => None,
    });
    parts.chain(message.tool_result.as_mut().map(|r| &mut r.output))
}

/// A value, moved here from the message it was in (an `Arc<String>`, not an `Arc<str>`, which
/// would copy it).
#[derive(Debug)]
enum Held {
    /// Written as it is (base64 needs no escaping).
    Raw(Arc<String>),
    /// Written escaped for a JSON string in a JSON body.
    Text(Arc<String>),
}

/// A body the references could not be put back into.
#[derive(Debug, thiserror::Error)]
pub enum ExpandError {
    #[error("the request body names a reference this turn does not have: {0}")]
    Unknown(String),
    /// A plugin that writes a token many times cannot make the host build more than this.
    #[error("the request body, its references filled in, is larger than the host's {0}-byte cap")]
    TooLarge(usize),
}

impl Default for Refs {
    fn default() -> Self {
        Self::new()
    }
}

impl Refs {
    pub fn new() -> Self {
        Self {
            prefix: format!("@chatd:{}:", uuid::Uuid::now_v7().simple()),
            values: Vec::new(),
        }
    }

    /// Moves the large values of `messages` here, leaving tokens in their place: every image's
    /// data, and texts, text files and tool results longer than [`INLINE_BYTES`]; then, should
    /// the texts left inline still pass [`INLINE_BUDGET`] in all, every one longer than a token.
    pub fn take_large(&mut self, messages: &mut [Message]) {
        for message in messages.iter_mut() {
            for part in &mut message.content {
                if let ContentPart::Image(image) = part {
                    let data = std::mem::take(&mut image.data_base64);
                    image.data_base64 = self.hold(Held::Raw(Arc::new(data)));
                }
            }
        }
        let over = inline_limit(messages);
        for message in messages.iter_mut() {
            for text in texts(message) {
                if text.len() > over {
                    let value = std::mem::take(text);
                    *text = self.hold(Held::Text(Arc::new(value)));
                }
            }
        }
    }

    /// A copy of `messages` whose large values are tokens this table does not hold: what a
    /// provider sees of a turn, for a request that is built and never sent (a check), without
    /// copying the values.
    pub fn stand_ins(messages: &[Message]) -> Vec<Message> {
        let stand_in = "@chatd:check:0@";
        let over = inline_limit_of(messages.iter().flat_map(text_lengths));
        let short = |text: &String| {
            if text.len() > over {
                stand_in.to_string()
            } else {
                text.clone()
            }
        };
        messages
            .iter()
            .map(|m| Message {
                role: m.role,
                content: m
                    .content
                    .iter()
                    .map(|part| match part {
                        ContentPart::Image(image) => ContentPart::Image(Image {
                            mime_type: image.mime_type.clone(),
                            data_base64: stand_in.to_string(),
                        }),
                        ContentPart::Text(text) => ContentPart::Text(short(text)),
                        ContentPart::TextFile(file) => ContentPart::TextFile(TextFile {
                            filename: file.filename.clone(),
                            mime_type: file.mime_type.clone(),
                            text: short(&file.text),
                            truncated: file.truncated,
                        }),
                    })
                    .collect(),
                tool_calls: m.tool_calls.clone(),
                tool_result: m.tool_result.as_ref().map(|r| ToolResult {
                    call_id: r.call_id.clone(),
                    name: r.name.clone(),
                    output: short(&r.output),
                    is_error: r.is_error,
                }),
            })
            .collect()
    }

    /// What `text` stands for, if it is one of this table's tokens; else `text` itself (the
    /// tool loop reads a transcript's attachments back for the interpreter's folder).
    pub fn resolve<'a>(&'a self, text: &'a str) -> &'a str {
        let index = text
            .strip_prefix(self.prefix.as_str())
            .and_then(|rest| rest.strip_suffix('@'))
            .and_then(|n| n.parse::<usize>().ok());
        match index.and_then(|i| self.values.get(i)) {
            Some(Held::Raw(value) | Held::Text(value)) => value,
            None => text,
        }
    }

    fn hold(&mut self, value: Held) -> String {
        self.values.push(value);
        format!("{}{}@", self.prefix, self.values.len() - 1)
    }

    /// `body` with every token replaced by its value; `json` says whether texts are escaped for
    /// a JSON string. A body without tokens is returned as it is; one that would grow past `max`
    /// bytes is refused as it grows.
    pub fn expand(&self, body: Vec<u8>, json: bool, max: usize) -> Result<Vec<u8>, ExpandError> {
        let finder = memmem::Finder::new(self.prefix.as_bytes());
        let mut found = finder.find_iter(&body).peekable();
        if found.peek().is_none() {
            return Ok(body);
        }
        let held: usize = self.values.iter().map(|v| v.len()).sum();
        let mut out = Vec::with_capacity((body.len() + held + held / 8).min(max));
        let mut copied = 0;
        for at in found {
            if at < copied {
                continue;
            }
            let rest = &body[at + self.prefix.len()..];
            let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
            let value = std::str::from_utf8(&rest[..digits])
                .ok()
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|_| rest.get(digits) == Some(&b'@'))
                .and_then(|n| self.values.get(n));
            let Some(value) = value else {
                let shown = String::from_utf8_lossy(&rest[..digits.min(20)]);
                return Err(ExpandError::Unknown(format!("{}{shown}", self.prefix)));
            };
            out.extend_from_slice(&body[copied..at]);
            value.write(&mut out, json);
            if out.len() > max {
                return Err(ExpandError::TooLarge(max));
            }
            copied = at + self.prefix.len() + digits + 1;
        }
        out.extend_from_slice(&body[copied..]);
        Ok(out)
    }
}

impl Held {
    fn len(&self) -> usize {
        match self {
            Held::Raw(v) | Held::Text(v) => v.len(),
        }
    }

    fn write(&self, out: &mut Vec<u8>, json: bool) {
        match self {
            Held::Text(text) if json => {
                let quoted = serde_json::to_string(text.as_str()).expect("a string serializes");
                out.extend_from_slice(&quoted.as_bytes()[1..quoted.len() - 1]);
            }
            Held::Raw(value) | Held::Text(value) => out.extend_from_slice(value.as_bytes()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::bindings::imports::chatd::plugin::types::Role;

    fn message(content: Vec<ContentPart>) -> Message {
        Message {
            role: Role::User,
            content,
            tool_calls: Vec::new(),
            tool_result: None,
        }
    }

    #[test]
    fn large_values_leave_tokens_that_expand_back_in_a_json_body() {
        let big = format!("\"quoted\"\n{}", "x".repeat(INLINE_BYTES));
        let mut messages = vec![message(vec![
            ContentPart::Text("short stays".into()),
            ContentPart::Text(big.clone()),
            ContentPart::Image(Image {
                mime_type: "image/png".into(),
                data_base64: "iVBORw0KGgo=".into(),
            }),
            ContentPart::TextFile(TextFile {
                filename: "a.md".into(),
                mime_type: "text/markdown".into(),
                text: "small file".into(),
                truncated: false,
            }),
        ])];
        let mut refs = Refs::new();
        refs.take_large(&mut messages);
        let ContentPart::Text(short) = &messages[0].content[0] else {
            unreachable!()
        };
        assert_eq!(short, "short stays");
        let ContentPart::Text(token) = &messages[0].content[1] else {
            unreachable!()
        };
        assert!(
            token.starts_with("@chatd:") && token.ends_with('@'),
            "{token}"
        );
        // Read back where the host needs the value itself; anything else is itself.
        assert_eq!(refs.resolve(token), big);
        assert_eq!(refs.resolve("short stays"), "short stays");
        assert_eq!(refs.resolve("@chatd:other:0@"), "@chatd:other:0@");
        let ContentPart::Image(image) = &messages[0].content[2] else {
            unreachable!()
        };
        // What a plugin builds: the tokens inside JSON strings, as serde writes them.
        let body = serde_json::json!({
            "text": format!("File:\n{token}"),
            "image": format!("data:image/png;base64,{}", image.data_base64),
        });
        let expanded = refs
            .expand(serde_json::to_vec(&body).unwrap(), true, usize::MAX)
            .unwrap();
        let expanded: serde_json::Value = serde_json::from_slice(&expanded).unwrap();
        assert_eq!(expanded["text"], format!("File:\n{big}"));
        assert_eq!(expanded["image"], "data:image/png;base64,iVBORw0KGgo=");
        // Not JSON: written as it is.
        let raw = refs
            .expand(token.clone().into_bytes(), false, usize::MAX)
            .unwrap();
        assert_eq!(raw, big.as_bytes());
        // Two tokens side by side are both filled in.
        let twice = format!("{token}{token}").into_bytes();
        let raw = refs.expand(twice, false, usize::MAX).unwrap();
        assert_eq!(raw, format!("{big}{big}").as_bytes());
        // A token written over and over cannot make the host build past the cap.
        let bomb = token.repeat(1_000).into_bytes();
        assert!(matches!(
            refs.expand(bomb, false, 1024 * 1024),
            Err(ExpandError::TooLarge(_))
        ));
    }

    #[test]
    fn past_the_budget_every_text_longer_than_a_token_goes_by_reference() {
        let small = "z".repeat(1000);
        let mut messages: Vec<Message> = (0..5000)
            .map(|_| message(vec![ContentPart::Text(small.clone())]))
            .collect();
        messages.push(message(vec![ContentPart::Text("hi".into())]));
        let mut refs = Refs::new();
        refs.take_large(&mut messages);
        assert!(
            matches!(&messages[0].content[0], ContentPart::Text(t) if t.starts_with("@chatd:"))
        );
        assert!(matches!(&messages[5000].content[0], ContentPart::Text(t) if t == "hi"));
        // Under the budget, the same texts stay inline.
        let mut few: Vec<Message> = (0..10)
            .map(|_| message(vec![ContentPart::Text(small.clone())]))
            .collect();
        refs.take_large(&mut few);
        assert!(matches!(&few[0].content[0], ContentPart::Text(t) if *t == small));
    }

    #[test]
    fn stand_ins_keep_the_small_values_and_replace_the_large() {
        let big = "y".repeat(INLINE_BYTES + 1);
        let messages = vec![message(vec![
            ContentPart::Text("kept".into()),
            ContentPart::Text(big.clone()),
            ContentPart::Image(Image {
                mime_type: "image/jpeg".into(),
                data_base64: "/9j/".into(),
            }),
        ])];
        let copy = Refs::stand_ins(&messages);
        assert!(matches!(&copy[0].content[0], ContentPart::Text(t) if t == "kept"));
        assert!(matches!(&copy[0].content[1], ContentPart::Text(t) if t.starts_with("@chatd:")));
        assert!(
            matches!(&copy[0].content[2], ContentPart::Image(i) if i.mime_type == "image/jpeg" && i.data_base64.starts_with("@chatd:"))
        );
        // The original is untouched.
        assert!(matches!(&messages[0].content[1], ContentPart::Text(t) if *t == big));
    }

    #[test]
    fn a_body_without_tokens_is_untouched_and_an_unknown_token_is_refused() {
        let refs = Refs::new();
        let body = b"{\"a\":\"@chatd:not-this-one:0@\"}".to_vec();
        assert_eq!(refs.expand(body.clone(), true, usize::MAX).unwrap(), body);
        let forged = format!("{{\"a\":\"{}7@\"}}", refs.prefix).into_bytes();
        assert!(refs.expand(forged, true, usize::MAX).is_err());
    }
}
