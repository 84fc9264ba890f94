//! axe-core, run in the page, finds no violation (WCAG 2.1 A and AA, and its best practices) on
//! the list with a new chat, a chat with a reply, a search with results, the shortcuts sheet and
//! the token prompt, in the light theme and the dark.

use crate::open_app_with;
use crate::upstream::{COMPLETIONS, exa_answer, exa_results, text_reply};

use chatd::plugins::testing::Reply;

async fn no_violations(browser: &crate::harness::Browser, view: &str, theme: &str) -> bool {
    let Some(found) = browser.axe().await else {
        return false;
    };
    assert!(
        found.is_empty(),
        "axe-core on {view} ({theme}):\n{}",
        found.join("\n")
    );
    true
}

async fn every_view(flags: &[&str], theme: &str) {
    let reply =
        "A reply with `code`, a [link](https://example.com) and\n\n```rust\nlet x = 1;\n```";
    let routes = [
        (COMPLETIONS, text_reply(&[reply])),
        ("POST /search", Reply::json(200, exa_results(3))),
        (
            "POST /answer",
            Reply::json(200, exa_answer("An answer [1].")),
        ),
    ];
    let Some((_upstreams, chatd, browser)) = open_app_with(routes, &[], flags).await else {
        return;
    };
    chatd
        .api(
            reqwest::Method::POST,
            "/v1/chats",
            Some(serde_json::json!({"title": "An older chat"})),
            None,
        )
        .await;
    browser.client.refresh().await.unwrap();
    browser.ready().await;
    if !no_violations(&browser, "the list and a new chat", theme).await {
        return;
    }
    browser.type_and_enter("#message", "hello").await;
    browser
        .until("the reply", "return !document.querySelector('#live-run') && !!document.querySelector('.message.assistant .message-actions')")
        .await;
    no_violations(&browser, "a chat", theme).await;
    browser
        .eval("document.getElementById('open-help').click()", vec![])
        .await;
    browser
        .until(
            "the sheet",
            "return document.getElementById('help')?.open === true",
        )
        .await;
    no_violations(&browser, "the shortcuts sheet", theme).await;
    browser
        .eval("document.getElementById('help').close()", vec![])
        .await;
    browser.open(&format!("{}/#/search", chatd.base)).await;
    browser.ready().await;
    browser.type_and_enter("#query", "rust lifetimes").await;
    browser
        .until("the results", "return document.querySelectorAll('#results .result').length === 3 && !document.querySelector('#answer .pending')")
        .await;
    no_violations(&browser, "a search", theme).await;
    browser.open(&format!("{}/#/files", chatd.base)).await;
    browser.ready().await;
    browser
        .until(
            "the files page",
            "return document.getElementById('files')?.dataset.loaded === 'true'",
        )
        .await;
    no_violations(&browser, "the files page", theme).await;
    drop(browser);

    let Some((_upstreams, _chatd, browser)) =
        open_app_with([], &[("ADMIN_TOKEN", "t0ken")], flags).await
    else {
        return;
    };
    browser.find("#token").await;
    no_violations(&browser, "the token prompt", theme).await;
    // And axe sees what it should: an image without a text alternative, added here.
    browser
        .eval(
            "document.body.append(document.createElement('img'))",
            vec![],
        )
        .await;
    let found = browser.axe().await.expect("axe-core, found above");
    assert!(
        found.iter().any(|v| v.starts_with("image-alt:")),
        "axe-core finds a planted violation: {found:?}"
    );
}

#[tokio::test]
async fn axe_finds_nothing_in_the_light_theme() {
    every_view(&[], "light").await;
}

#[tokio::test]
async fn axe_finds_nothing_in_the_dark_theme() {
    every_view(&["--force-dark-mode"], "dark").await;
}
