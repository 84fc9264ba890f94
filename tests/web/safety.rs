//! Model output is untrusted: HTML in a reply shows as text and runs nothing, a `javascript:`
//! link is not a link, and the page is served with a strict Content-Security-Policy. The
//! markdown renderer's rules, checked in the browser that runs it.

use serde_json::{Value, json};

use crate::open_app;
use crate::upstream::{COMPLETIONS, text_reply};

const HOSTILE: &str = "Look <img src=x onerror=\"window.__xss=1\"> here, \
    [click me](javascript:window.__xss=2) and <script>window.__xss=3</script> \
    <a href=\"javascript:window.__xss=4\">there</a> ![pic](https://tracker.example/p.png)";

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
                   t.querySelectorAll('.message.user b').length]",
                vec![],
            )
            .await;
        assert_eq!(
            found,
            json!([0, 0, 0, 0]),
            "{pass}: no markup from the model or the user"
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

/// The renderer's output for each input, as the markup the DOM holds (read back, never
/// written).
#[tokio::test]
async fn markdown_renders_the_usual_subset_and_nothing_else() {
    let Some((_upstreams, _chatd, browser)) = open_app([], &[]).await else {
        return;
    };
    browser.ready().await;
    let cases: Vec<(&str, &str)> = vec![
        ("plain", "<p>plain</p>"),
        ("a\nb", "<p>a<br>b</p>"),
        (
            "**b** *i* ~~s~~ `c`",
            "<p><strong>b</strong> <em>i</em> <del>s</del> <code>c</code></p>",
        ),
        ("snake_case_name", "<p>snake_case_name</p>"),
        ("# T", "<h1>T</h1>"),
        ("- a\n- b", "<ul><li>a</li><li>b</li></ul>"),
        (
            "1. a\n2. b\n   - c",
            "<ol><li>a</li><li>b<ul><li>c</li></ul></li></ol>",
        ),
        ("> q", "<blockquote><p>q</p></blockquote>"),
        (
            "```js\n<b>x</b>\n  y\n```",
            "<pre><code data-lang=\"js\">&lt;b&gt;x&lt;/b&gt;\n  y</code></pre>",
        ),
        ("```\nunclosed", "<pre><code>unclosed</code></pre>"),
        (
            "| a | b |\n|---|--:|\n| 1 | 2 |",
            "<div class=\"table\"><table><thead><tr><th>a</th><th class=\"align-right\">b</th></tr></thead><tbody><tr><td>1</td><td class=\"align-right\">2</td></tr></tbody></table></div>",
        ),
        (
            "[x](https://a.example/?q=1)",
            "<p><a href=\"https://a.example/?q=1\" target=\"_blank\" rel=\"noopener noreferrer nofollow\">x</a></p>",
        ),
        ("[x](javascript:alert(1))", "<p><span>x</span></p>"),
        ("[x](data:text/html,hi)", "<p><span>x</span></p>"),
        ("[x](/relative)", "<p><span>x</span></p>"),
        (
            "see https://b.example/x.",
            "<p>see <a href=\"https://b.example/x\" target=\"_blank\" rel=\"noopener noreferrer nofollow\">https://b.example/x</a>.</p>",
        ),
        (
            "<https://c.example>",
            "<p><a href=\"https://c.example/\" target=\"_blank\" rel=\"noopener noreferrer nofollow\">https://c.example</a></p>",
        ),
        ("<i>x</i> &amp;", "<p>&lt;i&gt;x&lt;/i&gt; &amp;amp;</p>"),
        ("\\*not em\\*", "<p>*not em*</p>"),
        ("---", "<hr>"),
    ];
    let inputs: Vec<&str> = cases.iter().map(|(i, _)| *i).collect();
    let rendered = browser
        .client
        .execute_async(
            "const [inputs, done] = arguments; \
             import('./assets/js/markdown.js').then((m) => done(inputs.map((text) => { \
               const div = document.createElement('div'); \
               div.append(m.renderMarkdown(text)); return div.innerHTML; })));",
            vec![json!(inputs)],
        )
        .await
        .expect("the renderer runs");
    let rendered: Vec<String> = serde_json::from_value::<Vec<Value>>(rendered)
        .unwrap()
        .into_iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    for ((input, expected), got) in cases.iter().zip(&rendered) {
        assert_eq!(got, expected, "markdown {input:?}");
    }
}
