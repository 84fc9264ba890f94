//! WIT versions stay loadable: `chatd:plugin@0.1.0` to `@0.1.3` are frozen in `wit/v0.1.0/`
//! to `wit/v0.1.3/` as released, and a
//! component built against it (`tests/plugins/since-v0.1.0`, on wit-bindgen directly, not on the
//! SDK, which follows the newest WIT) loads into today's host, whose WIT is newer, and every
//! import it uses answers.

use std::path::PathBuf;

use chatd::plugins::testing::{Reply, ScriptedUpstream};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::support::{Options, TestServer, test_component, until};

/// SHA-256 of each released version's `wit/vX.Y.Z/{host,types,worlds}.wit` as released. A
/// released version never changes: what it lacks goes into the next one
/// (`wit/PENDING_CHANGES.md`).
const RELEASED: [(&str, &str); 4] = [
    (
        "v0.1.0",
        "3ae6f1531fc829516eb086ecebf0d62a06cba0cc8d2199399ae66467fd81745f",
    ),
    (
        "v0.1.1",
        "dfe90e23eab327ccead784472634279b43882ad028c7f2039bc5de6272b40f9c",
    ),
    (
        "v0.1.2",
        "7439fe3e7ed2e2f39b8d77044b878c127db734a79d1a444e3adb72dc6a133c6e",
    ),
    (
        "v0.1.3",
        "5c2cb41ba2594ac5514731909ebbc971e14918e8504ef1da4af2bd58595a5fb7",
    ),
];

#[test]
fn the_released_wits_are_frozen() {
    for (version, hash) in RELEASED {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../wit")
            .join(version);
        let mut digest = Sha256::new();
        for name in ["host.wit", "types.wit", "worlds.wit"] {
            digest.update(std::fs::read(dir.join(name)).unwrap());
        }
        let found: String = digest
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            found, hash,
            "wit/{version} changed; it is released and frozen"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_component_built_against_0_1_0_loads_and_its_imports_answer() {
    let upstream =
        ScriptedUpstream::start([("GET /page", Reply::text(200, "text/plain", "hello"))]).await;
    let plugins = tempfile::tempdir().unwrap();
    std::fs::write(
        plugins.path().join("since_v0_1_0.wasm"),
        test_component("test-plugin-since-v0-1-0"),
    )
    .unwrap();
    // Its manifest says 0.1.0, and grants the upstream's origin.
    std::fs::write(
        plugins.path().join("since_v0_1_0.json"),
        json!({"id": "since_v0_1_0", "kind": "tool", "wit": "chatd:plugin@0.1.0",
               "grants": {"http": [upstream.url()], "config": ["title_model"]}})
        .to_string(),
    )
    .unwrap();
    let server = TestServer::start_with(Options {
        plugins_dir: Some(plugins.path().to_path_buf()),
        allow_private_networks: true,
        args: vec!["--title-model".into(), "tiny-1".into()],
        ..Options::default()
    })
    .await;
    let host = server.state.plugins.clone();
    until(&host, "since_v0_1_0 loads", |p| {
        p.snapshot().plugin("since_v0_1_0").is_some()
    })
    .await;
    assert!(host.refused().is_empty(), "{:?}", host.refused());
    let (_, tools) = server.get("/v1/chat-tools").await;
    assert!(crate::hot_reload::tool_names(&tools).contains(&"get_text".to_string()));

    let plugin = host.snapshot().plugin("since_v0_1_0").unwrap().clone();
    let url = format!("{}/page", upstream.url());
    let args = json!({ "url": url }).to_string();
    let out = plugin.as_tool().unwrap().invoke("get_text", &args).await;
    let out = out.unwrap().unwrap();
    assert_eq!(out.content, "hello");
    assert_eq!(
        out.summary.as_deref(),
        Some("status 200; title model \"tiny-1\"")
    );
    assert_eq!(upstream.requests().len(), 1);
    server.stop().await;
}
