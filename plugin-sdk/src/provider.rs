//! The `provider` world: [`Provider`], [`emit`] and [`export_provider!`](crate::export_provider).

// A near-copy of the other worlds' `generate!` blocks on purpose: one world each, each
// naming the shared host bindings it reuses through `with`. Keep them alike.
#[doc(hidden)]
#[allow(clippy::too_many_arguments)] // generated lifting code
pub mod bindings {
    wit_bindgen::generate!({
        path: "../wit",
        world: "chatd:plugin/provider@0.1.0",
        runtime_path: "chatd_plugin_sdk::__wit_bindgen::rt",
        pub_export_macro: true,
        export_macro_name: "__export_provider_world",
        default_bindings_module: "chatd_plugin_sdk::provider::bindings",
        with: {
            "chatd:plugin/types@0.1.0": crate::host::bindings::chatd::plugin::types,
            "chatd:plugin/http@0.1.0": crate::host::bindings::chatd::plugin::http,
            "chatd:plugin/log@0.1.0": crate::host::bindings::chatd::plugin::log,
            "chatd:plugin/config@0.1.0": crate::host::bindings::chatd::plugin::config,
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

/// A model provider adapter. Both methods have defaults, so a plugin implements what it has.
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

/// An operator-configured base URL the host hands over as the setting `setting` (the lower-cased
/// name of `variable`), without trailing slashes so paths append as `{base}/path`.
pub fn base_url(setting: &str, variable: &str) -> Result<String, PluginError> {
    crate::host::config::get(setting)
        .map(|url| url.trim_end_matches('/').to_string())
        .filter(|url| !url.is_empty())
        .ok_or_else(|| {
            PluginError::InvalidInput(format!("{setting} is not configured ({variable})"))
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
    fn settings_schemas_and_numbers() {
        assert_eq!(json_number(0.7).unwrap().to_string(), "0.7");
        assert!(json_number(f32::NAN).is_none());
        let spec = crate::host::ToolSpec {
            name: "t".into(),
            description: String::new(),
            parameters_schema_json: " ".into(),
        };
        assert_eq!(tool_schema(&spec).unwrap()["type"], "object");
    }
}
