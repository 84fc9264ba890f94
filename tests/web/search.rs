//! Search mode in the browser: results shown as they arrive, then the answer with its
//! citations linked to the results, then "continue as chat"; a repeated query is reused.

use chatd::plugins::testing::{Gate, Reply};

use crate::open_app;
use crate::upstream::{exa_answer, exa_results};

/// "New search" from the list, and its empty form.
pub async fn new_search(browser: &crate::harness::Browser) {
    browser.click("#new-search").await;
    browser
        .until(
            "an empty search form",
            "const q = document.getElementById('query'); \
             return location.hash === '#/search' && !!q && q.value === '' && \
             document.activeElement === q",
        )
        .await;
}

#[tokio::test]
async fn a_search_shows_results_then_the_cited_answer_then_becomes_a_chat() {
    let answer = Gate::new();
    let routes = [
        ("POST /search", Reply::json(200, exa_results(3))),
        (
            "POST /answer",
            Reply::json(
                200,
                exa_answer("Tokio is an **asynchronous runtime** for Rust [1]."),
            )
            .after(&answer),
        ),
    ];
    let Some((upstreams, chatd, browser)) = open_app(routes, &[]).await else {
        return;
    };
    browser.ready().await;
    new_search(&browser).await;
    browser.type_and_enter("#query", "What is Tokio").await;
    // The results are shown while the answer is still being written.
    browser
        .until(
            "the results, before the answer",
            "return document.querySelectorAll('#results .result').length === 3 && \
             !!document.querySelector('#answer .pending')",
        )
        .await;
    assert!(browser.hash().await.starts_with("#/search/"));
    assert_eq!(browser.text("#result-1 h3 a").await, "Result 0");
    assert_eq!(
        browser
            .eval(
                "return document.querySelector('#result-1 h3 a').href",
                vec![]
            )
            .await,
        "https://site0.example/page"
    );
    answer.open();
    browser
        .until(
            "the answer",
            "return !!document.getElementById('answer-text') && \
             !document.querySelector('#answer .pending') && \
             !!document.getElementById('continue-chat')",
        )
        .await;
    assert_eq!(
        browser.text("#answer-text strong").await,
        "asynchronous runtime"
    );
    // The citation links to its source and to the result it came from.
    assert_eq!(
        browser
            .eval("return document.querySelector('#citations a').href", vec![])
            .await,
        "https://site0.example/page"
    );
    assert_eq!(browser.text("#citations .cite").await, "[1]");
    browser.click("#citations .cite").await;
    browser
        .until(
            "the cited result focused",
            "return document.activeElement.id === 'result-1'",
        )
        .await;

    browser.screenshot("search-desktop", 1440, 900).await;
    browser.screenshot("search-phone", 360, 780).await;
    browser.client.set_window_size(1440, 900).await.unwrap();

    // The same query again: the fresh stored answer is reused, no second upstream search.
    let searches = || {
        upstreams
            .main
            .requests()
            .iter()
            .filter(|r| r.path == "/search")
            .count()
    };
    assert_eq!(searches(), 1);
    let search_hash = browser.hash().await;
    new_search(&browser).await;
    browser.type_and_enter("#query", "  what is tokio ").await;
    browser
        .until(
            "the reused answer",
            "return !!document.getElementById('answer-text') && \
             document.getElementById('search-status').textContent.includes('reused')",
        )
        .await;
    assert_eq!(browser.hash().await, search_hash);
    assert_eq!(searches(), 1);

    browser.click("#continue-chat").await;
    browser
        .until(
            "the chat seeded with the search",
            "return location.hash.startsWith('#/chat/') && \
             !!document.querySelector('.message.system')",
        )
        .await;
    // The seed is there, collapsed; the chat is titled after the search.
    assert_eq!(
        browser
            .eval(
                "return document.querySelector('.message.system').open",
                vec![]
            )
            .await,
        false
    );
    browser
        .until(
            "the chat's title",
            "return document.getElementById('view-title').textContent === 'Search: What is Tokio'",
        )
        .await;
    let hash = browser.hash().await;
    let id = hash.strip_prefix("#/chat/").unwrap();
    let chat = chatd.get(&format!("/v1/chats/{id}")).await;
    assert_eq!(chat["chat"]["messages"][0]["role"], "system");
}
