//! The page's parsers, checked in the browser that runs them: the markdown renderer's output
//! for each input, and the event-stream reader on bodies cut at awkward places.

use serde_json::{Value, json};

use crate::open_app;

/// The renderer's output for each input, as the markup the DOM holds (read back, never
/// written).
#[tokio::test]
async fn markdown_renders_the_usual_subset_and_nothing_else() {
    let Some((_upstreams, chatd, browser)) = open_app([], &[]).await else {
        return;
    };
    // Behind a proxy's `/api/` the page works the same (its URLs are relative).
    browser.open(&format!("{}/api/", chatd.base)).await;
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
        // An entity is its character (CommonMark); a tag stays text.
        ("<i>x</i> &amp;", "<p>&lt;i&gt;x&lt;/i&gt; &amp;</p>"),
        ("\\*not em\\*", "<p>*not em*</p>"),
        ("---", "<hr>"),
        (
            "[https://a.example](https://b.example)",
            "<p><a href=\"https://b.example/\" target=\"_blank\" rel=\"noopener noreferrer nofollow\">https://a.example</a></p>",
        ),
        ("- a\n\t- b", "<ul><li>a<ul><li>b</li></ul></li></ul>"),
        // A setext heading, as CommonMark has it.
        ("text | x\n---", "<h2>text | x</h2>"),
        ("***x***", "<p><em><strong>x</strong></em></p>"),
        (
            "- [x] done\n- [ ] todo",
            "<ul><li class=\"task\"><input type=\"checkbox\" disabled=\"\" checked=\"\"> done</li><li class=\"task\"><input type=\"checkbox\" disabled=\"\"> todo</li></ul>",
        ),
        ("costs $5 and $10", "<p>costs $5 and $10</p>"),
        (
            "> q\n```\ncode\n```",
            "<blockquote><p>q</p></blockquote><pre><code>code</code></pre>",
        ),
        ("## Title ##", "<h2>Title</h2>"),
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

/// Every way of cutting the same event-stream body gives the same events.
#[tokio::test]
async fn the_event_stream_reader_follows_the_contracts_client_rules() {
    let Some((_upstreams, _chatd, browser)) = open_app([], &[]).await else {
        return;
    };
    browser.ready().await;
    let body = ": keep-alive\r\nid: 7:1\r\nevent: meta\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n\
                event: unknown_name\ndata: {\"b\":2}\n\n\
                id: 7:2\nevent: delta\ndata:{\"text\":\"h\u{e9}\"}\n\n\
                event: delta\ndata: not json\n\n\
                id: 7:3\revent: done\rdata: {}\r\r";
    let parsed = browser
        .client
        .execute_async(
            "const [body, done] = arguments; \
             import('./assets/js/sse.js').then(async (sse) => { \
               const bytes = new TextEncoder().encode(body); \
               const results = []; \
               for (const size of [1, 2, 3, 5, 7, 64, bytes.length]) { \
                 const stream = new ReadableStream({ start(c) { \
                   for (let i = 0; i < bytes.length; i += size) c.enqueue(bytes.slice(i, i + size)); \
                   c.close(); } }); \
                 const events = []; \
                 for await (const e of sse.parse({ body: stream })) events.push(e); \
                 results.push(events); \
               } \
               done(results); });",
            vec![json!(body)],
        )
        .await
        .expect("the reader runs");
    let expected = json!([
        {"event": "meta", "data": {"a": 1}, "id": "7:1"},
        {"event": "unknown_name", "data": {"b": 2}, "id": "7:1"},
        {"event": "delta", "data": {"text": "h\u{e9}"}, "id": "7:2"},
        {"event": "done", "data": {}, "id": "7:3"}
    ]);
    for (cut, events) in parsed.as_array().unwrap().iter().enumerate() {
        assert_eq!(events, &expected, "cut #{cut}");
    }
}

/// Shapes a hostile or broken reply may take render, as text, without freezing the page or
/// overflowing its stack (each scan is linear or bounded: markdown.js).
#[tokio::test]
async fn markdown_survives_hostile_shapes() {
    let Some((_upstreams, _chatd, browser)) = open_app([], &[]).await else {
        return;
    };
    browser.ready().await;
    let rendered = browser
        .client
        .execute_async(
            "const done = arguments[0]; \
             import('./assets/js/markdown.js').then((m) => { \
               const shapes = ['*a '.repeat(40000), '['.repeat(40000), '- '.repeat(3000) + 'x', \
                 '>'.repeat(5000) + ' x', '```' + ' '.repeat(40000) + 'x\\ncode', \
                 '# ' + 'a '.repeat(20000) + 'b', 'int *p = *q;\\n'.repeat(8000)]; \
               done(shapes.map((text) => { const div = document.createElement('div'); \
                 div.append(m.renderMarkdown(text)); \
                 return div.textContent.replace(/\\s/g, '').length > 0; })); });",
            vec![],
        )
        .await
        .expect("every shape renders");
    assert_eq!(rendered, json!([true, true, true, true, true, true, true]));
}
