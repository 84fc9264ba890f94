//! The whole history from the sidebar: with 250 chats the oldest opens after "Show older", and
//! a word found only in chat #200's message body is found from the filter box; the oldest
//! chat's title is found from the filter box with only the first page loaded, and a star on a
//! second page of titled rows keeps them. And the first
//! page of a server with no provider says what to set.

use serde_json::{Value, json};

use crate::harness::{Browser, Chatd};
use crate::open_app;

/// 250 chats, `chat(i)` the body of the `i`th (oldest first), and the page reloaded on the
/// first page of the list: their ids, oldest first.
async fn two_hundred_fifty_chats(
    chatd: &Chatd,
    browser: &Browser,
    chat: impl Fn(usize) -> Value,
) -> Vec<String> {
    let mut ids = Vec::new();
    for i in 0..250 {
        let created = chatd
            .api(reqwest::Method::POST, "/v1/chats", Some(chat(i)), None)
            .await;
        ids.push(created["chat"]["id"].as_str().unwrap().to_string());
    }
    browser.client.refresh().await.unwrap();
    browser.ready().await;
    assert_eq!(browser.count(".item").await, 100, "the first page only");
    ids
}

#[tokio::test]
async fn the_oldest_of_250_chats_opens_and_a_word_in_one_message_is_found() {
    let Some((_upstreams, chatd, browser)) = open_app([], &[]).await else {
        return;
    };
    let ids = two_hundred_fifty_chats(&chatd, &browser, |i| {
        let mut messages = vec![
            json!({"role": "user", "content": format!("question number {i} about the weather")}),
        ];
        if i == 200 {
            messages.push(
                json!({"role": "assistant", "content": "The zanzibarite crystals glow faintly."}),
            );
        }
        json!({"title": format!("Chat {i}"), "messages": messages})
    })
    .await;
    let oldest = format!(".item[data-id='{}'] .item-link", ids[0]);
    for page in 1..=2 {
        browser.click("#show-older").await;
        browser
            .until(
                "the next page",
                &format!(
                    "return document.querySelectorAll('.item').length === {}",
                    (100 * (page + 1)).min(250)
                ),
            )
            .await;
    }
    assert_eq!(
        browser
            .eval(
                "return document.getElementById('show-older').hidden",
                vec![]
            )
            .await,
        true,
        "everything is loaded"
    );
    browser.click(&oldest).await;
    browser
        .until(
            "the oldest chat to open",
            &format!("return location.hash === '#/chat/{}'", ids[0]),
        )
        .await;
    browser
        .until("its message", "return document.querySelector('.message.user')?.textContent.includes('question number 0 ')")
        .await;

    // A word only in chat #200's reply, typed into the filter box.
    let filter = browser.find("#filter-text").await;
    filter.send_keys("zanzibarite").await.unwrap();
    browser
        .until(
            "the message hit",
            "return document.querySelectorAll('#message-hits .hit').length === 1",
        )
        .await;
    let hit = browser
        .eval(
            "const hit = document.querySelector('#message-hits .hit'); \
             return [hit.dataset.chat, hit.querySelector('.hit-chat').textContent, hit.querySelector('mark').textContent]",
            vec![],
        )
        .await;
    assert_eq!(hit, json!([ids[200], "Chat 200", "zanzibarite"]));
    browser.screenshot("find-in-messages", 1440, 900).await;
    browser.click("#message-hits .hit-link").await;
    browser
        .until(
            "chat #200 to open",
            &format!("return location.hash === '#/chat/{}'", ids[200]),
        )
        .await;
}

#[tokio::test]
async fn the_filter_finds_the_oldest_of_250_chats_by_its_title() {
    let Some((_upstreams, chatd, browser)) = open_app([], &[]).await else {
        return;
    };
    let ids = two_hundred_fifty_chats(&chatd, &browser, |i| match i {
        0 => json!({ "title": "Quarterly budget review" }),
        i => json!({ "title": format!("Chat {i}") }),
    })
    .await;
    let filter = browser.find("#filter-text").await;
    filter.send_keys("Quarterly budget review").await.unwrap();
    browser
        .until(
            "the oldest chat, found by the server",
            &format!(
                "const items = document.querySelectorAll('.item'); \
                 return items.length === 1 && items[0].dataset.id === '{}'",
                ids[0]
            ),
        )
        .await;
    // Titles holding "Chat 1": 111 of them, a page of 100 and then the rest.
    filter.clear().await.unwrap();
    filter.send_keys("chat 1").await.unwrap();
    browser
        .until(
            "the first page of titles",
            "return document.querySelectorAll('.item').length === 100 \
             && !document.getElementById('show-older').hidden \
             && [...document.querySelectorAll('.item-title')] \
                  .every((t) => t.textContent.toLowerCase().includes('chat 1'))",
        )
        .await;
    browser.click("#show-older").await;
    browser
        .until(
            "every title holding the words",
            "return document.querySelectorAll('.item').length === 111 \
             && document.getElementById('show-older').hidden",
        )
        .await;
    // Starring one refreshes the titled rows in place, however many pages were loaded.
    browser
        .click(&format!(".item[data-id='{}'] .star", ids[100]))
        .await;
    browser
        .until(
            "the star, with every titled row still there",
            &format!(
                "const items = document.querySelectorAll('.item'); \
                 return items.length === 111 && items[0].dataset.id === '{}' \
                 && items[0].dataset.starred === 'true'",
                ids[100]
            ),
        )
        .await;
    browser
        .click(&format!(".item[data-id='{}'] .item-link", ids[100]))
        .await;
    browser
        .until(
            "chat #100 to open",
            &format!("return location.hash === '#/chat/{}'", ids[100]),
        )
        .await;
}

#[tokio::test]
async fn with_no_provider_the_first_page_says_what_to_set() {
    let Some(browser) = crate::harness::Browser::start().await else {
        return;
    };
    let chatd = crate::harness::Chatd::start([("CHATD_METRICS", "on")]);
    browser.open(&format!("{}/", chatd.base)).await;
    browser.ready().await;
    let text = browser.text("#no-provider").await;
    for needle in [
        "PROVIDER_A_API_KEY",
        "PROVIDER_B_API_KEY",
        "[providers.ollama]",
        "docs/configuration.md",
    ] {
        assert!(text.contains(needle), "{needle} in {text}");
    }
}
