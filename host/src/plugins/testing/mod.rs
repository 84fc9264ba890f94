//! Running a plugin in the real host against a scripted HTTP upstream, from a test. Compiled
//! only with the `testing` feature (`chatd = { …, features = ["testing"] }` as a
//! dev-dependency), so none of it is in the release binary.
//!
//! This is how chatd tests its bundled plugins, and how a plugin author tests theirs: build the
//! component, start a [`ScriptedUpstream`] that answers as the real API would (recorded bodies,
//! errors, slow or cut streams), point the matching setting at it, and call the plugin through
//! [`TestHost`]. Everything between is production code: the manifest, the grants, the sandbox,
//! the HTTP capability with its checks and credential injection.
//!
//! ```ignore
//! use chatd::plugins::testing::{Reply, ScriptedUpstream, TestHost};
//!
//! #[tokio::test]
//! async fn searches() {
//!     let upstream = ScriptedUpstream::start([
//!         ("POST /search", Reply::json(200, serde_json::json!({"results": []}))),
//!     ])
//!     .await;
//!     let host = TestHost::new(&["--engine-a-base-url", &upstream.url(), "--engine-a-api-key", "k"]);
//!     let plugin = host
//!         .load(&std::fs::read("target/wasm32-wasip2/release/my_search.wasm").unwrap(),
//!               include_str!("../manifest.json"))
//!         .await
//!         .unwrap();
//!     let out = plugin.as_tool().unwrap().invoke("web_search", r#"{"query":"x"}"#).await;
//!     assert_eq!(upstream.requests()[0].header("x-api-key"), Some("k"));
//! }
//! ```

use std::path::PathBuf;
use std::sync::OnceLock;

use crate::config::Config;
use crate::plugins::LoadError;
use crate::plugins::capabilities::operator::OperatorSettings;
use crate::plugins::loading::load::{Loader, Plugin};
use crate::plugins::package::{Package, Source};
use crate::plugins::runtime::cache::CompileCache;

mod upstream;

pub use upstream::{Gate, Recorded, Reply, ScriptedUpstream};

/// The real plugin host, configured with chatd's own command-line flags, for loading a plugin
/// in a test.
pub struct TestHost {
    loader: Loader,
}

impl TestHost {
    /// `args` are chatd's flags (`--engine-a-base-url`, `--chatd-allow-private-networks`, …).
    /// Panics on an invalid flag: this is for tests.
    pub fn new(args: &[&str]) -> Self {
        let config = Config::from_args(std::iter::once("chatd").chain(args.iter().copied()))
            .unwrap_or_else(|e| panic!("invalid test configuration: {e}"));
        Self {
            loader: Loader::new(
                shared_engine(),
                OperatorSettings::from_config(&config),
                None,
            ),
        }
    }

    /// Keeps compiled code in `dir` (compiling is slow in debug builds; the cache makes the
    /// second test that loads a component fast).
    pub fn with_cache(mut self, dir: impl Into<PathBuf>) -> Self {
        self.loader.cache = Some(CompileCache::new(dir));
        self
    }

    /// Loads a component with its manifest, exactly as the server loads one from PLUGINS_DIR.
    pub async fn load(&self, wasm: &[u8], manifest_json: &str) -> Result<Plugin, LoadError> {
        self.loader
            .load(Package {
                manifest_json: manifest_json.to_string(),
                wasm: wasm.into(),
                source: Source::File("plugin-under-test.wasm".into()),
                manifest_beside: true,
                sha256: None,
            })
            .await
    }

    /// Bytes its freed plugin instances keep resident (`runtime::engine::kept_bytes`).
    pub fn kept_memory_bytes(&self) -> usize {
        crate::plugins::runtime::engine::kept_bytes(&self.loader.engine)
    }

    /// Loads one of chatd's bundled plugins by id.
    pub async fn load_bundled(&self, id: &str) -> Result<Plugin, LoadError> {
        let package = crate::plugins::loading::embedded::packages()
            .into_iter()
            .find(|p| {
                crate::plugins::manifest::Manifest::parse(&p.manifest_json)
                    .is_ok_and(|m| m.id == id)
            })
            .unwrap_or_else(|| panic!("no bundled plugin {id}"));
        self.loader.load(package).await
    }
}

/// One engine (and epoch ticker thread) for every test host of the process.
fn shared_engine() -> wasmtime::Engine {
    static ENGINE: OnceLock<wasmtime::Engine> = OnceLock::new();
    ENGINE
        .get_or_init(|| {
            crate::plugins::runtime::engine::new_engine().expect("the plugin engine starts")
        })
        .clone()
}
