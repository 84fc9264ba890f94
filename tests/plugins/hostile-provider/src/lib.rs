//! Test component for the host's driver of `codec-provider` turns. The turn's model picks how
//! its decoder behaves on the upstream's server-sent events:
//!
//! * `echo`: each event's data is a text delta; an event named `end` ends the turn;
//! * `panic`: as `echo`, but an event whose data is `boom` panics (a trap);
//! * `spin`: as `echo`, but an event whose data is `spin` never returns (it first tells the
//!   upstream, `POST {base_url}/spinning`, so a test knows the call holds its instance);
//! * `slow`: as `echo`, but an event whose data is `slow` takes 600 ms to decode (after telling
//!   the upstream, `POST {base_url}/slowing`);
//! * `panic-at-start`: `start` itself panics;
//! * `count`: as `echo`, each delta prefixed with how many turns this instance has started
//!   (`2:data`), so a test sees when an instance is replaced;
//! * `noisy`: as `echo`, but each event also writes 40 KiB to stderr;
//! * `hog`: as `echo`, but each event also takes 40 MiB of memory that the instance keeps: one
//!   event takes an instance past half of a 64 MiB cap (a second would pass the cap);
//! * `endless`: as `echo`, but the turn never ends, not even when the body does: the protocol
//!   says `finish` ends it, and the SDK's decoder always does. So this component exports its
//!   world by hand rather than with `export_codec_provider!`, to wrap the SDK's decoder in one
//!   that breaks that rule.
//!
//! The request goes to `{base_url}/turn` (the `base_url` setting), its body the model name.

use std::cell::RefCell;

use chatd_plugin_sdk::codec::bindings::exports::chatd::plugin::turn_codec::{
    self, Decoded, GuestTurnDecoder,
};
use chatd_plugin_sdk::codec::{Codec, Decoder};
use chatd_plugin_sdk::host::{Header, PluginError, Request, config};
use chatd_plugin_sdk::provider::{FinishReason, TurnEvent, TurnRequest, TurnStream};
use chatd_plugin_sdk::sse::Event;

struct HostileProvider;

/// Turns started in this instance (a shared decoding instance lives across turns).
static STARTS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

impl Codec for HostileProvider {
    fn start(request: TurnRequest) -> Result<(Request, Decoder), PluginError> {
        let starts = STARTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        let base = config::get("base_url")
            .ok_or_else(|| PluginError::InvalidInput("base_url is not set".into()))?;
        let mode = request.model.clone();
        if mode == "panic-at-start" {
            panic!("deliberate panic at start");
        }
        let upstream = Request::post(format!("{base}/turn")).body(mode.clone().into_bytes());
        let decoder = Decoder::new(
            true,
            Misbehaving {
                mode,
                starts,
                ended: false,
            },
            |_| {
                Err(PluginError::MalformedResponse(
                    "a stream was expected".into(),
                ))
            },
        );
        Ok((upstream, decoder))
    }
}

struct Misbehaving {
    mode: String,
    starts: u32,
    ended: bool,
}

impl TurnStream for Misbehaving {
    fn push(&mut self, event: &Event) -> Result<Vec<TurnEvent>, PluginError> {
        match (self.mode.as_str(), event.data.as_str()) {
            ("panic", "boom") => panic!("deliberate panic in a decoder"),
            ("slow", "slow") => {
                announce("slowing");
                let clock = std::time::Instant::now();
                while clock.elapsed() < std::time::Duration::from_millis(600) {
                    std::hint::spin_loop();
                }
            }
            ("spin", "spin") => {
                announce("spinning");
                let mut n: u64 = 0;
                loop {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
            }
            ("noisy", _) => eprintln!("{}", "x".repeat(40 * 1024)),
            // Leaked: kept for the instance's life, as a leak or a cache in a real plugin would be.
            ("hog", _) => {
                std::hint::black_box(Vec::leak(vec![0u8; 40 << 20]));
            }
            ("count", data) => {
                self.ended = event.event == "end";
                return Ok(vec![TurnEvent::TextDelta(format!(
                    "{}:{data}",
                    self.starts
                ))]);
            }
            _ => {}
        }
        self.ended = event.event == "end" && self.mode != "endless";
        Ok(vec![TurnEvent::TextDelta(event.data.clone())])
    }

    fn finished(&self) -> Option<FinishReason> {
        self.ended.then_some(FinishReason::Stop)
    }

    fn end(&mut self) -> Result<FinishReason, PluginError> {
        Err(PluginError::Transport("the stream was cut".into()))
    }
}

/// Tells the upstream what the decoder is about to do (`POST {base_url}/{what}`), so a test
/// can await the moment a call holds its instance. The answer does not matter.
fn announce(what: &str) {
    if let Some(base) = config::get("base_url") {
        let _ = Request::post(format!("{base}/{what}")).send();
    }
}

/// The SDK's decoder, except that an `endless` turn's `finish` does not end the turn.
struct HostileDecoder {
    inner: RefCell<Decoder>,
    endless: bool,
}

impl GuestTurnDecoder for HostileDecoder {
    fn head(&self, status: u16, headers: Vec<Header>) {
        self.inner.borrow_mut().head(status, &headers)
    }

    fn feed(&self, chunk: Vec<u8>) -> Decoded {
        self.inner.borrow_mut().feed(&chunk)
    }

    fn finish(&self) -> Decoded {
        if self.endless {
            return Decoded {
                events: Vec::new(),
                end: None,
            };
        }
        self.inner.borrow_mut().finish()
    }
}

// What `export_codec_provider!` writes, with `HostileDecoder` as the exported decoder.
impl chatd_plugin_sdk::codec::bindings::Guest for HostileProvider {
    fn list_models() -> Result<Vec<String>, PluginError> {
        <HostileProvider as Codec>::list_models()
    }

    fn turn(request: TurnRequest) -> Result<chatd_plugin_sdk::provider::TurnOutcome, PluginError> {
        let (upstream, decoder) = <HostileProvider as Codec>::start(request)?;
        chatd_plugin_sdk::codec::drive(upstream, decoder)
    }
}

impl turn_codec::Guest for HostileProvider {
    type TurnDecoder = HostileDecoder;

    fn start(
        request: TurnRequest,
    ) -> Result<
        (
            chatd_plugin_sdk::host::bindings::chatd::plugin::http::Request,
            turn_codec::TurnDecoder,
        ),
        PluginError,
    > {
        let endless = request.model == "endless";
        let (upstream, decoder) = <HostileProvider as Codec>::start(request)?;
        Ok((
            upstream.into_wit(),
            turn_codec::TurnDecoder::new(HostileDecoder {
                inner: RefCell::new(decoder),
                endless,
            }),
        ))
    }
}

impl chatd_plugin_sdk::codec::bindings::exports::chatd::plugin::provider_profile::Guest
    for HostileProvider
{
    fn describe()
    -> chatd_plugin_sdk::codec::bindings::exports::chatd::plugin::provider_profile::Profile {
        chatd_plugin_sdk::__profile_into!(
            <HostileProvider as Codec>::profile(),
            chatd_plugin_sdk::codec::bindings::exports::chatd::plugin::provider_profile::Profile
        )
    }
}

impl chatd_plugin_sdk::codec::bindings::exports::chatd::plugin::turn_options_support::Guest
    for HostileProvider
{
    fn honoured() -> Vec<chatd_plugin_sdk::codec::OptionKind> {
        <HostileProvider as Codec>::honoured()
    }
}

impl chatd_plugin_sdk::codec::bindings::exports::chatd::plugin::turn_tuning_support::Guest
    for HostileProvider
{
    fn honoured() -> Vec<chatd_plugin_sdk::codec::TuningKind> {
        <HostileProvider as Codec>::tuned()
    }
}

impl chatd_plugin_sdk::codec::bindings::exports::chatd::plugin::embeddings::Guest
    for HostileProvider
{
    fn embed(
        model: String,
        inputs: Vec<String>,
    ) -> Result<chatd_plugin_sdk::codec::Embedded, chatd_plugin_sdk::host::PluginError> {
        <HostileProvider as Codec>::embed(model, inputs)
    }
}

chatd_plugin_sdk::codec::bindings::__export_codec_provider_world!(
    HostileProvider with_types_in chatd_plugin_sdk::codec::bindings
);
