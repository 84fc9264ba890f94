//! One host-driven turn: `start` in the plugin (the upstream request and its decoder), the
//! request sent under the plugin's HTTP grant, the answer's body fed to the decoder chunk by
//! chunk (or whole, for a turn that does not stream), each decoded event to the run.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use super::*;

impl Codecs {
    /// Runs one turn: `start` in the plugin, the request from the host, the body through the
    /// plugin's decoder, each event to `events` (a closed receiver cancels the turn). The
    /// manifest's time limit covers the whole turn.
    pub(crate) async fn turn(
        &self,
        request: TurnRequest,
        asks: Arc<TurnAsks>,
        refs: Option<Arc<Refs>>,
        events: mpsc::Sender<TurnEvent>,
        seen: &UpstreamSeen,
    ) -> Result<Result<TurnOutcome, PluginError>, CallError> {
        let manifest = &self.context.manifest;
        let limit = Duration::from_millis(manifest.limits.timeout_ms);
        let clock = std::time::Instant::now();
        let out_of_time = || CallError::Timeout {
            id: manifest.id.clone(),
            after: limit,
        };
        match tokio::time::timeout(limit, self.drive(request, asks, refs, events, seen)).await {
            // The upstream request's own deadline is the same limit, started a moment later;
            // when both pass in the same timer tick the request's may be seen first. Either
            // way the turn ran out of time.
            Ok(Ok(Err(PluginError::Transport(why))))
                if why == TIMED_OUT && clock.elapsed() >= limit =>
            {
                Err(out_of_time())
            }
            Ok(outcome) => outcome,
            Err(_) => Err(out_of_time()),
        }
    }

    async fn drive(
        &self,
        request: TurnRequest,
        asks: Arc<TurnAsks>,
        refs: Option<Arc<Refs>>,
        events: mpsc::Sender<TurnEvent>,
        seen: &UpstreamSeen,
    ) -> Result<Result<TurnOutcome, PluginError>, CallError> {
        let id = &self.context.manifest.id;
        let streaming = request.streaming;
        // Boxed: starting is over in a moment, and inline its state would be part of the turn's
        // future (the memory of every live stream).
        let start = telemetry::trace::plugin_call(id, "start");
        let started = Box::pin(self.start(request, asks))
            .instrument(start.clone())
            .await;
        telemetry::trace::failed(&start, started.as_ref().err().map(CallError::kind));
        let (mut upstream, decoder) = match started? {
            Ok(started) => started,
            Err(e) => return Ok(Err(e)),
        };
        // Only a turn with references has its body taken to be filled in.
        if let Some(refs) = &refs
            && let Some(body) = upstream.body.take()
        {
            let json = upstream.headers.iter().any(|h| {
                h.name.eq_ignore_ascii_case("content-type")
                    && h.value.to_ascii_lowercase().contains("json")
            });
            match refs.expand(body, json, egress::MAX_REQUEST_BODY_BYTES) {
                Ok(body) => upstream.body = Some(body),
                // What the client sent, escaped for the upstream, passes the cap: its request.
                Err(e @ ExpandError::TooLarge(_)) => {
                    return Ok(Err(PluginError::InvalidInput(e.to_string())));
                }
                Err(e) => return Ok(Err(PluginError::Internal(e.to_string()))),
            }
        }
        // One span for the body's decoding, however many calls it takes (one per piece).
        let decode = telemetry::trace::plugin_call(id, "decode");
        let decoded = self
            .decode(&decoder, upstream, streaming, events, seen)
            .instrument(decode.clone())
            .await
            .map_err(|failure| failure.into_call_error(id));
        telemetry::trace::failed(&decode, decoded.as_ref().err().map(CallError::kind));
        decoded
    }

    /// Builds a turn's upstream request in the plugin (`start`) and drops it: the plugin's own
    /// refusal of the request (a parameter the model does not take) before anything is sent.
    pub(crate) async fn check(
        &self,
        request: TurnRequest,
        asks: Arc<TurnAsks>,
    ) -> Result<Result<(), PluginError>, CallError> {
        Ok(self.start(request, asks).await?.map(|_started| ()))
    }

    /// `start` in the plugin: the turn's upstream request and its decoder.
    async fn start(
        &self,
        request: TurnRequest,
        asks: Arc<TurnAsks>,
    ) -> Result<Result<(http_host::WitRequest, Decoder), PluginError>, CallError> {
        let id = &self.context.manifest.id;
        let request = Arc::new(request);
        // Twice at most: a turn that picked an instance just as another turn's call broke it
        // tries a fresh one.
        let mut retried = false;
        let (shared, started) = loop {
            let shared = self.pick();
            let (request, asks) = (request.clone(), asks.clone());
            let started = shared
                .call(
                    &self.context,
                    move |store, codec| {
                        Box::pin(async move {
                            // The instance is shared: what the turn asks is this call's only.
                            store.data_mut().turn_asks = Some(asks);
                            let started = codec
                                .chatd_plugin_turn_codec()
                                .call_start(&mut *store, &request)
                                .await;
                            store.data_mut().turn_asks = None;
                            started
                        })
                    },
                    // A decoder made for a turn that is gone by then is dropped like any other.
                    |started| started.as_ref().ok().map(|(_, decoder)| *decoder),
                )
                .await;
            match started {
                Err(Failure::AlreadyBroken) if !retried => retried = true,
                Err(failure) => return Err(failure.into_call_error(id)),
                Ok(started) => break (shared, started),
            }
        };
        Ok(started.map(|(upstream, handle)| {
            let decoder = Decoder {
                instance: shared,
                handle,
            };
            (upstream, decoder)
        }))
    }

    async fn decode(
        &self,
        decoder: &Decoder,
        upstream: http_host::WitRequest,
        streaming: bool,
        events: mpsc::Sender<TurnEvent>,
        seen: &UpstreamSeen,
    ) -> Result<Result<TurnOutcome, PluginError>, Failure> {
        let (mut response, status) = match self.open(decoder, upstream, seen).await? {
            Ok(opened) => opened,
            Err(e) => return Ok(Err(e)),
        };
        self.feed(decoder, &mut response, status, streaming, events)
            .await
    }

    /// Sends the turn's request and hands the answer's head to the decoder.
    async fn open(
        &self,
        decoder: &Decoder,
        upstream: http_host::WitRequest,
        seen: &UpstreamSeen,
    ) -> Result<Result<(egress::Incoming, u16), PluginError>, Failure> {
        let caps = &self.context.caps;
        // Sending is over in a moment: boxed, its state is not part of the turn's future (and
        // so of the memory of every live stream) while the turn waits for the next chunk.
        // Matched in place, not bound first: a moved-from binding keeps its room in the future.
        seen.sending();
        let response = match Box::pin(egress::send(
            &caps.clients,
            &caps.http,
            http_host::outgoing(upstream),
        ))
        .await
        {
            Ok(response) => response,
            Err(refusal) => return Ok(Err(transport_error(refusal))),
        };
        seen.head(
            response.status,
            response
                .headers
                .iter()
                .map(|(n, v)| (n.as_str(), v.as_str())),
        );
        let headers: Vec<_> = response
            .headers
            .iter()
            .map(|(name, value)| http_host::WitHeader {
                name: name.clone(),
                value: value.clone(),
            })
            .collect();
        let (status, handle) = (response.status, decoder.handle);
        decoder
            .instance
            .call(
                &self.context,
                move |store, codec| {
                    Box::pin(async move {
                        codec
                            .chatd_plugin_turn_codec()
                            .turn_decoder()
                            .call_head(store, handle, status, &headers)
                            .await
                    })
                },
                |_| None,
            )
            .await?;
        Ok(Ok((response, status)))
    }

    /// Feeds the answer's body to the decoder, chunk by chunk (or whole, for a non-streaming
    /// turn), and its events to the run, until the turn ends.
    async fn feed(
        &self,
        decoder: &Decoder,
        response: &mut egress::Incoming,
        status: u16,
        streaming: bool,
        events: mpsc::Sender<TurnEvent>,
    ) -> Result<Result<TurnOutcome, PluginError>, Failure> {
        let handle = decoder.handle;
        // A whole answer is gathered here and decoded in one call (see the module's docs).
        let mut whole = (!streaming).then(Vec::new);
        loop {
            let (step, refused) = match next_step(response.next_chunk().await, &mut whole, status) {
                Ok(Some(step)) => step,
                Ok(None) => continue,
                Err(e) => return Ok(Err(e)),
            };
            let ends = !matches!(step, Step::Feed(_));
            let decoded = decoder
                .instance
                .call(
                    &self.context,
                    move |store, codec| Box::pin(step.run(store, codec, handle)),
                    |_| None,
                )
                .await?;
            if let Some(refusal) = refused {
                return Ok(match decoded.end {
                    Some(Err(upstream @ PluginError::Upstream(_))) => Err(upstream),
                    _ => Err(transport_error(refusal)),
                });
            }
            for event in decoded.events {
                if events.send(event).await.is_err() {
                    // The run stopped listening: stop reading the upstream.
                    return Ok(Ok(cancelled()));
                }
            }
            match decoded.end {
                Some(end) => return Ok(end),
                // The protocol says the end of the body ends the turn; a decoder that does not
                // would have the host wait on a body that has nothing more to give.
                None if ends => {
                    return Err(Failure::Failed(CallError::Trap {
                        id: self.context.manifest.id.clone(),
                        reason: "its decoder did not end the turn at the end of the body".into(),
                    }));
                }
                None => {}
            }
        }
    }
}

/// What the body's next piece (or its end, or its failure) makes the decoder do: `None` while a
/// whole answer is being gathered (`whole`), else the step and, when the body failed, why. An
/// error status's body cut short still names the upstream's error, which says more than the
/// cut; any other body cut short ends the turn with the cut.
fn next_step(
    chunk: Result<Option<Vec<u8>>, Refusal>,
    whole: &mut Option<Vec<u8>>,
    status: u16,
) -> Result<Option<(Step, Option<Refusal>)>, PluginError> {
    Ok(Some(match chunk {
        Ok(Some(chunk)) => match whole {
            Some(body) if body.len() + chunk.len() > MAX_WHOLE_BODY => {
                return Err(PluginError::Transport(format!(
                    "the answer is larger than the {MAX_WHOLE_BODY}-byte cap of a non-streaming \
                     turn"
                )));
            }
            Some(body) => {
                body.extend_from_slice(&chunk);
                return Ok(None);
            }
            None => (Step::Feed(chunk), None),
        },
        Ok(None) => match whole.take() {
            Some(body) => (Step::FeedAndFinish(body), None),
            None => (Step::Finish, None),
        },
        Err(refusal) if status < 400 || matches!(refusal, Refusal::TooLarge(_)) => {
            return Err(transport_error(refusal));
        }
        Err(refusal) => match whole.take() {
            Some(mut body) => {
                body.truncate(MAX_ERROR_BODY);
                (Step::FeedAndFinish(body), Some(refusal))
            }
            None => (Step::Finish, Some(refusal)),
        },
    }))
}

/// One decoding call: a piece of the body, its end, or a whole body and its end.
enum Step {
    Feed(Vec<u8>),
    Finish,
    FeedAndFinish(Vec<u8>),
}

impl Step {
    async fn run(
        self,
        store: &mut Store<PluginState>,
        codec: &CodecProvider,
        handle: ResourceAny,
    ) -> wasmtime::Result<Decoded> {
        let decoder = codec.chatd_plugin_turn_codec().turn_decoder();
        match self {
            Step::Feed(chunk) => decoder.call_feed(&mut *store, handle, &chunk).await,
            Step::Finish => decoder.call_finish(&mut *store, handle).await,
            Step::FeedAndFinish(body) => {
                let fed = decoder.call_feed(&mut *store, handle, &body).await?;
                if fed.end.is_some() {
                    return Ok(fed);
                }
                let mut ended = decoder.call_finish(&mut *store, handle).await?;
                let mut events = fed.events;
                events.append(&mut ended.events);
                ended.events = events;
                Ok(ended)
            }
        }
    }
}

/// What a turn the run stopped listening to returns; nobody reads it.
fn cancelled() -> TurnOutcome {
    TurnOutcome {
        finish: FinishReason::Other,
        raw_json: None,
    }
}

/// What a request past its deadline fails with.
const TIMED_OUT: &str = "the request timed out";

/// A refused or failed upstream request as the plugin's error, in the words the SDK's
/// `transport_error` gives a plugin that sends it itself.
fn transport_error(refusal: Refusal) -> PluginError {
    match refusal {
        Refusal::Denied(why) => PluginError::Denied(why),
        Refusal::Invalid(why) => PluginError::InvalidInput(why),
        Refusal::Timeout => PluginError::Transport(TIMED_OUT.into()),
        Refusal::Connection(why) => PluginError::Transport(why),
        Refusal::TooLarge(cap) => PluginError::Transport(format!(
            "the response is larger than the host's {cap}-byte cap"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The step a piece makes, in words (the WIT error has no equality, its debug form does).
    fn step(
        chunk: Result<Option<Vec<u8>>, Refusal>,
        whole: &mut Option<Vec<u8>>,
        status: u16,
    ) -> String {
        let made = next_step(chunk, whole, status).map(|step| {
            step.map(|(step, refusal)| match step {
                Step::Feed(body) => ("feed", body.len(), refusal),
                Step::Finish => ("finish", 0, refusal),
                Step::FeedAndFinish(body) => ("feed and finish", body.len(), refusal),
            })
        });
        format!("{made:?}")
    }

    #[test]
    fn a_streaming_body_is_fed_piece_by_piece_then_finished() {
        let mut streaming = None;
        assert_eq!(
            step(Ok(Some(b"data: x".to_vec())), &mut streaming, 200),
            r#"Ok(Some(("feed", 7, None)))"#
        );
        assert_eq!(
            step(Ok(None), &mut streaming, 200),
            r#"Ok(Some(("finish", 0, None)))"#
        );
    }

    #[test]
    fn a_whole_body_is_gathered_then_fed_once_within_its_cap() {
        let mut whole = Some(Vec::new());
        assert_eq!(step(Ok(Some(vec![1; 10])), &mut whole, 200), "Ok(None)");
        assert_eq!(step(Ok(Some(vec![2; 5])), &mut whole, 200), "Ok(None)");
        assert_eq!(
            step(Ok(None), &mut whole, 200),
            r#"Ok(Some(("feed and finish", 15, None)))"#
        );
        let mut too_big = Some(vec![0; MAX_WHOLE_BODY]);
        let refused = step(Ok(Some(vec![0])), &mut too_big, 200);
        assert!(
            refused.starts_with("Err(PluginError::Transport(")
                && refused.contains("cap of a non-streaming"),
            "{refused}"
        );
    }

    #[test]
    fn a_cut_body_ends_the_turn_unless_an_error_status_names_the_upstreams_error() {
        let cut = || Err(Refusal::Connection("reset".into()));
        // A success cut short: the cut is the error.
        assert_eq!(
            step(cut(), &mut None, 200),
            r#"Err(PluginError::Transport("reset"))"#
        );
        // An error status's body cut short: what arrived of it goes to the decoder, at most
        // 64 KiB, with the cut beside it.
        let mut error_body = Some(vec![b'{'; MAX_ERROR_BODY + 10]);
        assert_eq!(
            step(cut(), &mut error_body, 500),
            format!(
                r#"Ok(Some(("feed and finish", {MAX_ERROR_BODY}, Some(Connection("reset")))))"#
            )
        );
        // Too large is the host's cap, whatever the status.
        assert!(step(Err(Refusal::TooLarge(9)), &mut None, 500).starts_with("Err("));
    }

    #[test]
    fn refusals_read_as_a_plugin_sending_itself_would_read_them() {
        let shown = |refusal| format!("{:?}", transport_error(refusal));
        assert_eq!(
            shown(Refusal::Denied("no".into())),
            r#"PluginError::Denied("no")"#
        );
        assert_eq!(
            shown(Refusal::Timeout),
            format!("PluginError::Transport({TIMED_OUT:?})")
        );
        assert_eq!(
            shown(Refusal::TooLarge(3)),
            r#"PluginError::Transport("the response is larger than the host's 3-byte cap")"#
        );
    }
}
