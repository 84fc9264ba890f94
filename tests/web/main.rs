//! The bundled web client in a real headless Chromium, against the real chatd binary and
//! scripted upstreams: what a user does in the page (send, watch the reply stream, reload
//! mid-stream, see a tool run, retry a failure, search, continue as a chat, sign in), and that
//! model output never becomes markup; that a page on another origin cannot drive chatd, and the
//! client works behind `deploy/nginx.conf`. The tests also make the README's screenshots.
//!
//! Needs Debian's `chromium` and `chromium-driver`; skips without them unless
//! CHATD_REQUIRE_BROWSER is set (`harness.rs`).

mod accessibility;
mod account;
mod actions;
mod auth;
#[path = "../common/binary.rs"]
mod binary;
mod chat;
mod cross_site;
mod files;
mod harness;
mod history;
mod keyboard;
#[path = "../common/mcp.rs"]
mod mcp;
mod mcp_login;
mod oidc;
mod parsers;
#[path = "../common/process.rs"]
mod process;
#[path = "../common/python_call.rs"]
mod python_call;
mod safety;
mod search;
#[path = "../common/upstream.rs"]
mod upstream;

use chatd::plugins::testing::Reply;

use harness::{Browser, Chatd};
use upstream::Upstreams;

/// A browser, the upstreams answering `routes`, and chatd pointed at them with `env` added;
/// the page open and ready. None when the browser is missing (the test skips).
pub async fn open_app<'a>(
    routes: impl IntoIterator<Item = (&'a str, Reply)>,
    env: &[(&'static str, &str)],
) -> Option<(Upstreams, Chatd, Browser)> {
    open_app_with(routes, env, &[]).await
}

/// [`open_app`] in a browser started with `flags`.
pub async fn open_app_with<'a>(
    routes: impl IntoIterator<Item = (&'a str, Reply)>,
    env: &[(&'static str, &str)],
    flags: &[&str],
) -> Option<(Upstreams, Chatd, Browser)> {
    let browser = Browser::start_with(flags).await?;
    let upstreams = Upstreams::start(routes).await;
    let mut all: Vec<(&str, String)> = upstreams.env();
    all.extend(env.iter().map(|(k, v)| (*k, v.to_string())));
    let chatd = Chatd::start(all);
    browser.open(&format!("{}/", chatd.base)).await;
    Some((upstreams, chatd, browser))
}

/// The address of a fresh login link for `name` (`chatd users login-link`, run beside `chatd`
/// with `token` as ADMIN_TOKEN), at `chatd`'s own port: the command makes links from HOST and
/// PORT, and the test server listens on a port of its own.
pub fn login_link(chatd: &Chatd, name: &str, token: &str) -> String {
    let out = chatd.command(&["users", "login-link", name], &[("ADMIN_TOKEN", token)]);
    assert!(out.status.success(), "{out:?}");
    let line: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let (_, secret) = line["link"]
        .as_str()
        .unwrap()
        .split_once("#login=")
        .unwrap();
    format!("{}/#login={secret}", chatd.base)
}
