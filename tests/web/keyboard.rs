//! The page's keyboard and the rest of what a user reaches without the mouse: the shortcuts
//! and their help sheet (a modal dialog that gives focus back), a finished reply announced to
//! screen readers, a pasted image attached, the web app manifest, and a declared provider's
//! label and featured models in the pickers.

use serde_json::json;

use crate::harness::{Browser, Chatd};
use crate::upstream::{COMPLETIONS, Upstreams, text_reply};

/// A 1×1 PNG.
const PNG_B64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/// WebDriver's keys: Control held until NULL releases it; Shift; Escape.
const CTRL: &str = "\u{E009}";
const SHIFT: &str = "\u{E008}";
const RELEASE: &str = "\u{E000}";
const ESCAPE: &str = "\u{E00C}";

#[tokio::test]
async fn shortcuts_announcements_paste_the_manifest_and_provider_labels() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let upstreams = Upstreams::start([(COMPLETIONS, text_reply(&["Done ", "here."]))]).await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("chatd.toml");
    std::fs::write(
        &config,
        format!(
            "[providers.mine]\nadapter = \"chat_completions\"\nbase_url = \"{}\"\napi_key = \"k\"\n\
             models = [\"mine-large\", \"mine-small\", \"mine-tiny\"]\n\
             display_name = \"My Provider\"\nfeatured_models = [\"mine-small\"]\n",
            upstreams.main.url()
        ),
    )
    .unwrap();
    let mut env = upstreams.env();
    env.push(("CHATD_CONFIG", config.display().to_string()));
    let chatd = Chatd::start(env);
    browser.open(&format!("{}/", chatd.base)).await;
    browser.ready().await;

    // The file's label and featured models: "Featured" first, then the rest.
    let pickers = browser
        .eval(
            "const p = document.getElementById('provider'); \
             const m = document.getElementById('model'); \
             return [p.value, p.selectedOptions[0].textContent, \
               [...m.querySelectorAll('optgroup')].map((g) => [g.label, [...g.children].map((o) => o.value)]), m.value]",
            vec![],
        )
        .await;
    assert_eq!(
        pickers,
        json!([
            "mine",
            "My Provider",
            [
                ["Featured", ["mine-small"]],
                ["All models", ["mine-large", "mine-tiny"]]
            ],
            "mine-small"
        ])
    );

    // A finished reply is announced.
    browser.type_and_enter("#message", "hello").await;
    browser
        .until(
            "the announcement",
            "return !document.querySelector('#live-run') && document.getElementById('announcer').textContent === 'Reply finished'",
        )
        .await;
    assert!(browser.hash().await.starts_with("#/chat/"));

    // Ctrl+/ opens the sheet with focus in it; Escape closes it and focus comes back.
    let field = browser.find("#message").await;
    field.click().await.unwrap();
    field.send_keys(&format!("{CTRL}/{RELEASE}")).await.unwrap();
    browser
        .until(
            "the shortcuts sheet",
            "const d = document.getElementById('help'); return !!d && d.open && d.contains(document.activeElement)",
        )
        .await;
    let rows = browser.count("#help tbody tr").await;
    assert!(rows >= 9, "every shortcut is listed ({rows})");
    browser
        .client
        .active_element()
        .await
        .unwrap()
        .send_keys(ESCAPE)
        .await
        .unwrap();
    browser
        .until(
            "focus back in the message box",
            "return !document.getElementById('help').open && document.activeElement.id === 'message'",
        )
        .await;

    // Ctrl+Shift+O starts a new chat.
    field
        .send_keys(&format!("{CTRL}{SHIFT}o{RELEASE}"))
        .await
        .unwrap();
    browser
        .until(
            "a new chat",
            "return location.hash === '#/' && !document.querySelector('.message')",
        )
        .await;

    // An image pasted into the message box is attached.
    browser
        .eval(
            "const bytes = Uint8Array.from(atob(arguments[0]), (c) => c.charCodeAt(0)); \
             const data = new DataTransfer(); \
             data.items.add(new File([bytes], 'screenshot.png', { type: 'image/png' })); \
             document.getElementById('message').dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));",
            vec![json!(PNG_B64)],
        )
        .await;
    browser
        .until(
            "the pasted image's chip",
            "const chip = document.querySelector('#attachments .chip'); \
             return !!chip && chip.dataset.kind === 'image' && chip.textContent.includes('screenshot.png')",
        )
        .await;

    // The manifest is linked, served and names the app.
    let manifest = browser
        .client
        .execute_async(
            "const done = arguments[0]; \
             fetch(document.querySelector('link[rel=manifest]').href) \
               .then(async (r) => done([r.status, r.headers.get('content-type'), (await r.json()).name]));",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(manifest, json!([200, "application/manifest+json", "chatd"]));
}
