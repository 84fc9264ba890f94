//! The bundled tools as compiled components (the bytes embedded in the binary), in the real
//! host, against scripted upstreams on loopback that replay the recorded or documented wire
//! formats (`tests/fixtures/upstream/`, a copy of `../shared/fixtures/upstream/`).

use std::time::Duration;

use chatd::plugins::loading::load::Plugin;
use chatd::plugins::testing::{Reply, ScriptedUpstream, TestHost};
use chatd::plugins::worlds::tool::{PluginError, ToolOutput};
use serde_json::json;

use crate::support::plugin_cache_dir;

const SEARXNG: &str = include_str!(
    "../fixtures/upstream/searxng/search_format_json.lobechat_capture.RECONSTRUCTED.json"
);

async fn bundled(id: &str, args: &[&str]) -> Plugin {
    TestHost::new(args)
        .with_cache(plugin_cache_dir())
        .load_bundled(id)
        .await
        .unwrap_or_else(|e| panic!("{id} loads: {e}"))
}

/// Invokes a tool plugin's (first) tool with `args`.
pub(crate) async fn call(
    plugin: &Plugin,
    args: serde_json::Value,
) -> Result<ToolOutput, PluginError> {
    let name = plugin.tools[0].name.clone();
    plugin
        .as_tool()
        .expect("a tool plugin")
        .invoke(&name, &args.to_string())
        .await
        .expect("the call finishes in the sandbox")
}

/// An Exa-style `/search` answer, shaped as the API's SDKs document it.
fn exa_results() -> serde_json::Value {
    json!({
        "requestId": "b5947044c4b78efa9552a7c89b306d95",
        "resolvedSearchType": "neural",
        "results": [
            {"id": "https://www.rust-lang.org/", "url": "https://www.rust-lang.org/",
             "title": "Rust Programming Language", "publishedDate": "2024-01-01T00:00:00.000Z",
             "author": null, "score": 0.42,
             "summary": "Rust is a language empowering everyone to build reliable software.",
             "highlights": ["A language empowering everyone"], "highlightScores": [0.6]},
            {"id": "https://doc.rust-lang.org/book/", "url": "https://doc.rust-lang.org/book/",
             "title": "The Rust Programming Language - The Book", "author": "Steve Klabnik",
             "highlights": ["Welcome to The Rust Programming Language", "an introductory book"]}
        ],
        "costDollars": {"total": 0.005, "search": {"neural": 0.005}}
    })
}

#[tokio::test]
async fn web_search_engine_a_sends_the_documented_request_with_the_injected_key() {
    let upstream =
        ScriptedUpstream::start([("POST /search", Reply::json(200, exa_results()))]).await;
    let url = upstream.url();
    let plugin = bundled(
        "web_search",
        &[
            "--engine-a-base-url",
            &url,
            "--engine-a-api-key",
            "exa-key-1",
        ],
    )
    .await;
    let out = call(&plugin, json!({"query": "rust language", "numResults": 5}))
        .await
        .unwrap();

    let requests = upstream.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.header("x-api-key"), Some("exa-key-1"));
    assert_eq!(request.header("content-type"), Some("application/json"));
    let body = request.json();
    assert_eq!(body["query"], "rust language");
    assert_eq!(body["numResults"], 5);
    assert_eq!(body["type"], "auto");
    assert_eq!(
        body["contents"]["summary"], true,
        "contents options are nested"
    );
    assert!(body["contents"]["highlights"].is_object());
    assert!(body.get("summary").is_none() && body.get("text").is_none());

    assert!(
        out.content
            .starts_with("Web search results for \"rust language\" (2 results):"),
        "{}",
        out.content
    );
    assert!(out.content.contains(
        "1. Rust Programming Language\n   URL: https://www.rust-lang.org/\n   Published: 2024-01-01T00:00:00.000Z\n   Rust is a language empowering everyone to build reliable software."
    ), "{}", out.content);
    assert!(out.content.contains("Author: Steve Klabnik"));
    assert!(
        out.content
            .contains("Welcome to The Rust Programming Language … an introductory book")
    );
    assert_eq!(
        out.summary.as_deref(),
        Some("2 results for \"rust language\"")
    );
}

#[tokio::test]
async fn web_search_engine_a_errors_carry_the_status_and_message() {
    let upstream = ScriptedUpstream::start([(
        "POST /search",
        Reply::json(
            401,
            json!({"requestId": "r1", "error": "Invalid API key", "tag": "INVALID_API_KEY"}),
        ),
    )])
    .await;
    let plugin = bundled("web_search", &["--engine-a-base-url", &upstream.url()]).await;
    match call(&plugin, json!({"query": "x"})).await {
        Err(PluginError::Upstream(e)) => {
            assert_eq!(e.status, 401);
            assert_eq!(e.message, "engine_a: Invalid API key");
        }
        other => panic!("{other:?}"),
    }
    // Without ENGINE_A_API_KEY no key header is sent at all.
    assert!(upstream.requests()[0].header("x-api-key").is_none());

    let broken = ScriptedUpstream::start([(
        "POST /search",
        Reply::text(200, "application/json", "{\"results\": [ {\"url\": "),
    )])
    .await;
    let plugin = bundled("web_search", &["--engine-a-base-url", &broken.url()]).await;
    assert!(matches!(
        call(&plugin, json!({"query": "x"})).await,
        Err(PluginError::MalformedResponse(_))
    ));
}

#[tokio::test]
async fn web_search_engine_b_replays_the_searxng_recording() {
    let upstream = ScriptedUpstream::start([(
        "GET /searx/search",
        Reply::text(200, "application/json; charset=utf-8", SEARXNG),
    )])
    .await;
    let base = format!("{}/searx", upstream.url());
    let plugin = bundled(
        "web_search",
        &[
            "--chat-web-search-engine",
            "engine_b",
            "--engine-b-base-url",
            &base,
            "--engine-a-api-key",
            "never-sent-to-searxng",
        ],
    )
    .await;
    let out = call(&plugin, json!({"query": "何同学的视频", "numResults": 3}))
        .await
        .unwrap();
    let request = &upstream.requests()[0];
    let query = request.query_pairs();
    assert_eq!(query["q"], "何同学的视频");
    assert_eq!(query["format"], "json");
    assert!(
        request.header("x-api-key").is_none(),
        "engine_a's key stays with engine_a"
    );
    assert!(out.content.contains("(3 results)"), "{}", out.content);
    assert!(out.content.contains("Direct answers:\n- 老师好我叫何同学"));
    assert!(out.content.contains(
        "1. 【何同学】我拍了一张600万人的合影..._哔哩哔哩_bilibili\n   URL: https://www.bilibili.com/video/BV1Nt4y1D7pW/"
    ), "{}", out.content);
    assert!(out.content.contains("\n3. "));
    assert!(!out.content.contains("\n4. "));
}

#[tokio::test]
async fn web_search_engine_b_without_json_output_says_how_to_enable_it() {
    let upstream = ScriptedUpstream::start([(
        "GET /search",
        Reply::text(403, "text/html", "<html>Forbidden</html>"),
    )])
    .await;
    let plugin = bundled(
        "web_search",
        &[
            "--chat-web-search-engine",
            "engine_b",
            "--engine-b-base-url",
            &upstream.url(),
        ],
    )
    .await;
    match call(&plugin, json!({"query": "x"})).await {
        Err(PluginError::Upstream(e)) => {
            assert_eq!(e.status, 403);
            assert!(
                e.message.contains("enable json in search.formats"),
                "{}",
                e.message
            );
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn web_search_refuses_bad_arguments_without_calling_out() {
    let upstream =
        ScriptedUpstream::start([("POST /search", Reply::json(200, exa_results()))]).await;
    let plugin = bundled("web_search", &["--engine-a-base-url", &upstream.url()]).await;
    for (args, expected) in [
        (json!({}), "query: is required"),
        (json!({"query": "  "}), "query: must not be blank"),
        (json!({"query": 5}), "query: must be a string"),
        (
            json!({"query": "x", "numResults": 0}),
            "numResults: must be from 1 to 20",
        ),
        (
            json!({"query": "x", "numResults": 21}),
            "numResults: must be from 1 to 20",
        ),
    ] {
        match call(&plugin, args.clone()).await {
            Err(PluginError::InvalidInput(why)) => assert_eq!(why, expected, "{args}"),
            other => panic!("{args}: {other:?}"),
        }
    }
    assert!(upstream.requests().is_empty());
}

/// fetch_url against loopback needs CHATD_ALLOW_PRIVATE_NETWORKS (it is granted the public web).
async fn fetch_url() -> Plugin {
    bundled("fetch_url", &["--chatd-allow-private-networks", "true"]).await
}

const PAGE: &str = r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Caf&eacute; &amp; Co</title>
<style>body { color: red }</style><script>window.secret = "script text";</script></head>
<body><nav><a href="/">Home</a></nav>
<h1>Opening hours</h1>
<p>We are open <b>daily</b> from 8 to 18. See the <a href="https://example.org/menu">menu</a>.</p>
<ul><li>Espresso</li><li>Cortado</li></ul>
</body></html>"#;

#[tokio::test]
async fn fetch_url_navigates_like_a_browser_and_returns_readable_text() {
    let upstream = ScriptedUpstream::start([
        ("GET /old", Reply::redirect(301, "/page")),
        (
            "GET /page",
            Reply::text(200, "text/html; charset=utf-8", PAGE),
        ),
    ])
    .await;
    let plugin = fetch_url().await;
    let out = call(&plugin, json!({"url": format!("{}/old", upstream.url())}))
        .await
        .unwrap();
    let request = upstream
        .requests()
        .into_iter()
        .find(|r| r.path == "/page")
        .unwrap();
    assert!(
        request
            .header("user-agent")
            .unwrap()
            .starts_with("Mozilla/5.0 ")
    );
    assert!(
        request
            .header("accept")
            .unwrap()
            .starts_with("text/html,application/xhtml+xml")
    );
    assert_eq!(request.header("sec-fetch-mode"), Some("navigate"));
    assert_eq!(request.header("sec-fetch-dest"), Some("document"));
    assert_eq!(request.header("upgrade-insecure-requests"), Some("1"));
    assert!(request.header("accept-language").is_some());
    assert!(
        request.header("accept-encoding").unwrap().contains("gzip"),
        "the host asks for compression"
    );

    let text = &out.content;
    assert!(
        text.starts_with(&format!(
            "Title: Café & Co\nURL: {}/page\n\n",
            upstream.url()
        )),
        "{text}"
    );
    assert!(text.contains("Opening hours"), "{text}");
    assert!(text.contains("We are open"), "{text}");
    assert!(
        text.contains("Espresso") && text.contains("Cortado"),
        "{text}"
    );
    assert!(
        text.contains("https://example.org/menu"),
        "links are listed: {text}"
    );
    assert!(
        text.contains(&format!("]: {}/\n", upstream.url())),
        "relative links are resolved against the page: {text}"
    );
    for absent in ["script text", "color: red", "<p>", "&amp;"] {
        assert!(!text.contains(absent), "{absent:?} in {text}");
    }
    assert!(out.summary.unwrap().starts_with("Fetched \"Café & Co\""));
}

#[tokio::test]
async fn fetch_url_decodes_legacy_charsets_and_compressed_bodies() {
    use std::io::Write;
    // "Привет, мир" in windows-1251, declared only in a meta tag.
    let mut cp1251 =
        b"<html><head><meta charset=\"windows-1251\"><title>t</title></head><body><p>".to_vec();
    cp1251.extend_from_slice(b"\xcf\xf0\xe8\xe2\xe5\xf2, \xec\xe8\xf0");
    cp1251.extend_from_slice(b"</p></body></html>");
    // Shift_JIS declared in the header: "日本語".
    let sjis = b"\x93\xfa\x96\x7b\x8c\xea".to_vec();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all("compressed text, ünïcode".as_bytes()).unwrap();
    let gzipped = gz.finish().unwrap();
    let upstream = ScriptedUpstream::start([
        ("GET /ru", Reply::bytes(200, "text/html", cp1251)),
        (
            "GET /jp",
            Reply::bytes(200, "text/plain; charset=Shift_JIS", sjis),
        ),
        (
            "GET /gz",
            Reply::bytes(200, "text/plain; charset=utf-8", gzipped)
                .header("content-encoding", "gzip"),
        ),
    ])
    .await;
    let plugin = fetch_url().await;
    let get = |path: &str| json!({"url": format!("{}{path}", upstream.url())});
    assert!(
        call(&plugin, get("/ru"))
            .await
            .unwrap()
            .content
            .contains("Привет, мир")
    );
    assert!(
        call(&plugin, get("/jp"))
            .await
            .unwrap()
            .content
            .ends_with("日本語")
    );
    assert!(
        call(&plugin, get("/gz"))
            .await
            .unwrap()
            .content
            .ends_with("compressed text, ünïcode")
    );
}

#[tokio::test]
async fn fetch_url_passes_text_through_and_refuses_binary() {
    let upstream = ScriptedUpstream::start([
        (
            "GET /notes.txt",
            Reply::text(200, "text/plain", "line one\nline <two>\n"),
        ),
        (
            "GET /data.json",
            Reply::text(200, "application/json", "{\"a\": [1, 2]}"),
        ),
        (
            "GET /logo.png",
            Reply::bytes(200, "image/png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec()),
        ),
        (
            "GET /blob",
            Reply::bytes(200, "application/octet-stream", vec![0u8, 1, 2, 3, 0, 9]),
        ),
        (
            "GET /missing",
            Reply::text(404, "text/html", "<h1>Not Found</h1>"),
        ),
    ])
    .await;
    let plugin = fetch_url().await;
    let get = |path: &str| json!({"url": format!("{}{path}", upstream.url())});
    let out = call(&plugin, get("/notes.txt")).await.unwrap();
    assert!(
        out.content.ends_with("\n\nline one\nline <two>"),
        "{}",
        out.content
    );
    assert!(!out.content.contains("Title:"));
    assert!(
        call(&plugin, get("/data.json"))
            .await
            .unwrap()
            .content
            .ends_with("{\"a\": [1, 2]}")
    );
    match call(&plugin, get("/logo.png")).await {
        Err(PluginError::InvalidInput(why)) => {
            assert!(why.ends_with("/logo.png is image/png, not a web page or text; fetch_url reads HTML and text only"), "{why}")
        }
        other => panic!("{other:?}"),
    }
    match call(&plugin, get("/blob")).await {
        Err(PluginError::InvalidInput(why)) => assert!(why.contains("is binary data"), "{why}"),
        other => panic!("{other:?}"),
    }
    match call(&plugin, get("/missing")).await {
        Err(PluginError::Upstream(e)) => {
            assert_eq!(e.status, 404);
            assert!(
                e.message.ends_with("/missing answered HTTP 404"),
                "{}",
                e.message
            );
        }
        other => panic!("{other:?}"),
    }
    match call(&plugin, json!({"url": "file:///etc/passwd"})).await {
        Err(PluginError::InvalidInput(why)) => {
            assert!(why.starts_with("url: only http and https"), "{why}")
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn fetch_url_reads_at_most_its_cap_and_cuts_the_text_with_a_marker() {
    // 3 MiB of text, in pieces: the tool stops reading at 2 MiB.
    let piece = "word ".repeat(1024 * 1024 / 5 + 1).into_bytes();
    let upstream = ScriptedUpstream::start([
        (
            "GET /huge",
            Reply::bytes(200, "text/plain", Vec::new())
                .paced(vec![piece.clone(), piece.clone(), piece], Duration::ZERO),
        ),
        (
            "GET /long",
            Reply::text(200, "text/plain", &"abcdefghij".repeat(5_000)),
        ),
    ])
    .await;
    let plugin = fetch_url().await;
    let out = call(
        &plugin,
        json!({"url": format!("{}/huge", upstream.url()), "maxChars": 1000}),
    )
    .await
    .unwrap();
    assert!(
        out.content.contains("\n\n[cut at 1000 of "),
        "{}",
        &out.content[out.content.len() - 300..]
    );
    assert!(
        out.content
            .ends_with("[the page is larger than 2048 KiB; only its beginning was read]")
    );
    let total: usize = out
        .summary
        .unwrap()
        .split('(')
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(total <= 2 * 1024 * 1024, "{total}");

    let out = call(&plugin, json!({"url": format!("{}/long", upstream.url())}))
        .await
        .unwrap();
    assert!(out.content.contains("[cut at 20000 of 50000 characters; call again with a larger maxChars (at most 100000) for more]"));
}

#[tokio::test]
async fn fetch_url_cannot_reach_private_addresses_unless_the_operator_allows_it() {
    let upstream =
        ScriptedUpstream::start([("GET /page", Reply::text(200, "text/plain", "inside"))]).await;
    let port = upstream.url().rsplit(':').next().unwrap().to_string();
    let plugin = bundled("fetch_url", &[]).await;
    for url in [
        format!("http://127.0.0.1:{port}/page"),
        format!("http://localhost:{port}/page"),
        "http://10.0.0.1/".to_string(),
        "http://169.254.169.254/latest/meta-data/".to_string(),
    ] {
        match call(&plugin, json!({ "url": url })).await {
            Err(PluginError::Denied(why)) => assert!(
                why.contains("private") || why.contains("cloud metadata"),
                "{url}: {why}"
            ),
            other => panic!("{url}: {other:?}"),
        }
    }
    assert!(
        upstream.requests().is_empty(),
        "nothing reached the private address"
    );
    let allowed = fetch_url().await;
    let out = call(
        &allowed,
        json!({"url": format!("http://127.0.0.1:{port}/page")}),
    )
    .await
    .unwrap();
    assert!(out.content.ends_with("inside"));
}
