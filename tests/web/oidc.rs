//! Signing in in the browser with a certified OpenID provider (`oidc-provider` from npm, on
//! loopback, its key made at test time: `tests/oidc/provider.mjs`): the prompt offers the
//! provider, the provider's own pages sign the person in, chatd's callback brings the browser
//! back signed in as a person whose role follows the provider's group, and Sign out brings the
//! prompt back (the session's end on the server is `tests/api/sessions.rs`'s).
//! The refusals (a tampered or expired ID token, a wrong nonce, a replayed state, another
//! issuer) are `tests/api/oidc.rs`'s, against a provider that can be made to misbehave.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::harness::{Browser, Chatd};
use crate::upstream::Upstreams;

const TOKEN: &str = "oidc-admin-token";

/// The provider's process: killed when dropped.
struct Provider {
    child: Child,
    issuer: String,
    lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
}

impl Provider {
    /// Node 22 and the pinned package, or a skip (a failure when CHATD_REQUIRE_OIDC_PROVIDER
    /// says they must be here, as .ci/run does).
    fn start() -> Option<Self> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let node = std::env::var_os("CHATD_OPENAI_NODE")
            .map(PathBuf::from)
            .unwrap_or_else(|| root.join("target/mcp-node/node_modules/node/bin/node"));
        let module = root.join("target/oidc-node/node_modules/oidc-provider");
        if !node.exists() || !module.join("lib/index.js").exists() {
            assert!(
                std::env::var_os("CHATD_REQUIRE_OIDC_PROVIDER").is_none(),
                "CHATD_REQUIRE_OIDC_PROVIDER is set but {} or {} is missing (.ci/run installs them)",
                node.display(),
                module.display()
            );
            eprintln!(
                "skipped: no Node 22 at {} or no oidc-provider at {} (npm install \
                 oidc-provider@9.13.3 in target/oidc-node)",
                node.display(),
                module.display()
            );
            return None;
        }
        let mut child = Command::new(node)
            .arg(root.join("tests/oidc/provider.mjs"))
            .env("OIDC_PROVIDER_MODULE", module)
            .env("CLIENT_ID", "chatd")
            .env("CLIENT_SECRET", "provider-secret")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the OpenID provider");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first: serde_json::Value =
            serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        let issuer = first["issuer"].as_str().unwrap().to_string();
        Some(Self {
            child,
            issuer,
            lines,
        })
    }

    /// Registers chatd's callback as the client's redirect URI; returns once the provider
    /// serves.
    fn know(&mut self, redirect_uri: &str) {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{redirect_uri}").unwrap();
        let ready = self.lines.next().unwrap().unwrap();
        assert!(ready.contains("ready"), "{ready}");
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Signs `login` in on the provider's own pages (its development login: any password), then
/// approves chatd; returns once the web client is ready again.
async fn through_the_provider(browser: &Browser, login: &str) {
    browser.click("#oidc-signin").await;
    browser
        .until(
            "the provider's login page",
            "return !!document.querySelector('input[name=login]')",
        )
        .await;
    browser
        .eval(
            "document.querySelector('input[name=login]').value = arguments[0]; \
             document.querySelector('input[name=password]').value = 'any'; \
             document.querySelector('form').submit();",
            vec![serde_json::json!(login)],
        )
        .await;
    browser
        .until(
            "the provider's consent page",
            "return location.pathname.startsWith('/interaction/') && \
             !document.querySelector('input[name=login]') && \
             !!document.querySelector('form button[type=submit]')",
        )
        .await;
    browser.click("form button[type=submit]").await;
    browser.ready().await;
}

#[tokio::test]
async fn the_web_client_signs_in_with_an_openid_provider_and_signs_out() {
    let Some(mut provider) = Provider::start() else {
        return;
    };
    let Some(browser) = Browser::start().await else {
        return;
    };
    let upstreams = Upstreams::start([]).await;
    let files = tempfile::tempdir().unwrap();
    let config = files.path().join("chatd.toml");
    std::fs::write(
        &config,
        format!(
            "[auth.oidc]\nissuer = \"{}\"\nclient_id = \"chatd\"\n\
             client_secret = \"provider-secret\"\nadmin_claim = \"groups\"\n\
             admin_value = \"chatd-admins\"\nnew_people = true\n",
            provider.issuer
        ),
    )
    .unwrap();
    let mut env: Vec<(&str, String)> = upstreams.env();
    env.push(("ADMIN_TOKEN", TOKEN.into()));
    env.push(("CHATD_CONFIG", config.display().to_string()));
    let chatd = Chatd::start(env);
    provider.know(&format!("{}/v1/auth/oidc/callback", chatd.base));
    browser.open(&format!("{}/", chatd.base)).await;

    through_the_provider(&browser, "admin-ann").await;
    assert_eq!(browser.text("#mode").await, "Signed in as admin-ann");
    // The session cookie is out of the page's reach (HttpOnly).
    assert_eq!(
        browser.eval("return document.cookie", vec![]).await,
        serde_json::json!("")
    );
    let users = chatd
        .api(reqwest::Method::GET, "/v1/users", None, Some(TOKEN))
        .await;
    let ann = users["users"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["name"] == "admin-ann")
        .expect("a person made at the first sign-in")
        .clone();
    assert_eq!(ann["role"], "admin", "the provider's group makes an admin");

    // Signing out ends the session; the provider's own session signs in again at once.
    browser.click("#sign-out").await;
    browser.find("#token").await;
    browser.click("#oidc-signin").await;
    browser.ready().await;
    assert_eq!(browser.text("#mode").await, "Signed in as admin-ann");
}
