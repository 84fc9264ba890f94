//! A chat in the browser: the reply streams in before `done` and is stored (with tools on as
//! well as off); a reload or a second tab mid-stream reattaches and shows the whole answer once;
//! Stop ends a reply and keeps what was written; a tool call's card moves from initiated to
//! completed; a `python` call's card shows its code, output, value and files (the chart inline);
//! an upstream failure keeps the input and a retry succeeds; attachments are checked and
//! truncated before upload.

use chatd::plugins::testing::{Gate, Reply};
use serde_json::json;

use crate::harness::{Browser, Chatd};
use crate::open_app;
use crate::python_call::python_call;
use crate::upstream::{
    COMPLETIONS, Upstreams, exa_results, text_reply, upstream_401, web_search_call,
};

/// The chat's stored transcript as (role, content) pairs.
pub async fn transcript(chatd: &crate::harness::Chatd, hash: &str) -> Vec<(String, String)> {
    let id = hash.strip_prefix("#/chat/").expect("a chat is open");
    let chat = chatd.get(&format!("/v1/chats/{id}")).await;
    chat["chat"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_string(),
                m["content"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

pub fn pairs(rows: &[(&str, &str)]) -> Vec<(String, String)> {
    rows.iter()
        .map(|(r, c)| (r.to_string(), c.to_string()))
        .collect()
}

/// The text of the live reply equals `text` while the run is still going.
pub fn live_text_is(text: &str) -> String {
    format!(
        "const live = document.querySelector('#live-run .markdown'); \
         return !!live && live.textContent === {} && !!document.querySelector('#live-run .typing')",
        json!(text)
    )
}

/// Unchecks every tool in the new chat's settings (saved with the chat it creates).
async fn without_tools(browser: &crate::harness::Browser) {
    browser.click(".chat-settings summary").await;
    for tool in ["web_search", "fetch_url", "python", "file_search"] {
        browser.click(&format!("#tool-{tool}")).await;
    }
    let checked = browser.count(".tools input:checked").await;
    assert_eq!(checked, 0);
    browser.click(".chat-settings summary").await;
}

pub const DONE: &str = "return !document.querySelector('#live-run') && \
    !!document.querySelector('.message.assistant') && !document.getElementById('send').disabled";

#[tokio::test]
async fn a_message_streams_live_then_is_stored_and_titled() {
    let gate = Gate::new();
    let pieces = [
        "Hello",
        " from",
        " London",
        ".\n\nWhat to see:\n\n- **Big Ben**, a bell\n",
        "- the `Tube`, since 1863\n\n```sh\necho 'mind the gap'\n```",
    ];
    let reply = text_reply(&pieces).hold_before(4, &gate);
    let Some((_upstreams, chatd, browser)) = open_app([(COMPLETIONS, reply)], &[]).await else {
        return;
    };
    browser.ready().await;
    // provider_a's list failed and says so; provider_c, the first with models, is chosen.
    let provider = browser
        .eval("return document.getElementById('provider').value", vec![])
        .await;
    assert_eq!(provider, "provider_c");
    assert!(browser.text("#model-note").await.contains("provider_a"));
    let unavailable = browser
        .eval(
            "return document.querySelector('#provider option[value=provider_a]').disabled",
            vec![],
        )
        .await;
    assert_eq!(unavailable, true);

    without_tools(&browser).await;
    browser.type_and_enter("#message", "Hello there").await;
    // The first three deltas are on the page while the upstream holds the rest: no `done` yet.
    browser
        .until("the first deltas", &live_text_is("Hello from London"))
        .await;
    let hash = browser.hash().await;
    assert!(
        hash.starts_with("#/chat/"),
        "the new chat is in the URL: {hash}"
    );
    assert_eq!(
        browser
            .eval("return document.getElementById('message').value", vec![])
            .await,
        ""
    );
    gate.open();
    browser.until("the reply to be done", DONE).await;

    let answer: String = pieces.concat();
    let id = hash.strip_prefix("#/chat/").unwrap();
    let stored = chatd.get(&format!("/v1/chats/{id}")).await;
    assert_eq!(
        stored["chat"]["enabledTools"],
        json!([]),
        "the settings chosen"
    );
    assert_eq!(stored["chat"]["lastUsedProvider"], "provider_c");
    assert_eq!(
        transcript(&chatd, &hash).await,
        pairs(&[("user", "Hello there"), ("assistant", &answer)])
    );
    // Rendered as markdown from the stored reply, with the usage of `done`.
    assert_eq!(browser.count(".message.assistant li").await, 2);
    assert_eq!(browser.text(".message.assistant strong").await, "Big Ben");
    assert_eq!(
        browser.text(".message.assistant pre code").await,
        "echo 'mind the gap'"
    );
    assert!(browser.text("#usage").await.contains("87 tokens"));
    // After the first answer the title model named the chat.
    browser
        .until(
            "the suggested title",
            "return document.getElementById('view-title').textContent === 'Greetings From London'",
        )
        .await;
    browser
        .until(
            "the title in the list",
            "return [...document.querySelectorAll('.item-title')].some((e) => e.textContent === 'Greetings From London')",
        )
        .await;

    browser.screenshot("chat-desktop", 1440, 900).await;
    browser.screenshot("chat-phone", 360, 780).await;
}

const COUNTED: &str = "One two three four five.";

/// A new chat with the default settings (every tool on) whose reply is held after "One two"
/// until the gate opens: with tools on, the text streams all the same.
async fn counting() -> Option<(Gate, Upstreams, Chatd, Browser)> {
    let gate = Gate::new();
    let reply = text_reply(&["One", " two", " three", " four", " five."]).hold_before(3, &gate);
    let (upstreams, chatd, browser) = open_app([(COMPLETIONS, reply)], &[]).await?;
    browser.ready().await;
    Some((gate, upstreams, chatd, browser))
}

#[tokio::test]
async fn stop_ends_the_reply_and_keeps_what_was_written() {
    let Some((gate, upstreams, chatd, browser)) = counting().await else {
        return;
    };
    browser.type_and_enter("#message", "Count to five").await;
    browser
        .until("the first deltas", &live_text_is("One two"))
        .await;
    let hash = browser.hash().await;
    // Stop takes the place of Send while the reply runs.
    browser
        .until(
            "the Stop button",
            "return !document.getElementById('stop').hidden && document.getElementById('send').hidden",
        )
        .await;
    browser.click("#stop").await;
    browser.until("the reply to be done", DONE).await;
    assert_eq!(
        browser.text(".message.assistant .markdown").await,
        "One two"
    );
    assert_eq!(
        browser.text(".message.assistant .stopped-note").await,
        "Stopped"
    );
    assert_eq!(
        browser
            .eval("return document.getElementById('stop').hidden", vec![])
            .await,
        true
    );
    assert_eq!(
        transcript(&chatd, &hash).await,
        pairs(&[("user", "Count to five"), ("assistant", "One two")])
    );
    // The upstream's request was dropped, not left to run.
    tokio::time::timeout(std::time::Duration::from_secs(5), upstreams.main.dropped(1))
        .await
        .expect("the upstream request is closed");
    gate.open();
}

#[tokio::test]
async fn a_reload_or_a_second_tab_mid_stream_shows_the_whole_answer_once() {
    let Some((gate, _upstreams, chatd, browser)) = counting().await else {
        return;
    };
    browser.type_and_enter("#message", "Count to five").await;
    browser
        .until("the first deltas", &live_text_is("One two"))
        .await;
    let hash = browser.hash().await;

    browser.client.refresh().await.expect("reload");
    browser.ready().await;
    // The page found the run in active-runs and attached: the replay shows what was written.
    browser
        .until("the reattached run", &live_text_is("One two"))
        .await;
    assert_eq!(browser.count(".message.user").await, 1);
    assert_eq!(browser.count(".item .running").await, 1, "generating mark");

    // A second tab on the same chat attaches too.
    let first = browser.client.window().await.unwrap();
    let second = browser.client.new_window(true).await.unwrap().handle;
    browser
        .client
        .switch_to_window(second.clone())
        .await
        .unwrap();
    browser.open(&format!("{}/{hash}", chatd.base)).await;
    browser.ready().await;
    browser
        .until("the run in the second tab", &live_text_is("One two"))
        .await;

    gate.open();
    for window in [second, first] {
        browser.client.switch_to_window(window).await.unwrap();
        browser.until("the reply to be done", DONE).await;
        assert_eq!(browser.text(".message.assistant .markdown").await, COUNTED);
        assert_eq!(browser.count(".message.assistant").await, 1);
        assert_eq!(browser.count(".message.user").await, 1);
    }
    assert_eq!(
        transcript(&chatd, &hash).await,
        pairs(&[("user", "Count to five"), ("assistant", COUNTED)])
    );
}

#[tokio::test]
async fn a_tool_call_card_moves_from_initiated_to_completed() {
    let (search, answer) = (Gate::new(), Gate::new());
    let routes = [
        (COMPLETIONS, web_search_call()),
        (
            COMPLETIONS,
            text_reply(&["London", " it is."]).after(&answer),
        ),
        (
            "POST /search",
            Reply::json(200, exa_results(1)).after(&search),
        ),
    ];
    let Some((_upstreams, chatd, browser)) = open_app(routes, &[]).await else {
        return;
    };
    browser.ready().await;
    browser
        .type_and_enter("#message", "What is the capital of the UK?")
        .await;
    let live_card = "#live-run .tool-card";
    browser
        .until(
            "an initiated card",
            "const c = document.querySelector('#live-run .tool-card'); \
             return !!c && c.dataset.status === 'initiated'",
        )
        .await;
    assert_eq!(
        browser.text(&format!("{live_card} .tool-name")).await,
        "web_search"
    );
    search.open();
    browser
        .until(
            "the same card, completed",
            "const c = document.querySelectorAll('#live-run .tool-card'); \
             return c.length === 1 && c[0].dataset.status === 'completed'",
        )
        .await;
    // Arguments and result preview open on demand.
    browser
        .click(&format!("{live_card} .tool-args summary"))
        .await;
    assert!(
        browser
            .text(&format!("{live_card} .tool-args pre"))
            .await
            .contains("\"UK\"")
    );
    browser
        .click(&format!("{live_card} .tool-result summary"))
        .await;
    assert!(
        browser
            .text(&format!("{live_card} .tool-result pre"))
            .await
            .contains("Result 0")
    );
    answer.open();
    browser.until("the reply to be done", DONE).await;
    // The stored transcript shows the call as a completed card before the answer.
    assert_eq!(
        browser
            .count(".message.tool .tool-card[data-status=completed]")
            .await,
        1
    );
    assert_eq!(
        browser.text(".message.assistant .markdown").await,
        "London it is."
    );
    let hash = browser.hash().await;
    let roles: Vec<String> = transcript(&chatd, &hash)
        .await
        .into_iter()
        .map(|(r, _)| r)
        .collect();
    assert_eq!(roles, ["user", "tool", "assistant"]);
}

#[tokio::test]
async fn a_python_card_shows_its_code_output_value_and_files() {
    let code = "import csv, pygal\n\
        with open('data.csv', 'w', newline='') as f:\n    csv.writer(f).writerows([['x', 'y'], [1, 2]])\n\
        chart = pygal.Bar()\nchart.add('y', [2, 4])\nchart.render_to_file('chart.svg')\n\
        print('rows: 2')\n'ok'";
    let routes = [
        (COMPLETIONS, Reply::sse(&python_call(code))),
        (COMPLETIONS, text_reply(&["Charted."])),
    ];
    let Some((_upstreams, _chatd, browser)) = open_app(routes, &[]).await else {
        return;
    };
    browser.ready().await;
    browser.type_and_enter("#message", "Chart it").await;
    browser.until("the reply to be done", DONE).await;
    let card = ".message.tool .tool-card[data-status=completed]";
    assert_eq!(browser.text(&format!("{card} .tool-name")).await, "python");
    // The code, highlighted as Python.
    assert!(
        browser
            .count(&format!(
                "{card} .python-code code[data-lang=python] .hljs-keyword"
            ))
            .await
            > 0
    );
    assert_eq!(
        browser.text(&format!("{card} .python-stdout pre")).await,
        "rows: 2"
    );
    assert_eq!(
        browser.text(&format!("{card} .python-value pre")).await,
        "'ok'"
    );
    // The chart is shown through <img> from the download route; the CSV is a link to it.
    browser
        .until(
            "the chart to be shown",
            "const img = document.querySelector('.message.tool .python-image'); \
             return !!img && img.complete && img.naturalWidth > 0 && \
             img.getAttribute('src').includes('/v1/chats/') && img.alt === 'chart.svg'",
        )
        .await;
    let href = browser
        .eval(
            "return document.querySelector('.message.tool a.python-download').href",
            vec![],
        )
        .await;
    assert!(href.as_str().unwrap().contains("/files/"), "{href}");
    assert!(
        browser
            .text(&format!("{card} a.python-download"))
            .await
            .starts_with("data.csv")
    );
}

#[tokio::test]
async fn an_upstream_failure_keeps_the_input_and_a_retry_succeeds() {
    let routes = [
        (COMPLETIONS, upstream_401()),
        (COMPLETIONS, text_reply(&["Second", " time", " lucky."])),
    ];
    let Some((_upstreams, chatd, browser)) = open_app(routes, &[]).await else {
        return;
    };
    browser.ready().await;
    browser.type_and_enter("#message", "Keep me").await;
    browser
        .until(
            "the error",
            "return !document.getElementById('run-error').hidden",
        )
        .await;
    let error = browser.text("#run-error").await;
    assert!(error.contains("The reply failed"), "{error}");
    assert!(
        error.to_lowercase().contains("api key"),
        "the upstream's reason: {error}"
    );
    assert_eq!(
        browser
            .eval("return document.getElementById('message').value", vec![])
            .await,
        "Keep me"
    );
    browser.click("#retry").await;
    browser.until("the retried reply", DONE).await;
    assert_eq!(
        browser.text(".message.assistant .markdown").await,
        "Second time lucky."
    );
    assert!(
        browser
            .eval("return document.getElementById('run-error').hidden", vec![])
            .await
            == true
    );
    assert_eq!(
        browser
            .eval("return document.getElementById('message').value", vec![])
            .await,
        ""
    );
    let hash = browser.hash().await;
    assert_eq!(
        transcript(&chatd, &hash).await,
        pairs(&[("user", "Keep me"), ("assistant", "Second time lucky.")])
    );
}

#[tokio::test]
async fn attachments_are_checked_and_long_text_is_truncated_before_upload() {
    let routes = [(COMPLETIONS, text_reply(&["Got", " them."]))];
    let Some((_upstreams, chatd, browser)) = open_app(routes, &[]).await else {
        return;
    };
    browser.ready().await;
    let dir = tempfile::tempdir().unwrap();
    let long = dir.path().join("notes.txt");
    std::fs::write(&long, "é".repeat(250_000)).unwrap();
    let gif = dir.path().join("anim.gif");
    std::fs::write(&gif, b"GIF89a\x01\x00\x01\x00\x00\x00\x00;").unwrap();
    let png = dir.path().join("dot.png");
    std::fs::write(&png, png_bytes()).unwrap();
    // The file field is hidden behind the "+" button; WebDriver types paths into it.
    browser
        .eval("document.getElementById('files').hidden = false", vec![])
        .await;
    let field = browser.find("#files").await;
    for path in [&long, &gif, &png] {
        field
            .send_keys(path.to_str().unwrap())
            .await
            .expect("choose a file");
    }
    browser
        .until(
            "two chips",
            "return document.querySelectorAll('#attachments .chip').length === 2",
        )
        .await;
    assert!(browser.text("#attachments").await.contains("truncated"));
    assert!(
        browser
            .text("#toasts")
            .await
            .contains("anim.gif: images must be PNG or JPEG")
    );
    browser.type_and_enter("#message", "Two files").await;
    browser.until("the reply to be done", DONE).await;

    let hash = browser.hash().await;
    let id = hash.strip_prefix("#/chat/").unwrap();
    let chat = chatd.get(&format!("/v1/chats/{id}")).await;
    let user = &chat["chat"]["messages"][0];
    let attachments = user["metadata"]["attachments"].as_array().unwrap();
    let text = attachments.iter().find(|a| a["kind"] == "text").unwrap();
    assert_eq!(text["truncated"], true);
    assert_eq!(text["text"].as_str().unwrap().chars().count(), 200_000);
    let image = attachments.iter().find(|a| a["kind"] == "image").unwrap();
    assert_eq!(image["mimeType"], "image/png");
    // The stored image is shown from its data URL.
    assert_eq!(
        browser.count(".message.user .attachment.image img").await,
        1
    );
}

/// A 1×1 PNG.
fn png_bytes() -> Vec<u8> {
    const B64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(B64)
        .unwrap()
}

#[tokio::test]
async fn the_page_follows_the_systems_dark_theme() {
    let Some((_upstreams, chatd, browser)) =
        crate::open_app_with([], &[], &["--force-dark-mode"]).await
    else {
        return;
    };
    let reply = "Use `cargo build --release`:\n\n1. it optimises\n2. it strips nothing\n\n```sh\ncargo build --release\n```";
    let chat = chatd
        .api(
            reqwest::Method::POST,
            "/v1/chats",
            Some(
                json!({"title": "Release builds", "provider": "provider_c", "model": "grok-4",
                "messages": [{"role": "user", "content": "How do I build for release?"},
                             {"role": "assistant", "content": reply}]}),
            ),
            None,
        )
        .await;
    let id = chat["chat"]["id"].as_str().unwrap();
    browser.open(&format!("{}/#/chat/{id}", chatd.base)).await;
    browser.ready().await;
    browser.find(".message.assistant pre").await;
    // The dark palette: a dark page behind light text.
    let colors = browser
        .eval(
            "const s = getComputedStyle(document.body); return [s.backgroundColor, s.color]",
            vec![],
        )
        .await;
    assert_eq!(colors, json!(["rgb(21, 23, 28)", "rgb(230, 232, 236)"]));
    browser.screenshot("chat-dark", 1440, 900).await;
}

/// The page's `fetch`, wrapped so that the first stream's connection breaks once a delta came
/// through, and every request's `Last-Event-ID` is recorded.
const CUT_AFTER_FIRST_DELTA: &str = r#"
window.requests = [];
const real = window.fetch;
window.fetch = async (url, init) => {
  window.requests.push({ url: String(url), lastEventId: init?.headers?.['Last-Event-ID'] ?? null });
  const res = await real(url, init);
  if (!String(url).endsWith('/v1/chat-completions/stream') || window.cut) return res;
  window.cut = true;
  const reader = res.body.getReader();
  let seen = '';
  const body = new ReadableStream({
    async pull(c) {
      if (seen.includes('event: delta')) return c.error(new TypeError('network error'));
      const { value, done } = await reader.read();
      if (done) return c.close();
      seen += new TextDecoder().decode(value);
      c.enqueue(value);
    },
    cancel() { reader.cancel(); },
  });
  return new Response(body, { status: res.status, headers: res.headers });
};
"#;

#[tokio::test]
async fn a_dropped_connection_resumes_after_the_last_event_seen() {
    let Some((gate, _upstreams, chatd, browser)) = counting().await else {
        return;
    };
    browser.eval(CUT_AFTER_FIRST_DELTA, vec![]).await;
    browser.type_and_enter("#message", "Count again").await;
    // The page attached again with the id of the last event it had: nothing twice.
    browser
        .until(
            "the attach after the cut",
            "return window.requests.some((r) => r.url.endsWith('/stream/attach') && r.lastEventId)",
        )
        .await;
    browser
        .until("the text so far", &live_text_is("One two"))
        .await;
    gate.open();
    browser.until("the reply to be done", DONE).await;
    assert_eq!(browser.text(".message.assistant .markdown").await, COUNTED);
    let hash = browser.hash().await;
    assert_eq!(
        transcript(&chatd, &hash).await,
        pairs(&[("user", "Count again"), ("assistant", COUNTED)])
    );
}

const NOT_FOUND: &str = "return document.getElementById('view-title').textContent === 'Not found' && \
    document.getElementById('view').textContent.includes('This chat does not exist')";

#[tokio::test]
async fn a_link_to_an_unknown_or_malformed_chat_says_not_found() {
    let Some((_upstreams, chatd, browser)) = open_app([], &[]).await else {
        return;
    };
    // Malformed, on a fresh page: a fragment that broke routing would leave no view (never
    // ready).
    browser.open(&format!("{}/#/chat/%E0", chatd.base)).await;
    browser.ready().await;
    browser.until("the not-found view", NOT_FOUND).await;
    // Another view between, so the title is written anew.
    browser.open(&format!("{}/#/search", chatd.base)).await;
    browser.find("#search-form").await;
    browser
        .open(&format!("{}/#/chat/no-such-chat", chatd.base))
        .await;
    browser.until("the not-found view", NOT_FOUND).await;
}
