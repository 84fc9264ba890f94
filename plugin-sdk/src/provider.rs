//! The `provider` world: [`Provider`], [`emit`] and [`export_provider!`](crate::export_provider),
//! and what every provider does alike: the [`Profile`] it declares (as a codec), the base URL, a
//! model list at a URL, the stream relay.

// A near-copy of the other worlds' `generate!` blocks on purpose: one world each, each
// naming the shared host bindings it reuses through `with`. Keep them alike.
#[doc(hidden)]
#[allow(clippy::too_many_arguments)] // generated lifting code
pub mod bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "chatd:plugin/provider@0.1.4",
        runtime_path: "chatd_plugin_sdk::__wit_bindgen::rt",
        pub_export_macro: true,
        export_macro_name: "__export_provider_world",
        default_bindings_module: "chatd_plugin_sdk::provider::bindings",
        with: {
            "chatd:plugin/types@0.1.4": crate::host::bindings::chatd::plugin::types,
            "chatd:plugin/http@0.1.4": crate::host::bindings::chatd::plugin::http,
            "chatd:plugin/log@0.1.4": crate::host::bindings::chatd::plugin::log,
            "chatd:plugin/config@0.1.4": crate::host::bindings::chatd::plugin::config,
        },
    });
}

pub use bindings::chatd::plugin::provider_types::{
    FinishReason, TurnEvent, TurnOutcome, TurnRequest,
};

use crate::host::PluginError;

/// Hands one event of the running turn to the host. `false` means the run was cancelled: stop
/// reading the upstream and return.
pub fn emit(event: &TurnEvent) -> bool {
    bindings::chatd::plugin::turn_events::emit(event)
}

/// What a provider declares about itself (the WIT `provider-profile`, exported by
/// [`Codec::profile`](crate::codec::Codec::profile)); the host asks once, when the provider loads.
/// [`Profile::default`] is what the host assumes of a provider that does not say (a plain
/// [`Provider`]): a model API that takes the host's tools and both kinds of attachment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Profile {
    /// Its wire format's name (`chat_completions`): operators can run it under another id,
    /// base URL and key as a declared provider's `adapter`. `None`: not offered.
    pub adapter: Option<String>,
    /// The header the upstream takes the key in (`x-api-key`), as the bare key; `None`:
    /// `Authorization: Bearer <key>`. The host adds it; the plugin never sees the key.
    pub key_header: Option<String>,
    /// Takes the host's tools (the tool loop runs for it).
    pub tools: bool,
    /// Wants the host's tool-loop instruction as the first system message when tools are on.
    pub tool_instruction: bool,
    /// Understands image attachments (the host refuses them for it otherwise).
    pub images: bool,
    /// Understands text-file attachments (the host refuses them for it otherwise).
    pub text_files: bool,
}

impl Default for Profile {
    fn default() -> Self {
        Self {
            adapter: None,
            key_header: None,
            tools: true,
            tool_instruction: false,
            images: true,
            text_files: true,
        }
    }
}

/// A model provider adapter that runs its turns itself. Both methods have defaults, so a plugin
/// implements what it has. It declares no [`Profile`] (the host assumes the default); a
/// [`Codec`](crate::codec::Codec) can.
pub trait Provider {
    /// The upstream's model ids.
    fn list_models() -> Result<Vec<String>, PluginError> {
        Err(crate::unsupported("listing models"))
    }

    /// Runs one model turn, calling [`emit`] for each event as it arrives.
    fn turn(request: TurnRequest) -> Result<TurnOutcome, PluginError> {
        let _ = request;
        Err(crate::unsupported("model turns"))
    }
}

/// A [`Profile`] as one world's generated record (each world generates its own type).
#[doc(hidden)]
#[macro_export]
macro_rules! __profile_into {
    ($profile:expr, $record:path) => {{
        let p: $crate::provider::Profile = $profile;
        $record {
            adapter: p.adapter,
            key_header: p.key_header,
            tools: p.tools,
            tool_instruction: p.tool_instruction,
            images: p.images,
            text_files: p.text_files,
        }
    }};
}

/// Exports a [`Provider`] implementation as the component's `provider` world.
#[macro_export]
macro_rules! export_provider {
    ($ty:ty) => {
        #[doc(hidden)]
        pub struct __ChatdProviderExport;

        impl $crate::provider::bindings::Guest for __ChatdProviderExport {
            fn list_models()
            -> ::std::result::Result<::std::vec::Vec<::std::string::String>, $crate::host::PluginError>
            {
                <$ty as $crate::provider::Provider>::list_models()
            }
            fn turn(
                request: $crate::provider::TurnRequest,
            ) -> ::std::result::Result<$crate::provider::TurnOutcome, $crate::host::PluginError> {
                <$ty as $crate::provider::Provider>::turn(request)
            }
        }

        $crate::provider::bindings::__export_provider_world!(
            __ChatdProviderExport with_types_in $crate::provider::bindings
        );
    };
}

/// How every bundled provider renders a text attachment for the model: a header naming the file
/// (and saying when the client cut it), then its text. One wording, so a chat reads the same
/// whichever provider serves it.
pub fn text_file_prompt(file: &crate::host::TextFile) -> String {
    let cut = if file.truncated { ", truncated" } else { "" };
    format!(
        "Attached file: {} ({}{cut})\n\n{}",
        file.filename, file.mime_type, file.text
    )
}

/// An image attachment as a `data:` URL (`data:image/png;base64,…`).
pub fn image_data_url(image: &crate::host::Image) -> String {
    format!("data:{};base64,{}", image.mime_type, image.data_base64)
}

/// A streamed response's parser, fed one server-sent event at a time. Each provider has its
/// own; [`relay`] drives any of them.
///
/// What a provider says of its round is the order of its events: text and tool calls go out in
/// the order the upstream began them (the WIT's `turn-event`), and text as soon as it arrives.
/// The host streams a round that begins with text live and holds the text of a round that
/// begins with a tool call until its calls are announced. A wire whose items interleave (chat
/// completions' indexed deltas) holds text that arrives after a call began until that call is
/// emitted (`plugins/chat_completions/src/stream.rs`).
pub trait TurnStream {
    /// The turn events one server-sent event yields, in order.
    fn push(&mut self, event: &crate::sse::Event) -> Result<Vec<TurnEvent>, PluginError>;
    /// The finish, once the stream's terminal event has been seen (the rest is not read).
    fn finished(&self) -> Option<FinishReason>;
    /// The body ended: the finish, or the error of a stream cut short.
    fn end(&mut self) -> Result<FinishReason, PluginError>;
}

/// Relays a streamed turn: each event goes through `parser`, and what it yields goes to `emit`
/// at once (the host's [`emit`] in a plugin; a recorder in a unit test). Stops at the parser's
/// terminal event, at the end of the body, or when `emit` answers `false` (the run was
/// cancelled: the upstream is simply no longer read).
pub fn relay(
    events: impl IntoIterator<Item = Result<crate::sse::Event, crate::host::HttpError>>,
    mut parser: impl TurnStream,
    mut emit: impl FnMut(&TurnEvent) -> bool,
) -> Result<TurnOutcome, PluginError> {
    for event in events {
        let event = event.map_err(crate::transport_error)?;
        for turn_event in parser.push(&event)? {
            if !emit(&turn_event) {
                return Ok(cancelled());
            }
        }
        if let Some(finish) = parser.finished() {
            return Ok(TurnOutcome {
                finish,
                raw_json: None,
            });
        }
    }
    Ok(TurnOutcome {
        finish: parser.end()?,
        raw_json: None,
    })
}

/// Hands the events of a whole (non-streamed) response to `emit` and returns its outcome, with
/// the body as `raw_json`.
pub fn deliver(
    events: &[TurnEvent],
    finish: FinishReason,
    body: String,
    mut emit: impl FnMut(&TurnEvent) -> bool,
) -> TurnOutcome {
    for event in events {
        if !emit(event) {
            return cancelled();
        }
    }
    TurnOutcome {
        finish,
        raw_json: Some(body),
    }
}

/// What a turn returns when the host cancelled it (`emit` answered `false`); nobody reads it.
pub fn cancelled() -> TurnOutcome {
    TurnOutcome {
        finish: FinishReason::Other,
        raw_json: None,
    }
}

/// The setting a provider's upstream base URL comes under: the service of the provider's
/// manifest (`provider.service`) when it serves under its own id, or the operator's declared
/// provider when it runs as an adapter.
pub const BASE_URL: &str = "base_url";

/// The provider's upstream base URL (the [`BASE_URL`] setting), without trailing slashes so
/// paths append as `{base}/path`.
pub fn base_url() -> Result<String, PluginError> {
    crate::host::config::get(BASE_URL)
        .map(|url| url.trim_end_matches('/').to_string())
        .filter(|url| !url.is_empty())
        .ok_or_else(|| {
            PluginError::InvalidInput(
                "no upstream is configured for this provider (its service has no base URL)".into(),
            )
        })
}

/// The model ids `GET {url}` lists, read from the body by `parse` (e.g. [`openai_model_ids`]).
/// `headers` are sent as given (an API version; never a key: the host adds that).
pub fn list_models(
    url: &str,
    headers: &[(&str, &str)],
    parse: impl FnOnce(&[u8]) -> Result<Vec<String>, PluginError>,
) -> Result<Vec<String>, PluginError> {
    let mut request = crate::host::Request::get(url).header("accept", "application/json");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let body = request
        .send()
        .map_err(crate::transport_error)?
        .error_for_status()?
        .bytes()
        .map_err(crate::transport_error)?;
    parse(&body)
}

/// The ids of an OpenAI-style model list (`{"data": [{"id": …}, …]}`, which most
/// OpenAI-compatible servers answer), trimmed, sorted and without repeats.
pub fn openai_model_ids(body: &[u8]) -> Result<Vec<String>, PluginError> {
    #[derive(serde::Deserialize)]
    struct List {
        data: Vec<Entry>,
    }
    #[derive(serde::Deserialize)]
    struct Entry {
        #[serde(default)]
        id: Option<String>,
    }
    let list: List = serde_json::from_slice(body).map_err(|e| {
        PluginError::MalformedResponse(format!("unexpected model list response: {e}"))
    })?;
    let mut ids: Vec<String> = list
        .data
        .into_iter()
        .filter_map(|model| model.id)
        .map(|id| id.trim().to_string())
        .filter(|id| !id.is_empty())
        .collect();
    ids.sort();
    ids.dedup();
    Ok(ids)
}

/// The schema of a tool that takes no parameters.
const NO_PARAMETERS: &str = r#"{"type":"object","properties":{}}"#;

/// A tool's parameter schema as the raw JSON the host gave, checked to be one JSON value but not
/// parsed into a `Value`: to be written into an upstream body as it is ([`crate::json::WithEntry`]).
/// An empty text means "no parameters".
pub fn raw_tool_schema(
    tool: &crate::host::ToolSpec,
) -> Result<&serde_json::value::RawValue, PluginError> {
    let text = &tool.parameters_schema_json;
    // JSON's whitespace around the value is skipped by the parser (the value is the text
    // between); anything else around it is refused, as parsing it whole refused it.
    let text = if text.trim().is_empty() {
        NO_PARAMETERS
    } else {
        text
    };
    serde_json::from_str(text).map_err(|e| {
        PluginError::InvalidInput(format!(
            "tool {}: the parameters schema is not valid JSON: {e}",
            tool.name
        ))
    })
}

/// A tool's parameter schema as JSON; an empty text means "no parameters".
pub fn tool_schema(tool: &crate::host::ToolSpec) -> Result<serde_json::Value, PluginError> {
    if tool.parameters_schema_json.trim().is_empty() {
        return Ok(serde_json::json!({"type": "object", "properties": {}}));
    }
    serde_json::from_str(&tool.parameters_schema_json).map_err(|e| {
        PluginError::InvalidInput(format!(
            "tool {}: the parameters schema is not valid JSON: {e}",
            tool.name
        ))
    })
}

/// A sampling setting as the client wrote it (`0.7`, not the `0.699999988…` of a widened
/// `f32`); `None` when it is not a finite number.
pub fn json_number(value: f32) -> Option<serde_json::Value> {
    let widened: f64 = value.to_string().parse().ok()?;
    serde_json::Number::from_f64(widened).map(serde_json::Value::Number)
}

/// A stream parser for the SDK's own tests.
#[cfg(test)]
pub(crate) mod test_support {
    use super::{FinishReason, PluginError, TurnEvent, TurnStream};
    use crate::sse::Event;

    /// Yields one text delta per event, ends at an event named `end`, and calls a body that
    /// ends before that a cut (`Transport("cut")`).
    pub struct Echo(pub bool);

    impl TurnStream for Echo {
        fn push(&mut self, event: &Event) -> Result<Vec<TurnEvent>, PluginError> {
            self.0 = event.event == "end";
            Ok(vec![TurnEvent::TextDelta(event.data.clone())])
        }
        fn finished(&self) -> Option<FinishReason> {
            self.0.then_some(FinishReason::Stop)
        }
        fn end(&mut self) -> Result<FinishReason, PluginError> {
            Err(PluginError::Transport("cut".into()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::Echo;
    use super::*;
    use crate::sse::Event;

    fn event(name: &str, data: &str) -> Result<Event, crate::host::HttpError> {
        Ok(Event {
            event: name.into(),
            data: data.into(),
            id: None,
        })
    }

    #[test]
    fn relay_stops_at_the_end_on_cancel_and_on_a_cut() {
        let mut seen = 0;
        let out = relay(
            [event("", "a"), event("end", "b"), event("", "unread")],
            Echo(false),
            |_| {
                seen += 1;
                true
            },
        )
        .unwrap();
        assert!(matches!(out.finish, FinishReason::Stop));
        assert_eq!(seen, 2);
        let out = relay([event("", "a"), event("", "b")], Echo(false), |_| false).unwrap();
        assert!(matches!(out.finish, FinishReason::Other));
        assert!(relay([event("", "a")], Echo(false), |_| true).is_err());
    }

    #[test]
    fn the_recorded_openai_list_gives_sorted_ids() {
        let ids = openai_model_ids(include_bytes!(
            "../../tests/fixtures/upstream/models_list/openai_list_models.response.json"
        ))
        .unwrap();
        assert_eq!(ids.len(), 96);
        assert_eq!(ids[..2], ["babbage-002", "chatgpt-4o-latest"]);
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        // An agent server's list with odd entries: no id, a blank id, a repeat.
        let body = br#"{"object":"list","data":[{"id":"hermes-agent"},{"object":"model"},{"id":" "},{"id":"hermes-agent"}]}"#;
        assert_eq!(openai_model_ids(body).unwrap(), ["hermes-agent"]);
        // One model's record is not a list.
        let one = include_bytes!(
            "../../tests/fixtures/upstream/models_list/openai_retrieve_model.response.json"
        );
        assert!(matches!(
            openai_model_ids(one),
            Err(PluginError::MalformedResponse(_))
        ));
    }

    #[test]
    fn settings_schemas_and_numbers() {
        assert_eq!(json_number(0.7).unwrap().to_string(), "0.7");
        assert!(json_number(f32::NAN).is_none());
        let spec = crate::host::ToolSpec {
            name: "t".into(),
            description: String::new(),
            parameters_schema_json: " ".into(),
        };
        assert_eq!(tool_schema(&spec).unwrap()["type"], "object");
        assert_eq!(raw_tool_schema(&spec).unwrap().get(), NO_PARAMETERS);
        let raw = |schema: &str| {
            let spec = crate::host::ToolSpec {
                parameters_schema_json: schema.into(),
                ..spec.clone()
            };
            raw_tool_schema(&spec).map(|raw| raw.get().to_string())
        };
        // As given, spaces inside included; JSON's whitespace around the value is not part of it.
        assert_eq!(raw(" {\"a\": [1]}\n").unwrap(), "{\"a\": [1]}");
        for not_one_value in ["{\"a\":", "{} {}", "{\"a\":\"\\x\"}", "\u{a0}{}"] {
            let err = raw(not_one_value).unwrap_err();
            assert!(
                matches!(&err, PluginError::InvalidInput(why) if why.starts_with("tool t: the parameters schema is not valid JSON")),
                "{not_one_value}: {err:?}"
            );
        }
    }
}
