//! Model output is untrusted: HTML in a reply shows as text and runs nothing, a `javascript:`
//! link is not a link, and the page is served with a strict Content-Security-Policy.

use serde_json::json;

use crate::open_app;
use crate::upstream::{COMPLETIONS, text_reply};

const HOSTILE: &str = "Look <img src=x onerror=\"window.__xss=1\"> here, \
    [click me](javascript:window.__xss=2) and <script>window.__xss=3</script> \
    <a href=\"javascript:window.__xss=4\">there</a> ![pic](https://tracker.example/p.png)\n\n\
    $$\\begin{equation}\\label{toasts}x\\end{equation}$$";

#[tokio::test]
async fn html_and_javascript_links_in_a_reply_render_as_text_and_run_nothing() {
    let routes = [(COMPLETIONS, text_reply(&[&HOSTILE[..40], &HOSTILE[40..]]))];
    let Some((_upstreams, chatd, browser)) = open_app(routes, &[]).await else {
        return;
    };
    let page = reqwest::get(format!("{}/", chatd.base)).await.unwrap();
    let csp = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    for directive in [
        "default-src 'none'",
        "script-src 'self'",
        "connect-src 'self'",
        "require-trusted-types-for 'script'",
        "frame-ancestors 'none'",
    ] {
        assert!(csp.contains(directive), "{directive} in {csp}");
    }

    browser.ready().await;
    browser
        .type_and_enter("#message", "<b onmouseover=\"window.__xss=5\">bold?</b>")
        .await;
    browser
        .until(
            "the reply to be done",
            "return !document.querySelector('#live-run') && !!document.querySelector('.message.assistant')",
        )
        .await;
    for pass in ["after the stream", "after a reload"] {
        let reply = browser.text(".message.assistant .markdown").await;
        assert!(
            reply.contains("<img src=x onerror=\"window.__xss=1\">"),
            "{pass}: the tag is shown as text: {reply}"
        );
        assert!(
            reply.contains("<script>window.__xss=3</script>"),
            "{pass}: {reply}"
        );
        let found = browser
            .eval(
                "const t = document.getElementById('transcript'); return [\
                   t.querySelectorAll('img, script, iframe, object, embed').length, \
                   t.querySelectorAll('[onerror], [onmouseover], [onclick]').length, \
                   [...t.querySelectorAll('a')].filter((a) => !/^https?:/.test(a.href)).length, \
                   t.querySelectorAll('.message.user b').length, \
                   t.querySelectorAll('.markdown [id]').length, \
                   t.querySelectorAll('.markdown math').length]",
                vec![],
            )
            .await;
        assert_eq!(
            found,
            json!([0, 0, 0, 0, 0, 1]),
            "{pass}: no markup from the model or the user, no id from its TeX"
        );
        // The words of the javascript: link are there, as plain text; clicking them does nothing.
        browser
            .eval(
                "const span = [...document.querySelectorAll('.message.assistant span')]\
                   .find((s) => s.textContent === 'click me'); span.click();",
                vec![],
            )
            .await;
        let image_link = browser
            .eval(
                "return [...document.querySelectorAll('.message.assistant a')].map((a) => [a.textContent, a.href, a.rel])",
                vec![],
            )
            .await;
        assert_eq!(
            image_link,
            json!([[
                "image: pic",
                "https://tracker.example/p.png",
                "noopener noreferrer nofollow"
            ]]),
            "{pass}: an image is a link, never loaded"
        );
        let xss = browser
            .eval("return window.__xss === undefined", vec![])
            .await;
        assert_eq!(xss, true, "{pass}: no script ran");
        browser.client.refresh().await.unwrap();
        browser.ready().await;
        browser.find(".message.assistant .markdown").await;
    }
}
