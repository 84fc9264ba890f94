//! What every browser test starts besides the real chatd binary (`common/binary.rs`): a
//! headless Chromium driven over WebDriver (Debian's `chromium` and `chromium-driver`; nothing
//! is downloaded).
//!
//! Without the browser the tests skip with a reason, unless `CHATD_REQUIRE_BROWSER` is set (as
//! `.ci/run` does), which turns the skip into a failure. The tests take the browser one at a
//! time: two cores do not run several Chromiums and a server each without timing out.

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::elements::Element;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};
use tokio::sync::{Mutex, MutexGuard};

pub use crate::binary::Chatd;

/// How long a test waits for something the page should show.
const PATIENCE: Duration = Duration::from_secs(20);

fn chromium() -> PathBuf {
    std::env::var_os("CHATD_CHROMIUM").map_or_else(|| "/usr/bin/chromium".into(), PathBuf::from)
}

fn chromedriver() -> PathBuf {
    std::env::var_os("CHATD_CHROMEDRIVER")
        .map_or_else(|| "/usr/bin/chromedriver".into(), PathBuf::from)
}

/// Whether the browser is here; panics when it must be (CHATD_REQUIRE_BROWSER).
fn browser_available() -> bool {
    let missing: Vec<String> = [chromium(), chromedriver()]
        .into_iter()
        .filter(|p| !p.exists())
        .map(|p| p.display().to_string())
        .collect();
    if missing.is_empty() {
        return true;
    }
    let reason = format!(
        "{} not found (Debian packages chromium and chromium-driver)",
        missing.join(" and ")
    );
    assert!(
        std::env::var_os("CHATD_REQUIRE_BROWSER").is_none(),
        "CHATD_REQUIRE_BROWSER is set but {reason}"
    );
    eprintln!("skipped: {reason}");
    false
}

/// One test's browser: a chromedriver and a Chromium session with a profile of its own.
pub struct Browser {
    pub client: Client,
    driver: Child,
    _profile: tempfile::TempDir,
    _turn: MutexGuard<'static, ()>,
}

static TURN: Mutex<()> = Mutex::const_new(());

impl Browser {
    /// A browser window of 1440×900, or None when the browser is missing (the test skips).
    pub async fn start() -> Option<Self> {
        Self::start_with(&[]).await
    }

    /// [`Browser::start`] with more Chromium flags (`--force-dark-mode`: the system's dark
    /// theme).
    pub async fn start_with(flags: &[&str]) -> Option<Self> {
        if !browser_available() {
            return None;
        }
        let turn = TURN.lock().await;
        let profile = tempfile::tempdir().expect("temp dir");
        let port = {
            let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
            listener.local_addr().unwrap().port()
        };
        // A process group of its own, so that dropping the test ends Chromium with its driver.
        let driver = Command::new(chromedriver())
            .arg(format!("--port={port}"))
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn chromedriver");
        let mut args = vec![
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            // This machine's network is closed: no background requests to Google's hosts.
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-quic",
            "--no-first-run",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
            "--window-size=1440,900",
        ];
        let profile_flag = format!("--user-data-dir={}", profile.path().display());
        args.push(&profile_flag);
        args.extend(flags);
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            json!({"binary": chromium(), "args": args}),
        );
        // The console, for the tests that look for CSP and Trusted Types violations there.
        caps.insert("goog:loggingPrefs".into(), json!({"browser": "ALL"}));
        let url = format!("http://127.0.0.1:{port}");
        let started = Instant::now();
        let client = loop {
            let connector = hyper_util::client::legacy::connect::HttpConnector::new();
            match ClientBuilder::new(connector)
                .capabilities(caps.clone())
                .connect(&url)
                .await
            {
                Ok(client) => break client,
                Err(e) if started.elapsed() < Duration::from_secs(30) => {
                    let _ = e;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => panic!("no WebDriver session: {e}"),
            }
        };
        Some(Self {
            client,
            driver,
            _profile: profile,
            _turn: turn,
        })
    }

    /// Navigates to `url` (a test then waits for [`Browser::ready`] or for what it expects).
    pub async fn open(&self, url: &str) {
        self.client.goto(url).await.expect("navigate");
    }

    /// Waits until the page says it is ready (signed in, first view routed, list loaded).
    pub async fn ready(&self) {
        self.until(
            "the page to be ready",
            "return document.body.dataset.ready === 'true'",
        )
        .await;
    }

    /// Runs `script` (a function body) with `args` and returns what it returns.
    pub async fn eval(&self, script: &str, args: Vec<Value>) -> Value {
        self.client
            .execute(script, args)
            .await
            .unwrap_or_else(|e| panic!("script failed: {e}\n{script}"))
    }

    /// Waits until `script` returns true; panics with `what` and the page's state after
    /// [`PATIENCE`].
    pub async fn until(&self, what: &str, script: &str) {
        let started = Instant::now();
        loop {
            if self.eval(script, vec![]).await == Value::Bool(true) {
                return;
            }
            if started.elapsed() > PATIENCE {
                // The page's words, without the options of its pickers.
                let text = self
                    .eval(
                        "const main = document.body.cloneNode(true); \
                         main.querySelectorAll('select').forEach((s) => s.remove()); \
                         const live = document.getElementById('live-run'); \
                         return main.textContent.replace(/\\s+/g, ' ') + (live ? '\\n[live run: ' + JSON.stringify(live.dataset) + ']' : '')",
                        vec![],
                    )
                    .await;
                panic!(
                    "timed out waiting for {what}; the page shows:\n{}",
                    text.as_str().unwrap_or("")
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub async fn find(&self, css: &str) -> Element {
        self.client
            .wait()
            .at_most(PATIENCE)
            .for_element(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no element {css}: {e}"))
    }

    pub async fn text(&self, css: &str) -> String {
        self.find(css).await.text().await.expect("element text")
    }

    pub async fn count(&self, css: &str) -> usize {
        self.client
            .find_all(Locator::Css(css))
            .await
            .expect("find_all")
            .len()
    }

    /// Types into the element and presses Enter.
    pub async fn type_and_enter(&self, css: &str, text: &str) {
        let field = self.find(css).await;
        field.click().await.expect("focus the field");
        field.send_keys(text).await.expect("type");
        field.send_keys("\u{E007}").await.expect("press Enter");
    }

    pub async fn click(&self, css: &str) {
        self.find(css).await.click().await.expect("click");
    }

    /// Scrolls the element to the middle of the window, then clicks it: an element already in
    /// the window is not scrolled by the driver, and may be under the sticky header.
    pub async fn click_centered(&self, css: &str) {
        let element = self.find(css).await;
        self.client
            .execute(
                "arguments[0].scrollIntoView({ block: 'center' })",
                vec![serde_json::to_value(&element).expect("an element reference")],
            )
            .await
            .expect("scroll into view");
        element.click().await.expect("click");
    }

    pub async fn hash(&self) -> String {
        self.eval("return location.hash", vec![])
            .await
            .as_str()
            .unwrap()
            .to_string()
    }

    /// Saves a screenshot of the window at `width`×`height` as `name`.png: into
    /// `target/screenshots`, and into `docs/screenshots` (the README's) when
    /// CHATD_UPDATE_SCREENSHOTS is set.
    pub async fn screenshot(&self, name: &str, width: u32, height: u32) {
        self.client
            .set_window_size(width, height)
            .await
            .expect("resize the window");
        // The layout at the new width, its transitions (the drawer) finished, before the picture.
        self.until(
            "the new width, settled",
            &format!(
                "return window.innerWidth === {width} && \
                 !document.getAnimations().some((a) => a instanceof CSSTransition)"
            ),
        )
        .await;
        let png = self.client.screenshot().await.expect("screenshot");
        assert!(png.starts_with(b"\x89PNG"), "a PNG");
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut folders = vec![root.join("target/screenshots")];
        if std::env::var_os("CHATD_UPDATE_SCREENSHOTS").is_some() {
            folders.push(root.join("docs/screenshots"));
        }
        for folder in folders {
            std::fs::create_dir_all(&folder).unwrap();
            std::fs::write(folder.join(format!("{name}.png")), &png).unwrap();
        }
    }
}

/// A command of chromedriver's that fantoccini has no method for, on the session.
#[derive(Debug)]
struct SessionCommand {
    method: reqwest::Method,
    path: &'static str,
    body: Value,
}

impl fantoccini::wd::WebDriverCompatibleCommand for SessionCommand {
    fn endpoint(
        &self,
        base: &url::Url,
        session: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base.join(&format!(
            "session/{}/{}",
            session.unwrap_or_default(),
            self.path
        ))
    }

    fn method_and_body(&self, _url: &url::Url) -> (reqwest::Method, Option<String>) {
        (self.method.clone(), Some(self.body.to_string()))
    }
}

impl Browser {
    /// The browser console's messages since the last call (chromedriver's log).
    pub async fn console(&self) -> Vec<String> {
        let entries = self
            .client
            .issue_cmd(SessionCommand {
                method: reqwest::Method::POST,
                path: "se/log",
                body: json!({"type": "browser"}),
            })
            .await
            .expect("the browser's log");
        entries
            .as_array()
            .map(|all| {
                all.iter()
                    .map(|e| e["message"].as_str().unwrap_or_default().to_string())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Lets the page read the clipboard (writing needs no permission), as a user allowing it.
    pub async fn allow_clipboard(&self) {
        for name in ["clipboard-read", "clipboard-write"] {
            self.client
                .issue_cmd(SessionCommand {
                    method: reqwest::Method::POST,
                    path: "permissions",
                    body: json!({"descriptor": {"name": name}, "state": "granted"}),
                })
                .await
                .unwrap_or_else(|e| panic!("grant {name}: {e}"));
        }
    }

    /// What the clipboard holds, as text.
    pub async fn clipboard(&self) -> String {
        self.client
            .execute_async(
                "const done = arguments[0]; window.focus();                  navigator.clipboard.readText().then(done, (e) => done('error: ' + e.message));",
                vec![],
            )
            .await
            .expect("read the clipboard")
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// axe-core's violations on the page as it is now (WCAG 2.x A and AA), one line each, or
    /// None when axe-core is not installed (the test skips; CHATD_REQUIRE_BROWSER fails).
    pub async fn axe(&self) -> Option<Vec<String>> {
        let source = axe_source()?;
        self.client
            .execute(
                &format!("{source}\n;return typeof axe === 'object';"),
                vec![],
            )
            .await
            .expect("axe-core loads");
        let found = self
            .client
            .execute_async(
                "const done = arguments[0];                  axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } })                    .then((r) => done(r.violations.map((v) => v.id + ': ' + v.help + ' (' +                       v.nodes.map((n) => n.target.join(' ')).slice(0, 5).join(', ') + ')')),                          (e) => done(['axe failed: ' + e.message]));",
                vec![],
            )
            .await
            .expect("axe-core runs");
        Some(
            found
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap_or_default().to_string())
                .collect(),
        )
    }
}

/// axe-core's script, from CHATD_AXE_CORE or where `.ci/run` installs it.
fn axe_source() -> Option<String> {
    let path = std::env::var_os("CHATD_AXE_CORE").map_or_else(
        || {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../target/web-test-node/node_modules/axe-core/axe.min.js")
        },
        PathBuf::from,
    );
    match std::fs::read_to_string(&path) {
        Ok(source) => Some(source),
        Err(e) => {
            let reason = format!(
                "axe-core not found at {} ({e}); .ci/run installs it",
                path.display()
            );
            assert!(
                std::env::var_os("CHATD_REQUIRE_BROWSER").is_none(),
                "CHATD_REQUIRE_BROWSER is set but {reason}"
            );
            eprintln!("skipped: {reason}");
            None
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // The driver and the Chromium it started, even when the test failed mid-way.
        // SAFETY: kill(2) on the process group this test created; no memory is involved.
        unsafe {
            libc::kill(-(self.driver.id() as i32), libc::SIGKILL);
        }
        let _ = self.driver.wait();
    }
}
