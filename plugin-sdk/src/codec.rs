//! The `codec-provider` world (as `embedding-provider`, which adds the provider's
//! [`Profile`], the turn options it honours, the tuning it honours and its embeddings):
//! [`Codec`], [`Decoder`] and [`export_codec_provider!`](crate::export_codec_provider).
//!
//! A codec provider only encodes and decodes: [`Codec::start`] turns a turn request into the
//! upstream [`Request`] and a [`Decoder`] for its answer. The host sends the request and feeds the
//! body to the decoder as it arrives, so no plugin code runs while the upstream is slow, and a
//! host may let one instance decode many turns (chatd does for its own providers). The same two
//! pieces also run the `provider` world's `turn` (the world includes it) through the `http`
//! import, so a host that drives turns through the plugin gets the same answers.
//!
//! With `"provider": {"references": true}` in the manifest, chatd passes a turn's image data and
//! long texts as reference tokens and fills them in as it sends the request: put those strings
//! into the body as they are (inside JSON strings, where serde puts them), and do not decode or
//! measure them. `turn` through the `http` import never gets references.

// A near-copy of the other worlds' `generate!` blocks on purpose: one world each, each
// naming the shared host bindings it reuses through `with`. Keep them alike.
#[doc(hidden)]
#[allow(clippy::too_many_arguments)] // generated lifting code
pub mod bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "chatd:plugin/embedding-provider@0.1.4",
        runtime_path: "chatd_plugin_sdk::__wit_bindgen::rt",
        pub_export_macro: true,
        export_macro_name: "__export_codec_provider_world",
        default_bindings_module: "chatd_plugin_sdk::codec::bindings",
        with: {
            "chatd:plugin/types@0.1.4": crate::host::bindings::chatd::plugin::types,
            "chatd:plugin/http@0.1.4": crate::host::bindings::chatd::plugin::http,
            "chatd:plugin/log@0.1.4": crate::host::bindings::chatd::plugin::log,
            "chatd:plugin/config@0.1.4": crate::host::bindings::chatd::plugin::config,
            "chatd:plugin/provider-types@0.1.4": crate::provider::bindings::chatd::plugin::provider_types,
            "chatd:plugin/turn-events@0.1.4": crate::provider::bindings::chatd::plugin::turn_events,
        },
    });
}

use std::cell::RefCell;

pub use bindings::chatd::plugin::turn_options::{
    JsonSchema, Options as TurnOptions, ResponseFormat, ToolChoice,
};
pub use bindings::chatd::plugin::turn_tuning::{ReasoningEffort, Tuning};
pub use bindings::exports::chatd::plugin::embeddings::Embedded;
pub use bindings::exports::chatd::plugin::turn_codec::Decoded;
pub use bindings::exports::chatd::plugin::turn_options_support::OptionKind;
pub use bindings::exports::chatd::plugin::turn_tuning_support::TuningKind;

use crate::host::{Header, PluginError, Request};
use crate::provider::{
    FinishReason, Profile, TurnEvent, TurnOutcome, TurnRequest, TurnStream, emit,
};

/// A model provider adapter whose turns the host drives. Every method has a default, so a
/// plugin implements what it has.
pub trait Codec {
    /// What it is and takes; see [`Profile`].
    fn profile() -> Profile {
        Profile::default()
    }

    /// The upstream's model ids.
    fn list_models() -> Result<Vec<String>, PluginError> {
        Err(crate::unsupported("listing models"))
    }

    /// The turn options it puts on its upstream's wire; the host sends a turn no others, and
    /// refuses a client's request that sets one it does not name. None by default.
    fn honoured() -> Vec<OptionKind> {
        Vec::new()
    }

    /// The tuning it puts on its upstream's wire (WIT 0.1.3); the host sends a turn no other
    /// kinds. None by default.
    fn tuned() -> Vec<TuningKind> {
        Vec::new()
    }

    /// The upstream request for `request`'s turn, and the decoder of its answer. The turn's
    /// options beyond `request`'s are [`turn_options`], its tuning [`turn_tuning`].
    fn start(request: TurnRequest) -> Result<(Request, Decoder), PluginError> {
        let _ = request;
        Err(crate::unsupported("model turns"))
    }

    /// The vectors of `inputs` by the upstream's embedding model `model` (WIT 0.1.4), sent
    /// through the `http` import ([`Request::send`]). Unsupported by default.
    fn embed(model: String, inputs: Vec<String>) -> Result<Embedded, PluginError> {
        let _ = (model, inputs);
        Err(crate::unsupported("embeddings"))
    }
}

/// The options of the turn being started (only kinds [`Codec::honoured`] names are set); call
/// it from [`Codec::start`].
pub fn turn_options() -> TurnOptions {
    bindings::chatd::plugin::turn_options::current()
}

/// No options: each left to the upstream's default (what [`turn_options`] gives a turn that
/// sets none; for tests of a request builder).
pub fn no_turn_options() -> TurnOptions {
    TurnOptions {
        top_p: None,
        stop: Vec::new(),
        tool_choice: None,
        response_format: None,
    }
}

/// The tuning of the turn being started (only kinds [`Codec::tuned`] names are set); call it
/// from [`Codec::start`].
pub fn turn_tuning() -> Tuning {
    bindings::chatd::plugin::turn_tuning::current()
}

/// No tuning: each kind left to the upstream's default (what [`turn_tuning`] gives a turn that
/// asks none; for tests of a request builder).
pub fn no_turn_tuning() -> Tuning {
    Tuning {
        strict_tools: Vec::new(),
        one_call_per_turn: false,
        reasoning_effort: None,
        seed: None,
        presence_penalty: None,
        frequency_penalty: None,
        logit_bias: Vec::new(),
    }
}

/// A reasoning effort by its WIT name, which is also how OpenAI's wires (chat completions'
/// `reasoning_effort`, the Responses API's `reasoning.effort`) spell it.
pub fn effort_name(effort: ReasoningEffort) -> &'static str {
    match effort {
        ReasoningEffort::None => "none",
        ReasoningEffort::Minimal => "minimal",
        ReasoningEffort::Low => "low",
        ReasoningEffort::Medium => "medium",
        ReasoningEffort::High => "high",
        ReasoningEffort::Xhigh => "xhigh",
    }
}

/// A JSON schema option's schema, parsed (the host checked it is an object).
pub fn schema_value(schema: &JsonSchema) -> Result<serde_json::Value, PluginError> {
    serde_json::from_str(&schema.schema_json).map_err(|e| {
        PluginError::InvalidInput(format!("response_format's schema is not JSON: {e}"))
    })
}

/// Parses a whole (non-streamed) answer body into the turn's events and finish.
type WholeParser = Box<dyn FnMut(&str) -> Result<(Vec<TurnEvent>, FinishReason), PluginError>>;

/// The answer to one turn's request, decoded as its body arrives.
///
/// What it does with a response is the same for every provider, so it lives here: an error status
/// becomes [`PluginError::Upstream`] with the upstream's own message (from up to 64 KiB of the
/// body); a streamed turn answered with `text/event-stream` goes through the provider's
/// [`TurnStream`] event by event; one answered with newline-delimited JSON
/// (`application/x-ndjson`, as Ollama streams) goes through it too, each line as an event's
/// `data` with no name; anything else (a turn that did not stream, or a server that
/// ignored `stream: true` and sent one JSON body) is read whole and given to the provider's
/// whole-body parser. Only a turn that did not ask to stream gets the body as `raw-json`.
pub struct Decoder {
    streaming: bool,
    stream: Box<dyn TurnStream>,
    whole: WholeParser,
    read: Read,
}

enum Read {
    /// `head` has not come yet.
    Head,
    /// Server-sent events, through the provider's stream parser.
    Events(crate::sse::Parser),
    /// Newline-delimited JSON: the line read so far, each whole line an event.
    Lines(Vec<u8>),
    /// One body, parsed when it ends.
    Whole(Vec<u8>),
    /// An error status; the body is read for the upstream's message.
    Error { status: u16, body: Vec<u8> },
    /// The outcome (or an error) was given; nothing more is read.
    Done,
}

/// How much of an error body is read to find its message.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// Content types of newline-delimited JSON streams.
const NDJSON_TYPES: &[&str] = &[
    "application/x-ndjson",
    "application/ndjson",
    "application/jsonl",
];

/// The whole lines of `held` + `chunk` as unnamed events (blank lines skipped, a `\r` before the
/// newline dropped); what follows the last newline stays in `held`.
fn split_lines(held: &mut Vec<u8>, chunk: &[u8]) -> Vec<crate::sse::Event> {
    // Only the new piece is searched: a long line arriving in many pieces is read once.
    let start = held.len();
    held.extend_from_slice(chunk);
    let Some(last) = memchr::memrchr(b'\n', &held[start..]).map(|at| start + at) else {
        return Vec::new();
    };
    let rest = held.split_off(last + 1);
    let whole = std::mem::replace(held, rest);
    whole
        .split(|b| *b == b'\n')
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
        .filter(|line| !line.iter().all(u8::is_ascii_whitespace))
        .map(|line| crate::sse::Event {
            event: String::new(),
            data: String::from_utf8_lossy(line).into_owned(),
            id: None,
        })
        .collect()
}

impl Decoder {
    /// A decoder for a turn that asked to stream (`streaming`) or not, with the provider's
    /// stream parser and whole-body parser.
    pub fn new(
        streaming: bool,
        stream: impl TurnStream + 'static,
        whole: impl FnMut(&str) -> Result<(Vec<TurnEvent>, FinishReason), PluginError> + 'static,
    ) -> Self {
        Self {
            streaming,
            stream: Box::new(stream),
            whole: Box::new(whole),
            read: Read::Head,
        }
    }

    /// The response's status and headers.
    pub fn head(&mut self, status: u16, headers: &[Header]) {
        let event_stream = headers.iter().any(|h| {
            h.name.eq_ignore_ascii_case("content-type")
                && h.value.to_ascii_lowercase().contains("text/event-stream")
        });
        let json = headers.iter().any(|h| {
            h.name.eq_ignore_ascii_case("content-type")
                && h.value.to_ascii_lowercase().contains("application/json")
        });
        let lines = headers.iter().any(|h| {
            h.name.eq_ignore_ascii_case("content-type")
                && NDJSON_TYPES
                    .iter()
                    .any(|t| h.value.to_ascii_lowercase().contains(t))
        });
        self.read = if !(200..300).contains(&status) {
            Read::Error {
                status,
                body: Vec::new(),
            }
        } else if self.streaming && lines {
            Read::Lines(Vec::new())
        } else if self.streaming && (event_stream || !json) {
            Read::Events(crate::sse::Parser::new())
        } else {
            Read::Whole(Vec::new())
        };
    }

    /// The next piece of the body.
    pub fn feed(&mut self, chunk: &[u8]) -> Decoded {
        let mut events = Vec::new();
        let end = match &mut self.read {
            Read::Head => Some(Err(PluginError::InvalidInput(
                "the body came before the response's head".into(),
            ))),
            Read::Events(parser) => {
                let parsed = parser.push(chunk);
                self.relay(parsed, &mut events)
            }
            Read::Lines(line) => {
                let parsed = split_lines(line, chunk);
                self.relay(parsed, &mut events)
            }
            Read::Whole(body) => {
                body.extend_from_slice(chunk);
                None
            }
            Read::Error { body, .. } => {
                body.extend_from_slice(chunk);
                (body.len() >= MAX_ERROR_BODY).then(|| Err(self.upstream_error()))
            }
            Read::Done => None,
        };
        if end.is_some() {
            self.read = Read::Done;
        }
        Decoded { events, end }
    }

    /// Hands `parsed` to the provider's stream parser, adding what it yields to `events`; the
    /// turn's end if one of them ended it. The events before an error still count: they reached
    /// the upstream's client before the error did.
    fn relay(
        &mut self,
        parsed: Vec<crate::sse::Event>,
        events: &mut Vec<TurnEvent>,
    ) -> Option<Result<TurnOutcome, PluginError>> {
        for event in parsed {
            match self.stream.push(&event) {
                Ok(more) => events.extend(more),
                Err(e) => return Some(Err(e)),
            }
            if let Some(finish) = self.stream.finished() {
                return Some(Ok(TurnOutcome {
                    finish,
                    raw_json: None,
                }));
            }
        }
        None
    }

    /// The body ended: the outcome, or the error of a turn cut short.
    pub fn finish(&mut self) -> Decoded {
        // A last line without its newline is still a line; its events count even when the
        // stream then turns out cut.
        let mut events = Vec::new();
        if let Read::Lines(rest) = &mut self.read {
            let rest = std::mem::take(rest);
            let parsed = split_lines(&mut Vec::new(), &[rest.as_slice(), b"\n"].concat());
            if let Some(end) = self.relay(parsed, &mut events) {
                self.read = Read::Done;
                return Decoded {
                    events,
                    end: Some(end),
                };
            }
        }
        let end = match self.finished() {
            Ok((more, outcome)) => {
                events.extend(more);
                Ok(outcome)
            }
            Err(e) => Err(e),
        };
        self.read = Read::Done;
        Decoded {
            events,
            end: Some(end),
        }
    }

    fn finished(&mut self) -> Result<(Vec<TurnEvent>, TurnOutcome), PluginError> {
        match std::mem::replace(&mut self.read, Read::Done) {
            Read::Head => Err(PluginError::InvalidInput(
                "the body ended before the response's head".into(),
            )),
            Read::Events(_) | Read::Lines(_) => Ok((
                Vec::new(),
                TurnOutcome {
                    finish: self.stream.end()?,
                    raw_json: None,
                },
            )),
            Read::Whole(body) => {
                let text = String::from_utf8(body).map_err(|_| {
                    PluginError::MalformedResponse("the response body is not UTF-8".into())
                })?;
                let (events, finish) = (self.whole)(&text)?;
                let raw_json = (!self.streaming).then_some(text);
                Ok((events, TurnOutcome { finish, raw_json }))
            }
            read @ Read::Error { .. } => {
                self.read = read;
                Err(self.upstream_error())
            }
            Read::Done => Err(PluginError::InvalidInput(
                "the turn had already ended".into(),
            )),
        }
    }

    fn upstream_error(&mut self) -> PluginError {
        let Read::Error { status, body } = std::mem::replace(&mut self.read, Read::Done) else {
            unreachable!("only called while reading an error body");
        };
        let cut = &body[..body.len().min(MAX_ERROR_BODY)];
        crate::host::upstream_error(status, cut)
    }
}

/// A turn's upstream request as most APIs take it: `POST {url}` with a JSON body (a `Value`, or
/// one with raw JSON in it, [`crate::json::WithEntry`]), accepting an
/// event stream when the turn streams and JSON when it does not. Add the API's own headers to
/// the result (a version; never a key: the host adds that).
pub fn post_turn<T: serde::Serialize + ?Sized>(
    url: impl Into<String>,
    body: &T,
    streaming: bool,
) -> Request {
    let accept = if streaming {
        "text/event-stream"
    } else {
        "application/json"
    };
    Request::post(url).header("accept", accept).json(body)
}

/// Runs a turn inside the plugin, for the `provider` world's `turn`: sends the request through
/// the `http` import and feeds the answer to the decoder, handing each event to the host's
/// [`emit`]. Stops reading when the turn is complete or the host cancels it.
pub fn drive(request: Request, mut decoder: Decoder) -> Result<TurnOutcome, PluginError> {
    let mut response = request.send().map_err(crate::transport_error)?;
    decoder.head(response.status(), &response.headers());
    loop {
        let decoded = match response.next_chunk() {
            Ok(Some(chunk)) => decoder.feed(&chunk),
            Ok(None) => decoder.finish(),
            // An error status's body cut short still names the upstream's error, which says
            // more than the cut (the host's driver does the same).
            Err(e) => {
                return Err(match decoder.finish().end {
                    Some(Err(upstream @ PluginError::Upstream(_))) => upstream,
                    _ => crate::transport_error(e),
                });
            }
        };
        for event in &decoded.events {
            if !emit(event) {
                return Ok(crate::provider::cancelled());
            }
        }
        if let Some(end) = decoded.end {
            return end;
        }
    }
}

/// The exported `turn-decoder` resource: a [`Decoder`] behind the `&self` the bindings give.
#[doc(hidden)]
pub struct DecoderResource(RefCell<Decoder>);

impl DecoderResource {
    pub fn new(decoder: Decoder) -> Self {
        Self(RefCell::new(decoder))
    }
}

impl bindings::exports::chatd::plugin::turn_codec::GuestTurnDecoder for DecoderResource {
    fn head(&self, status: u16, headers: Vec<Header>) {
        self.0.borrow_mut().head(status, &headers)
    }
    fn feed(&self, chunk: Vec<u8>) -> Decoded {
        self.0.borrow_mut().feed(&chunk)
    }
    fn finish(&self) -> Decoded {
        self.0.borrow_mut().finish()
    }
}

/// Exports a [`Codec`] implementation as the component's `embedding-provider` world (which
/// includes the `provider` world: its `turn` runs the same codec through [`drive`]).
#[macro_export]
macro_rules! export_codec_provider {
    ($ty:ty) => {
        #[doc(hidden)]
        pub struct __ChatdCodecExport;

        impl $crate::codec::bindings::Guest for __ChatdCodecExport {
            fn list_models()
            -> ::std::result::Result<::std::vec::Vec<::std::string::String>, $crate::host::PluginError>
            {
                <$ty as $crate::codec::Codec>::list_models()
            }
            fn turn(
                request: $crate::provider::TurnRequest,
            ) -> ::std::result::Result<$crate::provider::TurnOutcome, $crate::host::PluginError> {
                let (upstream, decoder) = <$ty as $crate::codec::Codec>::start(request)?;
                $crate::codec::drive(upstream, decoder)
            }
        }

        impl $crate::codec::bindings::exports::chatd::plugin::turn_codec::Guest
            for __ChatdCodecExport
        {
            type TurnDecoder = $crate::codec::DecoderResource;

            fn start(
                request: $crate::provider::TurnRequest,
            ) -> ::std::result::Result<
                (
                    $crate::host::bindings::chatd::plugin::http::Request,
                    $crate::codec::bindings::exports::chatd::plugin::turn_codec::TurnDecoder,
                ),
                $crate::host::PluginError,
            > {
                let (upstream, decoder) = <$ty as $crate::codec::Codec>::start(request)?;
                Ok((
                    upstream.into_wit(),
                    $crate::codec::bindings::exports::chatd::plugin::turn_codec::TurnDecoder::new(
                        $crate::codec::DecoderResource::new(decoder),
                    ),
                ))
            }
        }

        impl $crate::codec::bindings::exports::chatd::plugin::provider_profile::Guest
            for __ChatdCodecExport
        {
            fn describe() -> $crate::codec::bindings::exports::chatd::plugin::provider_profile::Profile {
                $crate::__profile_into!(
                    <$ty as $crate::codec::Codec>::profile(),
                    $crate::codec::bindings::exports::chatd::plugin::provider_profile::Profile
                )
            }
        }

        impl $crate::codec::bindings::exports::chatd::plugin::turn_options_support::Guest
            for __ChatdCodecExport
        {
            fn honoured() -> ::std::vec::Vec<$crate::codec::OptionKind> {
                <$ty as $crate::codec::Codec>::honoured()
            }
        }

        impl $crate::codec::bindings::exports::chatd::plugin::turn_tuning_support::Guest
            for __ChatdCodecExport
        {
            fn honoured() -> ::std::vec::Vec<$crate::codec::TuningKind> {
                <$ty as $crate::codec::Codec>::tuned()
            }
        }

        impl $crate::codec::bindings::exports::chatd::plugin::embeddings::Guest
            for __ChatdCodecExport
        {
            fn embed(
                model: ::std::string::String,
                inputs: ::std::vec::Vec<::std::string::String>,
            ) -> ::std::result::Result<$crate::codec::Embedded, $crate::host::PluginError> {
                <$ty as $crate::codec::Codec>::embed(model, inputs)
            }
        }

        $crate::codec::bindings::__export_codec_provider_world!(
            __ChatdCodecExport with_types_in $crate::codec::bindings
        );
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::UpstreamError;
    use crate::provider::test_support::Echo;
    use crate::sse::Event;

    fn decoder(streaming: bool) -> Decoder {
        Decoder::new(streaming, Echo(false), |body| {
            Ok((
                vec![TurnEvent::TextDelta(body.into())],
                FinishReason::Length,
            ))
        })
    }

    fn header(name: &str, value: &str) -> Header {
        Header {
            name: name.into(),
            value: value.into(),
        }
    }

    fn texts(decoded: &Decoded) -> Vec<&str> {
        decoded
            .events
            .iter()
            .map(|e| match e {
                TurnEvent::TextDelta(t) => t.as_str(),
                _ => "?",
            })
            .collect()
    }

    #[test]
    fn a_stream_stops_at_its_terminal_event_and_a_cut_is_an_error() {
        let mut d = decoder(true);
        d.head(200, &[header("Content-Type", "text/event-stream")]);
        let first = d.feed(b"data: a\n\nda");
        assert_eq!(texts(&first), ["a"]);
        assert!(first.end.is_none());
        let last = d.feed(b"ta: b\n\nevent: end\ndata: c\n\ndata: unread\n\n");
        assert_eq!(texts(&last), ["b", "c"]);
        let outcome = last.end.unwrap().unwrap();
        assert_eq!(outcome.finish, FinishReason::Stop);
        assert!(outcome.raw_json.is_none());

        let mut cut = decoder(true);
        cut.head(200, &[header("content-type", "text/event-stream")]);
        cut.feed(b"data: a\n\n");
        assert!(matches!(
            cut.finish().end,
            Some(Err(PluginError::Transport(_)))
        ));
    }

    #[test]
    fn events_before_an_error_in_the_same_chunk_are_kept() {
        let mut d = Decoder::new(true, Failing, |_| unreachable!());
        d.head(200, &[]);
        let decoded = d.feed(b"data: a\n\ndata: fail\n\ndata: unread\n\n");
        assert_eq!(texts(&decoded), ["a"]);
        assert!(matches!(
            decoded.end,
            Some(Err(PluginError::MalformedResponse(_)))
        ));
        // Nothing is read after the end.
        let after = d.feed(b"data: b\n\n");
        assert!(after.events.is_empty() && after.end.is_none());
    }

    /// Fails at an event whose data is `fail`.
    struct Failing;

    impl TurnStream for Failing {
        fn push(&mut self, event: &Event) -> Result<Vec<TurnEvent>, PluginError> {
            if event.data == "fail" {
                return Err(PluginError::MalformedResponse("fail".into()));
            }
            Ok(vec![TurnEvent::TextDelta(event.data.clone())])
        }
        fn finished(&self) -> Option<FinishReason> {
            None
        }
        fn end(&mut self) -> Result<FinishReason, PluginError> {
            Ok(FinishReason::Stop)
        }
    }

    #[test]
    fn a_whole_body_is_parsed_at_its_end_and_kept_raw_only_when_not_streaming() {
        let mut d = decoder(false);
        d.head(200, &[header("content-type", "application/json")]);
        assert!(d.feed(b"{\"a\":").events.is_empty());
        d.feed(b"1}");
        let end = d.finish();
        assert_eq!(texts(&end), ["{\"a\":1}"]);
        let outcome = end.end.unwrap().unwrap();
        assert_eq!(outcome.finish, FinishReason::Length);
        assert_eq!(outcome.raw_json.as_deref(), Some("{\"a\":1}"));

        // A server that ignored `stream: true` and answered JSON.
        let mut json = decoder(true);
        json.head(
            200,
            &[header("content-type", "application/json; charset=utf-8")],
        );
        json.feed(b"{}");
        assert!(json.finish().end.unwrap().unwrap().raw_json.is_none());
    }

    fn upstream_error(decoded: Decoded) -> UpstreamError {
        match decoded.end {
            Some(Err(PluginError::Upstream(e))) => e,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_error_status_becomes_the_upstreams_error() {
        let mut d = decoder(true);
        d.head(429, &[header("content-type", "application/json")]);
        assert!(d.feed(br#"{"error":{"message":"slow"#).end.is_none());
        d.feed(br#" down"}}"#);
        let e = upstream_error(d.finish());
        assert_eq!((e.status, e.message.as_str()), (429, "slow down"));

        let mut empty = decoder(false);
        empty.head(503, &[]);
        assert_eq!(upstream_error(empty.finish()).message, "HTTP 503");

        // A huge error body is not read to its end.
        let mut huge = decoder(false);
        huge.head(500, &[]);
        upstream_error(huge.feed(&vec![b'x'; MAX_ERROR_BODY]));
    }

    #[test]
    fn newline_delimited_json_is_a_stream_of_lines() {
        for piece in [1, 4, usize::MAX] {
            let mut d = decoder(true);
            d.head(200, &[header("Content-Type", "application/x-ndjson")]);
            let mut seen = Vec::new();
            for chunk in b"{\"a\":1}\r\n\n{\"b\":2}\n{\"c\":3}".chunks(piece) {
                let decoded = d.feed(chunk);
                assert!(decoded.end.is_none());
                seen.extend(decoded.events);
            }
            // The last line has no newline: it counts when the body ends.
            let end = d.finish();
            seen.extend(end.events.iter().cloned());
            let texts: Vec<String> = seen
                .iter()
                .map(|e| match e {
                    TurnEvent::TextDelta(t) => t.clone(),
                    _ => "?".into(),
                })
                .collect();
            assert_eq!(texts, [r#"{"a":1}"#, r#"{"b":2}"#, r#"{"c":3}"#], "{piece}");
            assert!(matches!(end.end, Some(Err(PluginError::Transport(_)))));
        }
    }

    #[test]
    fn a_body_before_the_head_is_refused() {
        let mut d = decoder(true);
        assert!(matches!(d.feed(b"data: a\n\n").end, Some(Err(_))));
        let mut d = decoder(true);
        assert!(matches!(d.finish().end, Some(Err(_))));
    }
}
