//! A web page on another origin against a local chatd, in a real Chromium: what a page can send
//! with no CORS preflight (`fetch` with `mode: "no-cors"` and a typeless Blob, a `text/plain`
//! body, a form POST) to `/v1/chats`, `/v1/chat-completions` and `/mcp`, from another site
//! (`http://localhost:OTHER` against chatd on 127.0.0.1) and from the same site
//! (`http://127.0.0.1:OTHER`): every request reaches chatd (its log says 403), nothing is stored
//! and the upstream is never called. The positive controls: the same page, its origin listed in
//! CHATD_ALLOWED_ORIGINS and chatd in token mode, creates a chat through CORS (so the browser did
//! send); and the bundled client still chats, stops, reattaches and searches behind
//! `deploy/nginx.conf` (Debian's nginx; skipped without it unless CHATD_REQUIRE_NGINX is set).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use axum::response::Html;
use chatd::plugins::testing::{Gate, Reply};
use serde_json::json;

use crate::chat::{DONE, live_text_is, pairs, transcript};
use crate::harness::{Browser, Chatd};
use crate::search::new_search;
use crate::upstream::{COMPLETIONS, Upstreams, exa_answer, exa_results, text_reply};

/// The attacker's page: each of the three routes, each of the three ways, then its title says
/// `done`. `CHATD` is replaced by chatd's base URL.
const ATTACK: &str = r#"<!doctype html><title>attack</title><body><script type="module">
const target = "CHATD";
const chat = JSON.stringify({ title: "from another site" });
const completion = JSON.stringify({ provider: "provider_c", model: "grok-3",
  messages: [{ role: "user", content: "spend the operator's key" }] });
const call = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call",
  params: { name: "fetch_url", arguments: { url: "https://example.com/" } } });
// A form's text/plain body is NAME=VALUE: split a JSON text around an `=` inside a string.
function form(path, json, n) {
  return new Promise((resolve) => {
    const frame = document.createElement("iframe");
    frame.name = "sink" + n;
    frame.src = "/blank";
    frame.onload = () => {
      frame.onload = () => resolve();
      const f = document.createElement("form");
      f.method = "post"; f.action = target + path; f.target = frame.name; f.enctype = "text/plain";
      const input = document.createElement("input");
      input.name = json.slice(0, -1) + ', "pad": "'; input.value = '"}';
      f.append(input); document.body.append(f); f.submit();
    };
    document.body.append(frame);
  });
}
const tries = [];
let n = 0;
for (const [path, json] of [["/v1/chats", chat], ["/v1/chat-completions", completion], ["/mcp", call]]) {
  tries.push(fetch(target + path, { method: "POST", mode: "no-cors", body: new Blob([json]) }).catch(() => {}));
  tries.push(fetch(target + path, { method: "POST", mode: "no-cors",
    headers: { "Content-Type": "text/plain" }, body: json }).catch(() => {}));
  tries.push(form(path, json, n++));
}
await Promise.all(tries);
document.title = "done";
</script></body>"#;

/// The allowed page: a chat created through CORS with the token, its title then shown.
const ALLOWED: &str = r#"<!doctype html><title>app</title><body><script type="module">
const response = await fetch("CHATD/v1/chats", { method: "POST",
  headers: { "Authorization": "Bearer TOKEN", "Content-Type": "application/json" },
  body: JSON.stringify({ title: "through CORS" }) });
const body = await response.json();
document.title = response.status + " " + body.chat.title;
</script></body>"#;

/// A port of its own on 127.0.0.1 for a page, known before chatd starts (whose settings may
/// name it).
async fn page_port() -> tokio::net::TcpListener {
    tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap()
}

/// Serves `page` at `/page` (CHATD and TOKEN filled in) and an empty `/blank` on `listener`;
/// its port.
fn serve_page(listener: tokio::net::TcpListener, page: &str, chatd: &str, token: &str) -> u16 {
    let page = page.replace("CHATD", chatd).replace("TOKEN", token);
    let app = axum::Router::new()
        .route(
            "/page",
            axum::routing::get(move || std::future::ready(Html(page.clone()))),
        )
        .route(
            "/blank",
            axum::routing::get(|| std::future::ready(Html("<!doctype html>"))),
        );
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    port
}

/// Reads chatd's log until `n` request lines answered 403 on the attacked routes.
fn await_refusals(chatd: &Chatd, n: usize) {
    let mut seen = 0;
    while seen < n {
        let line = chatd
            .lines
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("{seen} of {n} requests were refused"));
        let attacked = ["/v1/chats ", "/v1/chat-completions ", "/mcp "]
            .iter()
            .any(|route| line.contains(&format!("route={route}")));
        if !attacked {
            continue;
        }
        assert!(
            line.contains("status=403"),
            "a request was not refused as another origin's: {line}"
        );
        seen += 1;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_on_another_origin_cannot_drive_chatd() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let upstreams = Upstreams::start([(COMPLETIONS, text_reply(&["Spent."]))]).await;
    let chatd = Chatd::start(upstreams.env());
    let port = serve_page(page_port().await, ATTACK, &chatd.base, "");
    for origin in [
        format!("http://localhost:{port}"),
        format!("http://127.0.0.1:{port}"),
    ] {
        browser.open(&format!("{origin}/page")).await;
        browser
            .until("the attempts to end", "return document.title === 'done'")
            .await;
        // Nine attempts, each one reached chatd and was refused.
        await_refusals(&chatd, 9);
    }
    assert_eq!(chatd.get("/v1/chats").await["chats"], json!([]));
    let completions = upstreams
        .main
        .requests()
        .iter()
        .filter(|r| r.path.contains("completions"))
        .count();
    assert_eq!(completions, 0, "the upstream was never called");

    // The control: the same kind of page, its origin allowed, chatd in token mode.
    let listener = page_port().await;
    let app = format!("http://localhost:{}", listener.local_addr().unwrap().port());
    let mut env = upstreams.env();
    env.push(("ADMIN_TOKEN", "page-token".into()));
    env.push(("CHATD_ALLOWED_ORIGINS", app.clone()));
    let allowed = Chatd::start(env);
    serve_page(listener, ALLOWED, &allowed.base, "page-token");
    browser.open(&format!("{app}/page")).await;
    browser
        .until(
            "the chat made through CORS",
            "return document.title === '200 through CORS'",
        )
        .await;
    let chats = allowed
        .api(reqwest::Method::GET, "/v1/chats", None, Some("page-token"))
        .await;
    assert_eq!(chats["chats"][0]["title"], "through CORS");
}

/// nginx with `deploy/nginx.conf`, its upstreams replaced by `chatd` and listening on a port of
/// its own on 127.0.0.1; stopped when dropped.
struct Nginx {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Nginx {
    /// None when nginx is not installed (the test skips; CHATD_REQUIRE_NGINX fails it).
    fn start(chatd: &str) -> Option<Self> {
        let binary = PathBuf::from(
            std::env::var_os("CHATD_NGINX").unwrap_or_else(|| "/usr/sbin/nginx".into()),
        );
        if !binary.exists() {
            let reason = format!(
                "{} not found (Debian package nginx-light)",
                binary.display()
            );
            assert!(
                std::env::var_os("CHATD_REQUIRE_NGINX").is_none(),
                "CHATD_REQUIRE_NGINX is set but {reason}"
            );
            eprintln!("skipped: {reason}");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let shipped = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/nginx.conf"),
        )
        .unwrap();
        let upstreams = "    server chatd-a:8787;\n    server chatd-b:8787;\n";
        assert!(shipped.contains(upstreams) && shipped.contains("listen 8787;"));
        let site = shipped
            .replace(
                upstreams,
                &format!("    server {};\n", chatd.trim_start_matches("http://")),
            )
            .replace("listen 8787;", &format!("listen 127.0.0.1:{port};"));
        let d = dir.path().display();
        std::fs::write(dir.path().join("site.conf"), site).unwrap();
        std::fs::write(
            dir.path().join("nginx.conf"),
            format!(
                "daemon off;\nmaster_process off;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
                 events {{}}\nhttp {{\n  access_log off;\n  client_body_temp_path {d}/body;\n\
                 proxy_temp_path {d}/proxy;\n  fastcgi_temp_path {d}/fastcgi;\n\
                 uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n  include {d}/site.conf;\n}}\n"
            ),
        )
        .unwrap();
        let child = Command::new(binary)
            .arg("-p")
            .arg(dir.path())
            .arg("-c")
            .arg(dir.path().join("nginx.conf"))
            .arg("-e")
            .arg(dir.path().join("error.log"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn nginx");
        let nginx = Self {
            child,
            port,
            _dir: dir,
        };
        // Listening once a connection is taken (nginx says nothing else it could be waited on by).
        let started = std::time::Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "nginx did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(nginx)
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The bundled client through `deploy/nginx.conf`, at `localhost:PORT`: nginx passes the Host
/// as the browser sent it, so the page's Origin is its own and its requests are served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bundled_client_chats_stops_reattaches_and_searches_behind_nginx() {
    let gate = Gate::new();
    let routes = [
        (
            COMPLETIONS,
            text_reply(&["One", " two", " three", " four", " five."]).hold_before(3, &gate),
        ),
        ("POST /search", Reply::json(200, exa_results(2))),
        (
            "POST /answer",
            Reply::json(200, exa_answer("Tokio is a runtime [1].")),
        ),
    ];
    let upstreams = Upstreams::start(routes).await;
    let chatd = Chatd::start(upstreams.env());
    let Some(nginx) = Nginx::start(&chatd.base) else {
        return;
    };
    let Some(browser) = Browser::start().await else {
        return;
    };
    browser
        .open(&format!("http://localhost:{}/", nginx.port))
        .await;
    browser.ready().await;
    browser.type_and_enter("#message", "Count to five").await;
    browser
        .until("the first deltas", &live_text_is("One two"))
        .await;
    let hash = browser.hash().await;
    // A reload attaches to the run through the proxy.
    browser.client.refresh().await.expect("reload");
    browser.ready().await;
    browser
        .until("the reattached run", &live_text_is("One two"))
        .await;
    browser
        .until(
            "the Stop button",
            "return !document.getElementById('stop').hidden",
        )
        .await;
    browser.click("#stop").await;
    browser.until("the reply to be done", DONE).await;
    gate.open();
    assert_eq!(
        transcript(&chatd, &hash).await,
        pairs(&[("user", "Count to five"), ("assistant", "One two")])
    );
    new_search(&browser).await;
    browser.type_and_enter("#query", "What is Tokio").await;
    browser
        .until(
            "the results and the answer",
            "return document.querySelectorAll('#results .result').length === 2 && \
             !!document.getElementById('answer-text')",
        )
        .await;
    assert!(
        browser
            .text("#answer-text")
            .await
            .starts_with("Tokio is a runtime")
    );
    let searches = chatd.get("/v1/searches").await;
    assert_eq!(searches["searches"][0]["query"], "What is Tokio");
}
