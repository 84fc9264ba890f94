//! The chatd plugin SDK: write a provider, a tool, a search backend or an extractor for chatd as a Wasm
//! component (`wasm32-wasip2`), against the WIT package `chatd:plugin@0.1.4` (the crate's `wit/`,
//! a copy of the workspace's `/wit` that a test keeps identical, so the crate packages alone).
//!
//! A plugin enables one world's feature (`tool`, `provider`, `search` or `extractor`), implements
//! that world's trait (every method but an extractor's has a default that answers "not
//! supported"), and exports it with the world's one macro. It reaches the outside only through the host: [`host::Request`] for HTTP
//! (the host checks every request against the plugin's grant and adds credentials itself),
//! [`host::ssh`], [`host::log`] and [`host::config`].
//!
//! A provider has two worlds to choose from, both under the `provider` feature:
//! `codec::Codec` (`export_codec_provider!`), which builds a turn's request and decodes its
//! answer while the host sends and reads, so no plugin code runs while the upstream is slow
//! (chatd's own providers are codecs); or `provider::Provider` (`export_provider!`), which runs
//! the whole turn itself through the `http` import.
//!
//! # Example: a tool
//!
//! ```ignore
//! // Cargo.toml: crate-type = ["cdylib"]; chatd-plugin-sdk = { features = ["tool"] }
//! use chatd_plugin_sdk::host::{PluginError, ToolSpec, config, Request};
//! use chatd_plugin_sdk::tool::{Tool, ToolOutput};
//!
//! struct Echo;
//!
//! impl Tool for Echo {
//!     fn describe() -> Vec<ToolSpec> {
//!         vec![ToolSpec {
//!             name: "echo".into(),
//!             description: "Repeats its input".into(),
//!             parameters_schema_json: r#"{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}"#.into(),
//!         }]
//!     }
//!
//!     fn invoke(name: String, arguments_json: String) -> Result<ToolOutput, PluginError> {
//!         let args = chatd_plugin_sdk::json::parse_object(&arguments_json)?;
//!         let text = chatd_plugin_sdk::json::required_str(&args, "text")?;
//!         Ok(ToolOutput { content: text.to_string(), summary: None })
//!     }
//! }
//!
//! chatd_plugin_sdk::export_tool!(Echo);
//! ```
//!
//! Build it with `cargo build --release --target wasm32-wasip2` (a plain `cargo build` makes a
//! component for that target), and give it a manifest, `echo.json` beside `echo.wasm`:
//!
//! ```json
//! {"id": "echo", "kind": "tool", "wit": "chatd:plugin@0.1.4", "version": "0.1.0",
//!  "grants": {}, "limits": {"memoryMib": 32, "timeoutMs": 5000}}
//! ```
//!
//! `chatd plugins check echo.wasm` validates both; dropping them into chatd's PLUGINS_DIR loads
//! them without a restart. Or carry the manifest inside the component, so the plugin is one
//! file: [`embed_manifest!`]`("../echo.json")` at the crate root. `chatd plugins call echo.wasm
//! --tool echo --args '{"text":"hi"}'` runs the tool once and prints its result, duration and
//! memory. chatd's docs/plugins.md lists every grant a manifest can ask for.
//!
//! # A new provider, end to end
//!
//! `examples/ollama` in chatd's repository is a whole provider in one file (Ollama's native
//! `/api/chat`, which streams newline-delimited JSON); these steps are how it was written.
//!
//! 1. **A crate**: `crate-type = ["cdylib"]`, `chatd-plugin-sdk` with the `provider` feature,
//!    `serde` and `serde_json`.
//! 2. **The codec** ([`codec::Codec`]), three functions (and a fourth, when the upstream has
//!    them: `honoured()`, the turn options it sends, [`codec::OptionKind`]):
//!    - `profile()`: what chatd should know about it ([`provider::Profile`]). `adapter: Some("ollama")`
//!      lets operators run it under other ids; `images: false` makes chatd refuse image
//!      attachments for it with a 400 instead of calling it; `tools`, `tool_instruction`,
//!      `text_files` and `key_header` (the header the upstream takes its key in, e.g.
//!      `x-api-key`; default `Authorization: Bearer`) say the rest.
//!    - `list_models()`: [`provider::list_models`] at `{base}/api/tags` with a parser of that
//!      body (for an OpenAI-style list, [`provider::openai_model_ids`]).
//!    - `start(request)`: the turn's request, [`codec::post_turn`] of a JSON body to
//!      `{base}/api/chat`, and a [`codec::Decoder`] made of the stream parser and a whole-body
//!      parser. The base URL is [`provider::base_url`]; never set a key, the host adds it.
//!    - `embed(model, inputs)`, when the upstream has embeddings (WIT 0.1.4): the vectors of a
//!      batch, from a request the plugin sends itself ([`host::Request::fetch`]); chatd's library
//!      calls it for `CHATD_EMBEDDING_MODEL`. Unsupported by default.
//! 3. **The request body**: the host's [`provider::TurnRequest`] (messages with text, images and
//!    text files; the tool calls and results of the loop; tools; temperature; max tokens) in the
//!    upstream's shape, [`codec::turn_options`] (`top_p`, `stop`, `tool_choice`,
//!    `response_format`; only those `honoured()` names are ever set) and [`codec::turn_tuning`]
//!    (strict tools, one call per turn, reasoning effort, a seed; only those `tuned()` names).
//!    [`provider::tool_schema`] (or [`provider::raw_tool_schema`], below),
//!    [`provider::text_file_prompt`] and [`provider::json_number`] do what every provider does.
//!    Build objects whose fields take built values (a parsed schema, a message's parts, an
//!    image's data URL) with [`json::object`], which moves each one in: `serde_json::json!`
//!    copies every value it is given. A provider that sends the tools' schemas as they are
//!    writes them raw: [`provider::raw_tool_schema`] checks one without parsing it into a
//!    `Value`, and [`json::ToolsBody`] writes the body's fields with its own `tools` type among
//!    them (chatd's providers do; parsing and writing the schemas again was most of building a
//!    turn's body with tools on).
//! 4. **Private wire types**: `serde` structs of what the upstream answers, every field
//!    optional, unknown ones ignored.
//! 5. **The stream parser** ([`provider::TurnStream`]): `push` turns one event into turn events
//!    (text deltas, tool calls, usage), `finished` says when the answer is complete, `end` what a
//!    body that stopped early means. The [`codec::Decoder`] does the framing: server-sent events
//!    arrive as events, newline-delimited JSON as one event per line; error statuses become
//!    [`host::PluginError::Upstream`] with the upstream's message before your parser sees them.
//! 6. **Tests on recorded bodies**, natively (`cargo test`): [`testing::replay`] feeds a recorded
//!    body through your decoder in pieces of any size, as the host does, and gives the text, the
//!    other events as text ([`testing::show`]) and the finish.
//! 7. **The manifest** beside the `.wasm` (`ollama.json`): `{"id": "ollama", "kind": "provider",
//!    "wit": "chatd:plugin@0.1.4", "provider": {"service": "ollama"}}`. `provider.service` names
//!    the upstream the operator configures; its base URL is what [`provider::base_url`] reads.
//! 8. **Build and drop in**: `cargo build --release --target wasm32-wasip2`, then copy the
//!    built `example_ollama.wasm` as `ollama.wasm` beside `ollama.json` (a component's manifest
//!    is the `.json` of its name) into chatd's PLUGINS_DIR (write the `.wasm` under another
//!    name and rename it). The operator's configuration file gives it its upstream:
//!
//!    ```toml
//!    [services.ollama]
//!    base_url = "http://127.0.0.1:11434"
//!    auth = "none"            # no key; else api_key with bearer, header:NAME or query:NAME
//!    plugins = ["ollama"]
//!    ```
//!
//!    Within about two seconds, without a restart, `GET /v1/models` lists `ollama` with the
//!    server's models and completions with `"provider": "ollama"` run on it. `chatd plugins
//!    check ollama.wasm` says whether it would load; `chatd plugins list` shows it and its grant.
//! 9. **More instances, no code**: with `adapter` in its profile, `[providers.gpu2] adapter =
//!    "ollama"` and a `base_url` run the same component as a second provider.
//!
//! chatd's `tests/api/plugin_provider.rs` does steps 8 and 9 against a scripted upstream.
//!
//! # Talking to an upstream
//!
//! ```ignore
//! use chatd_plugin_sdk::host::{config, Request};
//!
//! let base = config::get("engine_a_base_url").ok_or_else(|| /* not configured */ todo!())?;
//! let found = Request::post(format!("{base}/search"))
//!     .json(&serde_json::json!({ "query": "rust" }))
//!     .send()
//!     .map_err(chatd_plugin_sdk::transport_error)? // denied, timeout, connection…
//!     .error_for_status()?                         // 4xx/5xx → PluginError::Upstream
//!     .json()?;
//! ```
//!
//! Streams: `Response::events()` parses a `text/event-stream` body as it arrives.
//!
//! # Testing
//!
//! Test natively (`cargo test`): [`harness::Harness`] stands in for chatd, answering
//! [`host::Request::send`] and `fetch` with scripted replies, [`host::config`] with its settings,
//! and keeping the log; `Harness::invoke` runs a tool. To run the component itself in the real host against a scripted
//! HTTP upstream, use `chatd::plugins::testing` (chatd's `testing` feature, as a dev-dependency)
//! from a test of yours (`ScriptedUpstream` answers
//! recorded bodies and records requests; `TestHost` loads your `.wasm` with its manifest and
//! chatd's own flags, e.g. `--engine-a-base-url`). chatd's bundled plugins are tested that way.

extern crate self as chatd_plugin_sdk;

#[doc(hidden)]
pub use wit_bindgen as __wit_bindgen;

#[cfg(not(target_family = "wasm"))]
pub mod harness;
pub mod host;
#[doc(hidden)]
pub mod imports;
pub mod json;
#[cfg(not(target_family = "wasm"))]
mod native;
pub mod sse;

#[cfg(feature = "provider")]
pub mod codec;
#[cfg(feature = "extractor")]
pub mod extractor;
#[cfg(feature = "provider")]
pub mod provider;
#[cfg(feature = "search")]
pub mod search;
#[cfg(feature = "provider")]
pub mod testing;
#[cfg(feature = "tool")]
pub mod tool;

use host::{HttpError, PluginError};

/// An [`HttpError`] as the [`PluginError`] a plugin returns.
pub fn transport_error(error: HttpError) -> PluginError {
    match error {
        HttpError::Denied(why) => PluginError::Denied(why),
        HttpError::InvalidRequest(why) => PluginError::InvalidInput(why),
        HttpError::Timeout => PluginError::Transport("the request timed out".into()),
        HttpError::Connection(why) => PluginError::Transport(why),
        HttpError::TooLarge(cap) => PluginError::Transport(format!(
            "the response is larger than the host's {cap}-byte cap"
        )),
    }
}

/// An upstream's error with the upstream's name before its message (`engine_a: Invalid API
/// key`): messages reach clients and models, and they should say who answered. Other errors
/// pass unchanged.
pub fn name_upstream(error: PluginError, name: &str) -> PluginError {
    match error {
        PluginError::Upstream(mut e) => {
            e.message = format!("{name}: {}", e.message);
            PluginError::Upstream(e)
        }
        other => other,
    }
}

/// The default answer of trait methods a plugin does not implement.
pub fn unsupported(what: &str) -> PluginError {
    PluginError::Unsupported(format!("this plugin does not support {what}"))
}

/// Embeds the plugin's manifest in its component, so the plugin is one `.wasm` file: at the
/// crate root, `chatd_plugin_sdk::embed_manifest!("../manifest.json");` (the path as
/// `include_bytes!` takes it). chatd reads the custom section `chatd-manifest` when no
/// `NAME.json` is beside `NAME.wasm`; a file beside it still wins.
#[macro_export]
macro_rules! embed_manifest {
    ($path:literal) => {
        #[cfg(target_family = "wasm")]
        #[unsafe(link_section = "chatd-manifest")]
        #[used]
        static __CHATD_MANIFEST: [u8; include_bytes!($path).len()] = *include_bytes!($path);
    };
}
