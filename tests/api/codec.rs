//! The host's driver of `codec-provider` turns (`chatd::plugins::worlds::provider::codec`) against a real
//! component, `tests/plugins/hostile-provider`: many turns decoding at once in shared instances,
//! what a decoder that panics, spins, or is abandoned does to the turns beside it, and an
//! instance retired when its stderr or its memory fills.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use chatd::egress::{HttpGrant, Origin};
use chatd::plugins::capabilities::Capabilities;
use chatd::plugins::manifest::Manifest;
use chatd::plugins::runtime::CallError;
use chatd::plugins::runtime::cache::compile;
use chatd::plugins::runtime::engine;
use chatd::plugins::testing::{Gate, Reply, ScriptedUpstream};
use chatd::plugins::worlds::provider::codec::Instances;
use chatd::plugins::worlds::provider::{
    FinishReason, Message, PluginError, ProviderPlugin, Role, TurnEvent, TurnOutcome, TurnRequest,
};
use tokio::sync::mpsc;

use crate::support::test_component;

fn engine() -> &'static wasmtime::Engine {
    static ENGINE: OnceLock<wasmtime::Engine> = OnceLock::new();
    ENGINE.get_or_init(|| engine::new_engine().unwrap())
}

/// The hostile provider, granted `upstream`, with a time limit of `timeout_ms`; its turns decode
/// in shared instances (as chatd's own providers do) unless `sharing` says otherwise.
fn provider_with(
    upstream: &ScriptedUpstream,
    timeout_ms: u64,
    sharing: Instances,
) -> Arc<ProviderPlugin> {
    static COMPILED: OnceLock<wasmtime::component::Component> = OnceLock::new();
    let compiled = COMPILED.get_or_init(|| {
        let wasm = test_component("test-plugin-hostile-provider");
        compile(engine(), "hostile_provider", &wasm).unwrap()
    });
    let manifest = Manifest::parse(&format!(
        r#"{{"id":"hostile_provider","kind":"provider","wit":"chatd:plugin@0.1.0",
            "limits":{{"memoryMib":64,"timeoutMs":{timeout_ms}}}}}"#
    ))
    .unwrap();
    let grant = HttpGrant {
        trusted: vec![Origin::parse(&upstream.url()).unwrap()],
        origins: Vec::new(),
        public_web: false,
        allow_private: false,
        local_network: false,
        credentials: Vec::new(),
        scrubbed: Arc::new([]),
        max_body_bytes: 16 * 1024 * 1024,
        max_timeout: Duration::from_secs(30),
    };
    let caps = Capabilities {
        config: Arc::new(BTreeMap::from([("base_url".to_string(), upstream.url())])),
        http: Arc::new(grant),
        ..Capabilities::none()
    };
    let plugin = ProviderPlugin::new(engine(), manifest, compiled, caps, sharing).unwrap();
    assert!(
        plugin.host_driven(),
        "a codec provider's turns are host-driven"
    );
    Arc::new(plugin)
}

fn provider(upstream: &ScriptedUpstream, timeout_ms: u64) -> Arc<ProviderPlugin> {
    provider_with(upstream, timeout_ms, Instances::Shared)
}

fn request(mode: &str) -> TurnRequest {
    TurnRequest {
        model: mode.into(),
        messages: vec![Message {
            role: Role::User,
            content: Vec::new(),
            tool_calls: Vec::new(),
            tool_result: None,
        }],
        tools: Vec::new(),
        temperature: None,
        max_tokens: None,
        streaming: true,
        may_continue: false,
        continuation: None,
    }
}

type Outcome = Result<Result<TurnOutcome, PluginError>, CallError>;

/// Runs a turn in a task of its own; its text and outcome come back when it ends.
fn spawn_turn(
    plugin: &Arc<ProviderPlugin>,
    mode: &str,
) -> tokio::task::JoinHandle<(String, Outcome)> {
    let (plugin, request) = (plugin.clone(), request(mode));
    tokio::spawn(async move {
        let (tx, mut rx) = mpsc::channel(4);
        let call = plugin.turn(request, None, tx);
        tokio::pin!(call);
        let mut text = String::new();
        let outcome = loop {
            tokio::select! {
                Some(TurnEvent::TextDelta(delta)) = rx.recv() => text.push_str(&delta),
                outcome = &mut call => break outcome,
            }
        };
        while let Ok(TurnEvent::TextDelta(delta)) = rx.try_recv() {
            text.push_str(&delta);
        }
        (text, outcome)
    })
}

const ECHO: &str = "data: hello\n\nevent: end\ndata: world\n\n";

fn assert_echoed((text, outcome): &(String, Outcome)) {
    match outcome {
        Ok(Ok(outcome)) => assert_eq!(outcome.finish, FinishReason::Stop),
        other => panic!("the turn failed: {other:?} (its text: {text:?})"),
    }
    assert_eq!(text, "helloworld");
}

#[tokio::test]
async fn many_turns_decode_at_once_in_shared_instances_each_with_its_own_state() {
    // Every stream split mid-line and mid-field, paced so the turns' chunks interleave in the
    // few shared instances: a decoder that saw another turn's bytes would garble its text.
    let pieces = [
        "da",
        "ta: hel",
        "lo\n",
        "\nevent: e",
        "nd\ndata: wor",
        "ld\n\n",
    ];
    let reply = Reply::sse("").paced(
        pieces.iter().map(|p| p.as_bytes().to_vec()).collect(),
        Duration::from_millis(5),
    );
    let upstream = ScriptedUpstream::start([("POST /turn", reply)]).await;
    let plugin = provider(&upstream, 30_000);
    let turns: Vec<_> = (0..40).map(|_| spawn_turn(&plugin, "echo")).collect();
    for turn in turns {
        assert_echoed(&turn.await.unwrap());
    }
    assert_eq!(upstream.requests().len(), 40);
    assert!(upstream.requests().iter().all(|r| r.body == b"echo"));
}

/// An upstream whose first eight answers wait for `gate`, the ninth panics the `panic` decoder,
/// and the rest echo.
async fn gated_then_boom(gate: &Gate) -> ScriptedUpstream {
    let mut routes: Vec<(&str, Reply)> = (0..8)
        .map(|_| ("POST /turn", Reply::sse(ECHO).after(gate)))
        .collect();
    routes.push(("POST /turn", Reply::sse("data: boom\n\n")));
    routes.push(("POST /turn", Reply::sse(ECHO)));
    ScriptedUpstream::start(routes).await
}

/// Eight echo turns started one after another, each waiting for its answer (its decoder made).
async fn eight_waiting(
    plugin: &Arc<ProviderPlugin>,
    upstream: &ScriptedUpstream,
) -> Vec<tokio::task::JoinHandle<(String, Outcome)>> {
    let mut waiting = Vec::new();
    for n in 1..=8 {
        waiting.push(spawn_turn(plugin, "echo"));
        upstream.received(n).await;
    }
    waiting
}

#[tokio::test]
async fn a_panicking_decoder_fails_the_turns_of_its_instance_and_no_others() {
    // Eight turns wait for their answers with decoders in every shared instance; then a turn
    // whose decoder panics breaks its instance.
    let gate = Gate::new();
    let upstream = gated_then_boom(&gate).await;
    let plugin = provider(&upstream, 30_000);
    let waiting = eight_waiting(&plugin, &upstream).await;

    let (_, panicked) = spawn_turn(&plugin, "panic").await.unwrap();
    match panicked {
        Err(CallError::Trap { reason, .. }) => {
            assert!(reason.contains("deliberate panic in a decoder"), "{reason}")
        }
        other => panic!("expected a trap: {other:?}"),
    }

    gate.open();
    let (mut broke, mut echoed) = (0, 0);
    for turn in waiting {
        match turn.await.unwrap() {
            (_, Err(CallError::Trap { reason, .. })) => {
                assert!(reason.contains("broke in another turn's call"), "{reason}");
                broke += 1;
            }
            done => {
                assert_echoed(&done);
                echoed += 1;
            }
        }
    }
    // The instance that broke had at least one of them; the others had the rest.
    assert!(
        broke >= 1,
        "the panicking turn shared its instance with a waiting one"
    );
    assert!(
        echoed >= 4,
        "only the broken instance's turns fail: {echoed} of 8 echoed"
    );

    // New turns get fresh instances.
    for _ in 0..8 {
        assert_echoed(&spawn_turn(&plugin, "echo").await.unwrap());
    }
}

#[tokio::test]
async fn a_provider_from_plugins_dir_decodes_each_turn_in_an_instance_of_its_own() {
    let gate = Gate::new();
    let upstream = gated_then_boom(&gate).await;
    let plugin = provider_with(&upstream, 30_000, Instances::PerTurn);
    let waiting = eight_waiting(&plugin, &upstream).await;
    let (_, panicked) = spawn_turn(&plugin, "panic").await.unwrap();
    assert!(
        matches!(panicked, Err(CallError::Trap { .. })),
        "{panicked:?}"
    );
    gate.open();
    for turn in waiting {
        assert_echoed(&turn.await.unwrap());
    }
}

#[tokio::test]
async fn a_provider_from_plugins_dir_keeps_no_state_from_one_turn_to_the_next() {
    let upstream =
        ScriptedUpstream::start([("POST /turn", Reply::sse("event: end\ndata: x\n\n"))]).await;
    let plugin = provider_with(&upstream, 30_000, Instances::PerTurn);
    for _ in 0..3 {
        // Each turn's instance has started that one turn only.
        assert_eq!(spawn_turn(&plugin, "count").await.unwrap().0, "1:x");
    }
}

#[tokio::test]
async fn a_spinning_decoder_is_stopped_at_its_time_limit() {
    let upstream = ScriptedUpstream::start([
        ("POST /turn", Reply::sse("data: spin\n\n")),
        ("POST /turn", Reply::sse(ECHO)),
    ])
    .await;
    // A turn may take 2 s, one decoder call a quarter of that.
    let plugin = provider(&upstream, 2_000);
    let clock = Instant::now();
    let (_, spun) = spawn_turn(&plugin, "spin").await.unwrap();
    match spun {
        Err(CallError::Timeout { after, .. }) => assert_eq!(after, Duration::from_millis(500)),
        other => panic!("expected the call's time limit: {other:?}"),
    }
    assert!(
        clock.elapsed() < Duration::from_millis(1_500),
        "{:?}",
        clock.elapsed()
    );
    for _ in 0..8 {
        assert_echoed(&spawn_turn(&plugin, "echo").await.unwrap());
    }
}

// Two workers: the spinning call is always ready to run again (it yields at every epoch tick),
// and on one thread the other turns' network events would be checked only every few dozen of
// its slices, too seldom to round the instances within its 2 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_whose_instance_breaks_while_it_waits_to_start_starts_in_another() {
    // The first instance is held by a spinning decoder call, which breaks it at its time limit,
    // when a turn picks it: that turn's `start` waits, finds the instance broken, and starts
    // again in the next one. In `count` mode its deltas say how many turns that instance has
    // started: 2 in the next instance (a filler turn ran there), where a turn that picked the
    // first instance after it broke would get a fresh one and say 1.
    let n = chatd::plugins::worlds::provider::codec::shared_instances();
    let upstream = ScriptedUpstream::start([
        ("POST /turn", Reply::sse("data: spin\n\n")),
        ("POST /turn", Reply::sse(ECHO)),
    ])
    .await;
    // One decoder call may take 2 s (a quarter of the turn's limit): the time the rest of the
    // test has to pick the spinning instance again.
    let plugin = provider(&upstream, 8_000);
    let spinning = spawn_turn(&plugin, "spin");
    // Its request, then its decoder's word that it spins (an unscripted route, answered 404).
    upstream.received(2).await;
    assert_eq!(upstream.requests()[1].path, "/spinning");
    // Round the other instances, back to the first.
    for _ in 1..n {
        assert_echoed(&spawn_turn(&plugin, "echo").await.unwrap());
    }
    assert!(
        !spinning.is_finished(),
        "the spinning call ended before the turns came round to its instance"
    );
    let (text, outcome) = spawn_turn(&plugin, "count").await.unwrap();
    assert!(matches!(outcome, Ok(Ok(_))), "{outcome:?}");
    assert_eq!(text, "2:hello2:world");
    match spinning.await.unwrap().1 {
        Err(CallError::Timeout { after, .. }) => assert_eq!(after, Duration::from_secs(2)),
        other => panic!("expected the call's time limit: {other:?}"),
    }
}

#[tokio::test]
async fn a_panic_in_start_is_a_trap_and_the_provider_keeps_working() {
    let upstream = ScriptedUpstream::start([("POST /turn", Reply::sse(ECHO))]).await;
    let plugin = provider(&upstream, 30_000);
    let (_, started) = spawn_turn(&plugin, "panic-at-start").await.unwrap();
    match started {
        Err(CallError::Trap { reason, .. }) => {
            assert!(reason.contains("deliberate panic at start"), "{reason}")
        }
        other => panic!("expected a trap: {other:?}"),
    }
    assert!(upstream.requests().is_empty(), "nothing was sent");
    for _ in 0..8 {
        assert_echoed(&spawn_turn(&plugin, "echo").await.unwrap());
    }
}

#[tokio::test]
async fn a_decoder_that_does_not_end_the_turn_at_the_bodys_end_is_a_trap() {
    let upstream = ScriptedUpstream::start([
        ("POST /turn", Reply::sse(ECHO)),
        ("POST /turn", Reply::sse(ECHO)),
    ])
    .await;
    let plugin = provider(&upstream, 30_000);
    // Not waited on for ever: the body has ended, and nothing more will come to decode.
    let (text, outcome) = spawn_turn(&plugin, "endless").await.unwrap();
    match outcome {
        Err(CallError::Trap { reason, .. }) => assert!(
            reason.contains("did not end the turn at the end of the body"),
            "{reason}"
        ),
        other => panic!("expected a trap: {other:?}"),
    }
    assert_eq!(text, "helloworld", "what it decoded still went out");
    assert_echoed(&spawn_turn(&plugin, "echo").await.unwrap());
}

#[tokio::test]
async fn an_abandoned_turn_leaves_its_instance_usable() {
    // Turns abandoned while they wait for their body (a run dropped mid-stream) leave decoders
    // behind, which the instance drops at its next call.
    let gate = Gate::new();
    let mut routes: Vec<(&str, Reply)> = (0..8)
        .map(|_| {
            let held = Reply::sse("")
                .paced(
                    vec![b"data: first\n\n".to_vec(), b"data: never\n\n".to_vec()],
                    Duration::from_secs(60),
                )
                .after(&gate);
            ("POST /turn", held)
        })
        .collect();
    routes.push(("POST /turn", Reply::sse(ECHO)));
    let upstream = ScriptedUpstream::start(routes).await;
    let plugin = provider(&upstream, 30_000);
    let (mut abandoned, mut firsts) = (Vec::new(), Vec::new());
    for n in 1..=8 {
        let (first, got_first) = tokio::sync::oneshot::channel();
        let (plugin, request) = (plugin.clone(), request("echo"));
        abandoned.push(tokio::spawn(async move {
            let (tx, mut rx) = mpsc::channel(4);
            let call = plugin.turn(request, None, tx);
            tokio::pin!(call);
            let mut first = Some(first);
            loop {
                tokio::select! {
                    Some(_) = rx.recv() => {
                        if let Some(first) = first.take() {
                            let _ = first.send(());
                        }
                    }
                    _ = &mut call => break,
                }
            }
        }));
        firsts.push(got_first);
        upstream.received(n).await;
    }
    gate.open();
    // Each turn has decoded its first piece and waits for the next: drop them there.
    for first in firsts {
        first.await.unwrap();
    }
    for turn in &abandoned {
        turn.abort();
    }
    for turn in abandoned {
        assert!(turn.await.unwrap_err().is_cancelled());
    }
    for _ in 0..16 {
        assert_echoed(&spawn_turn(&plugin, "echo").await.unwrap());
    }
}

#[tokio::test]
async fn only_chatds_own_providers_share_instances() {
    use chatd::plugins::testing::TestHost;
    let host = TestHost::new(&[]).with_cache(crate::support::plugin_cache_dir());
    let bundled = host.load_bundled("provider_c").await.unwrap();
    let bundled = bundled.as_provider().unwrap();
    assert_eq!(bundled.sharing(), Some(Instances::Shared));

    // The same component dropped into PLUGINS_DIR.
    let package = chatd::plugins::loading::embedded::packages()
        .into_iter()
        .find(|p| p.manifest_json.contains(r#""provider_c""#))
        .unwrap();
    let folder = host
        .load(&package.wasm, &package.manifest_json)
        .await
        .unwrap();
    assert_eq!(
        folder.as_provider().unwrap().sharing(),
        Some(Instances::PerTurn)
    );
}

#[tokio::test]
async fn an_error_status_whose_body_is_cut_still_names_the_upstreams_error() {
    // Paced, so hyper writes the head and the first piece before the cut (see the provider
    // suite's `connection_cut`).
    let pieces = vec![
        br#"{"error":{"message":"#.to_vec(),
        br#""slow down"}}"#.to_vec(),
    ];
    let reply = Reply::bytes(429, "application/json", Vec::new())
        .paced(pieces, Duration::from_millis(5))
        .cut();
    let upstream = ScriptedUpstream::start([("POST /turn", reply)]).await;
    let plugin = provider(&upstream, 30_000);
    match spawn_turn(&plugin, "echo").await.unwrap().1 {
        Ok(Err(PluginError::Upstream(e))) => {
            assert_eq!((e.status, e.message.as_str()), (429, "slow down"))
        }
        other => panic!("expected the upstream's error: {other:?}"),
    }
}

/// Waits (up to 10 s) until `n` calls of `plugin`'s turns wait for a shared instance. Nothing
/// announces that moment, so the count is looked at every millisecond.
async fn until_waiting(plugin: &ProviderPlugin, n: usize) {
    let waited = tokio::time::timeout(Duration::from_secs(10), async {
        while plugin.calls_waiting() != n {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "{n} calls never waited for an instance");
}

// Two workers: B's answer must arrive, and B reach the instance, while A's call runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_dropped_while_waiting_for_its_instance_leaves_it_sound() {
    // Turn B starts first (the first shared instance), then enough turns to come round to that
    // instance again with turn A, whose decoder takes 600 ms over its first event. B's answer
    // arrives during that call, so B waits for the instance, and is dropped there. A's second
    // piece comes later: it needs the instance again after B is gone.
    let n = chatd::plugins::worlds::provider::codec::shared_instances();
    let gate = Gate::new();
    let mut routes = vec![("POST /turn", Reply::sse(ECHO).after(&gate))];
    routes.extend((1..n).map(|_| ("POST /turn", Reply::sse(ECHO))));
    let slow = vec![
        b"data: slow\n\n".to_vec(),
        b"event: end\ndata: done\n\n".to_vec(),
    ];
    routes.push((
        "POST /turn",
        Reply::sse("").paced(slow, Duration::from_millis(500)),
    ));
    routes.push(("POST /turn", Reply::sse(ECHO)));
    let upstream = ScriptedUpstream::start(routes).await;
    let plugin = provider(&upstream, 30_000);
    let b = spawn_turn(&plugin, "echo");
    upstream.received(1).await;
    for _ in 1..n {
        assert_echoed(&spawn_turn(&plugin, "echo").await.unwrap());
    }
    let a = spawn_turn(&plugin, "slow");
    // A's request, then its decoder's word that its 600 ms call has begun.
    upstream.received(n + 2).await;
    assert_eq!(upstream.requests()[n + 1].path, "/slowing");
    gate.open();
    // B's answer arrives, and its call waits for the instance A's call holds: B is dropped
    // there.
    until_waiting(&plugin, 1).await;
    b.abort();
    assert!(b.await.unwrap_err().is_cancelled());
    assert_eq!(plugin.calls_waiting(), 0, "B gave up its place");

    let (text, outcome) = a.await.unwrap();
    assert_eq!(text, "slowdone");
    assert!(matches!(outcome, Ok(Ok(_))), "{outcome:?}");
    // Every instance still decodes, the first one included.
    for _ in 0..n {
        assert_echoed(&spawn_turn(&plugin, "echo").await.unwrap());
    }
}

/// One turn in `mode` in the first shared instance, which then must be retired: the turn itself
/// ends well, the other instances go on, and the first one's next turn is in a fresh instance.
/// (In `count` mode each delta says how many turns its instance has started, so a fresh
/// instance shows as a count back at 1.)
async fn assert_retired_after(mode: &str) {
    let n = chatd::plugins::worlds::provider::codec::shared_instances();
    let upstream =
        ScriptedUpstream::start([("POST /turn", Reply::sse("event: end\ndata: x\n\n"))]).await;
    let plugin = provider(&upstream, 30_000);
    let mut counts = Vec::new();
    for _ in 0..n {
        counts.push(spawn_turn(&plugin, "count").await.unwrap().0);
    }
    assert_eq!(counts, vec!["1:x"; n], "one turn in each instance");
    // Round again to the first instance.
    let (text, outcome) = spawn_turn(&plugin, mode).await.unwrap();
    assert!(matches!(outcome, Ok(Ok(_))), "{outcome:?}");
    assert_eq!(text, "x");
    let mut counts = Vec::new();
    for _ in 0..n {
        counts.push(spawn_turn(&plugin, "count").await.unwrap().0);
    }
    let mut expected = vec!["2:x"; n - 1];
    expected.push("1:x");
    assert_eq!(counts, expected);
}

#[tokio::test]
async fn an_instance_past_its_stderr_cap_is_retired_and_its_next_turn_gets_a_fresh_one() {
    // 40 KiB of stderr, past the 32 KiB at which an instance is retired.
    assert_retired_after("noisy").await;
}

#[tokio::test]
async fn an_instance_past_half_its_memory_is_retired_and_its_next_turn_gets_a_fresh_one() {
    // 40 MiB kept, past half of the 64 MiB cap (wasm memory never shrinks).
    assert_retired_after("hog").await;
}

#[tokio::test]
async fn a_whole_answer_past_its_cap_ends_the_turn_before_it_is_decoded() {
    let body = vec![b' '; 9 * 1024 * 1024];
    let reply = Reply::bytes(200, "application/json", body);
    let upstream = ScriptedUpstream::start([("POST /turn", reply)]).await;
    let plugin = provider(&upstream, 30_000);
    let mut whole = request("echo");
    whole.streaming = false;
    let (tx, _rx) = mpsc::channel(4);
    match plugin.turn(whole, None, tx).await {
        Ok(Err(PluginError::Transport(why))) => {
            assert!(why.contains("8388608-byte cap"), "{why}")
        }
        other => panic!("expected the cap: {other:?}"),
    }
}
