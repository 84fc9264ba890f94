//! {{name}}: a chatd provider plugin, as a codec. chatd sends the request `start` builds and
//! feeds the answer to the decoder as it arrives, so no plugin code runs while the upstream is
//! slow. The wire format here is a small made-up one to replace with your upstream's:
//!
//! - `GET {base}/models` answers `{"models": ["name", …]}`;
//! - `POST {base}/chat` takes `{"model", "messages": [{"role", "content"}], "stream"}` and answers
//!   newline-delimited JSON when streaming (`{"text": "…"}` lines, then
//!   `{"done": true, "inputTokens": n, "outputTokens": m}`), else that last object with the whole
//!   `text` in it.
//!
//! `{base}` is the operator's `[services.{{name}}]` base URL; chatd adds its key on the wire.
//! chatd's `examples/ollama` is a whole real provider (tools included) in this shape.

use chatd_plugin_sdk::codec::{Codec, Decoder, post_turn};
use chatd_plugin_sdk::host::{ContentPart, PluginError, Request, Role, Usage};
use chatd_plugin_sdk::json::object;
use chatd_plugin_sdk::provider::{self, FinishReason, Profile, TurnEvent, TurnRequest, TurnStream};
use chatd_plugin_sdk::sse::Event;
use serde::Deserialize;

chatd_plugin_sdk::embed_manifest!("../manifest.json");

struct Plugin;

impl Codec for Plugin {
    fn profile() -> Profile {
        Profile {
            // This wire format has no tools and no images: chatd refuses them before a call.
            tools: false,
            images: false,
            ..Profile::default()
        }
    }

    fn list_models() -> Result<Vec<String>, PluginError> {
        let base = provider::base_url()?;
        provider::list_models(&format!("{base}/models"), &[], |body| {
            #[derive(Deserialize)]
            struct Models {
                models: Vec<String>,
            }
            serde_json::from_slice::<Models>(body)
                .map(|m| m.models)
                .map_err(|e| PluginError::MalformedResponse(format!("model list: {e}")))
        })
    }

    fn start(request: TurnRequest) -> Result<(Request, Decoder), PluginError> {
        let base = provider::base_url()?;
        let upstream = post_turn(format!("{base}/chat"), &body(&request)?, request.streaming);
        Ok((upstream, Decoder::new(request.streaming, Stream::default(), whole)))
    }
}

chatd_plugin_sdk::export_codec_provider!(Plugin);

/// The request body of one turn: each message's text parts joined.
fn body(request: &TurnRequest) -> Result<serde_json::Value, PluginError> {
    let mut messages = Vec::new();
    for message in &request.messages {
        let role = match message.role {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => continue,
        };
        let mut text = Vec::new();
        for part in &message.content {
            match part {
                ContentPart::Text(t) => text.push(t.clone()),
                ContentPart::TextFile(file) => text.push(provider::text_file_prompt(file)),
                ContentPart::Image(_) => {
                    return Err(PluginError::InvalidInput("images are not supported".into()));
                }
            }
        }
        messages.push(object([("role", role.into()), ("content", text.join("\n\n").into())]));
    }
    // `object` moves each value in; `serde_json::json!` would copy the messages whole.
    Ok(object([
        ("model", request.model.as_str().into()),
        ("messages", messages.into()),
        ("stream", request.streaming.into()),
    ]))
}

/// One line of the answer (or the whole answer). Every field optional.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Line {
    #[serde(default)]
    text: String,
    #[serde(default)]
    done: bool,
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
}

#[derive(Default)]
struct Stream {
    finish: Option<FinishReason>,
}

impl Stream {
    fn line(&mut self, line: Line) -> Vec<TurnEvent> {
        let mut events = Vec::new();
        if !line.text.is_empty() {
            events.push(TurnEvent::TextDelta(line.text));
        }
        if line.done {
            events.push(TurnEvent::Usage(Usage {
                input_tokens: line.input_tokens,
                output_tokens: line.output_tokens,
                total_tokens: line.input_tokens + line.output_tokens,
            }));
            self.finish = Some(FinishReason::Stop);
        }
        events
    }
}

impl TurnStream for Stream {
    fn push(&mut self, event: &Event) -> Result<Vec<TurnEvent>, PluginError> {
        let line = serde_json::from_str(&event.data)
            .map_err(|e| PluginError::MalformedResponse(format!("a stream line: {e}")))?;
        Ok(self.line(line))
    }

    fn finished(&self) -> Option<FinishReason> {
        self.finish
    }

    fn end(&mut self) -> Result<FinishReason, PluginError> {
        self.finish
            .ok_or_else(|| PluginError::Transport("the stream ended before its last line".into()))
    }
}

fn whole(body: &str) -> Result<(Vec<TurnEvent>, FinishReason), PluginError> {
    let line: Line = serde_json::from_str(body)
        .map_err(|e| PluginError::MalformedResponse(format!("the answer: {e}")))?;
    let mut stream = Stream::default();
    let events = stream.line(Line { done: true, ..line });
    Ok((events, FinishReason::Stop))
}

/// Run natively with `cargo test`: recorded answers fed through the decoder in pieces of any
/// size, as chatd feeds it.
#[cfg(test)]
mod tests {
    use super::*;
    use chatd_plugin_sdk::testing::replay;

    const STREAM: &str = "{\"text\":\"Hello\"}\n{\"text\":\", world\"}\n\
                          {\"done\":true,\"inputTokens\":5,\"outputTokens\":3}\n";

    #[test]
    fn a_streamed_answer_in_any_pieces() {
        for piece in [1, 7, usize::MAX] {
            let decoder = Decoder::new(true, Stream::default(), whole);
            let out = replay(decoder, "application/x-ndjson", STREAM.as_bytes(), piece);
            assert_eq!(out.text(), "Hello, world");
            assert_eq!(out.others(), ["usage 5+3=8"]);
            assert_eq!(out.finish(), FinishReason::Stop);
        }
    }

    #[test]
    fn a_stream_cut_short_is_an_error() {
        let decoder = Decoder::new(true, Stream::default(), whole);
        let out = replay(decoder, "application/x-ndjson", b"{\"text\":\"Hel\"}\n", 4);
        assert_eq!(out.text(), "Hel");
        assert!(matches!(out.error(), PluginError::Transport(_)));
    }

    #[test]
    fn an_answer_that_did_not_stream() {
        let body = br#"{"text":"Hi.","inputTokens":2,"outputTokens":1}"#;
        let out = replay(Decoder::new(false, Stream::default(), whole), "application/json", body, 3);
        assert_eq!(out.text(), "Hi.");
        assert_eq!(out.others(), ["usage 2+1=3"]);
    }
}
