//! Requests from other origins (`http/origin.rs`): what a web page can send without a CORS
//! preflight (a typeless or `text/plain` body, a form) is refused when its `Origin` is another
//! site's, in open and token mode alike, on every route that changes state and on `/mcp`; a body
//! must be declared JSON; CHATD_ALLOWED_ORIGINS opens exactly its origins, with CORS. The
//! browser's own view of the same is `tests/web/cross_site.rs`.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::support::{Options, TestServer};

/// Sends `method path` with `headers` and `body` (no Content-Type unless a header sets it),
/// with the server's token when `token` is given: the status, the headers and the body as JSON
/// (`Null` when it is not JSON). Also `openai.rs`'s.
pub(crate) async fn send(
    server: &TestServer,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
    token: Option<&str>,
) -> (StatusCode, reqwest::header::HeaderMap, Value) {
    let mut request = server
        .client
        .request(method, format!("{}{path}", server.base));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    if let Some(body) = body {
        request = request.body(body.to_string());
    }
    let response = request.send().await.expect("request sent");
    let status = response.status();
    let headers = response.headers().clone();
    let text = response.text().await.unwrap();
    (
        status,
        headers,
        serde_json::from_str(&text).unwrap_or(Value::Null),
    )
}

const CHAT: &str = r#"{"title":"from a web page"}"#;
const COMPLETION: &str =
    r#"{"provider":"provider_c","model":"m","messages":[{"role":"user","content":"hi"}]}"#;
/// A form with a file, as a page's `<form enctype="multipart/form-data">` posts it.
const UPLOAD: &str = "--chatdx\r\nContent-Disposition: form-data; name=\"file\"; \
    filename=\"a.txt\"\r\nContent-Type: text/plain\r\n\r\nfrom a web page\r\n--chatdx--\r\n";
const MCP_CALL: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fetch_url","arguments":{"url":"https://example.com/"}}}"#;

/// What a page on another origin can send with no preflight, to each route that acts.
async fn assert_refuses_other_origins(server: &TestServer, token: Option<&str>) {
    let before = server.row_counts().await;
    let port = server.base.rsplit(':').next().unwrap().to_string();
    let origins = [
        "https://evil.example".to_string(),
        // Same site (the same host, another port) is still another origin.
        format!("http://127.0.0.1:{}", port.parse::<u16>().unwrap() ^ 1),
        format!("http://localhost:{port}"),
        "null".to_string(),
    ];
    let mcp_accept = ("accept", "application/json, text/event-stream");
    for origin in &origins {
        for (path, body) in [
            ("/v1/chats", CHAT),
            ("/api/v1/chats", CHAT),
            ("/v1/chat-completions", COMPLETION),
            ("/v1/chat-completions/stream", COMPLETION),
            ("/mcp", MCP_CALL),
            ("/api/mcp", MCP_CALL),
            ("/v1/files", UPLOAD),
        ] {
            // A typeless Blob, a text/plain body, a form's bodies.
            for content_type in [
                None,
                Some("text/plain"),
                Some("application/x-www-form-urlencoded"),
                Some("multipart/form-data; boundary=chatdx"),
            ] {
                let mut headers = vec![("origin", origin.as_str()), mcp_accept];
                if let Some(content_type) = content_type {
                    headers.push(("content-type", content_type));
                }
                let (status, _, body) =
                    send(server, Method::POST, path, &headers, Some(body), token).await;
                assert_eq!(
                    status,
                    StatusCode::FORBIDDEN,
                    "{origin} {path} {content_type:?}: {body}"
                );
                let message = body["message"].as_str().unwrap_or_default();
                assert!(
                    message.starts_with("Origin: ") && message.contains("CHATD_ALLOWED_ORIGINS"),
                    "{message}"
                );
            }
        }
        // /mcp is checked on every method (the MCP transport requires it).
        let (status, _, _) = send(
            server,
            Method::GET,
            "/mcp",
            &[("origin", origin)],
            None,
            token,
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "GET /mcp from {origin}");
    }
    // Fetch Metadata says what an Origin would have said.
    let (status, _, _) = send(
        server,
        Method::POST,
        "/v1/chats",
        &[
            ("sec-fetch-site", "cross-site"),
            ("content-type", "application/json"),
        ],
        Some(CHAT),
        token,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(server.row_counts().await, before, "nothing was stored");
}

#[tokio::test]
async fn a_page_on_another_origin_changes_nothing_in_open_mode() {
    let server = TestServer::start().await;
    assert_refuses_other_origins(&server, None).await;
    // The server's own origin (the bundled client), and clients that send no Origin.
    let own = server.base.clone();
    let json = ("content-type", "application/json");
    for headers in [vec![("origin", own.as_str()), json], vec![json]] {
        let (status, _, body) = send(
            &server,
            Method::POST,
            "/v1/chats",
            &headers,
            Some(CHAT),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{headers:?}: {body}");
    }
    // Reading is not acting: a GET from another origin is served (the page cannot read it
    // without CORS).
    let (status, headers, _) = send(
        &server,
        Method::GET,
        "/v1/chats",
        &[("origin", "https://evil.example")],
        None,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(headers.get("access-control-allow-origin").is_none());
}

#[tokio::test]
async fn a_page_on_another_origin_changes_nothing_in_token_mode_even_with_the_token() {
    let server = TestServer::start_with(Options {
        token: Some("t0ken".into()),
        ..Options::default()
    })
    .await;
    assert_refuses_other_origins(&server, Some("t0ken")).await;
}

#[tokio::test]
async fn a_body_must_be_declared_json_and_a_bodiless_post_needs_no_type() {
    let server = TestServer::start().await;
    let before = server.row_counts().await;
    for content_type in [
        None,
        Some("text/plain"),
        Some("multipart/form-data; boundary=x"),
    ] {
        let headers: Vec<(&str, &str)> = content_type
            .map(|c| ("content-type", c))
            .into_iter()
            .collect();
        let (status, _, body) = send(
            &server,
            Method::POST,
            "/v1/chats",
            &headers,
            Some(CHAT),
            None,
        )
        .await;
        assert_eq!(
            status,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "{content_type:?}: {body}"
        );
        let message = body["message"].as_str().unwrap();
        assert!(
            message.starts_with("Content-Type: a request body must be application/json (got "),
            "{message}"
        );
    }
    assert_eq!(server.row_counts().await, before);
    // An empty body is no body: `{}`, every field optional.
    let (status, _, _) = send(&server, Method::POST, "/v1/chats", &[], Some(""), None).await;
    assert_eq!(status, StatusCode::OK);
    // The contract's "Body: none" routes take none and need no type.
    let chat = server.new_chat(json!({})).await;
    let (status, _, body) = send(
        &server,
        Method::POST,
        &format!("/v1/chats/{chat}/stream/cancel"),
        &[],
        None,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(body["message"], "active chat stream not found");
    let (status, _, body) = send(
        &server,
        Method::POST,
        &format!("/v1/chats/{chat}/stream/attach"),
        &[],
        None,
        None,
    )
    .await;
    assert_ne!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{body}");
}

#[tokio::test]
async fn allowed_origins_get_cors_and_may_act_with_the_token() {
    let app = "https://app.example";
    let server = TestServer::start_with(Options {
        token: Some("t0ken".into()),
        args: vec![
            "--chatd-allowed-origins".into(),
            format!("{app}, http://localhost:5173"),
        ],
        ..Options::default()
    })
    .await;
    // The preflight is answered before the token check, for the listed origin only.
    let preflight = |origin: &'static str| {
        let server = &server;
        async move {
            send(
                server,
                Method::OPTIONS,
                "/api/v1/chats",
                &[
                    ("origin", origin),
                    ("access-control-request-method", "POST"),
                    (
                        "access-control-request-headers",
                        "authorization, content-type, last-event-id",
                    ),
                ],
                None,
                None,
            )
            .await
        }
    };
    let (status, headers, _) = preflight(app).await;
    assert!(status.is_success(), "{status}");
    assert_eq!(headers["access-control-allow-origin"], app);
    let allowed = headers["access-control-allow-headers"]
        .to_str()
        .unwrap()
        .to_ascii_lowercase();
    for header in ["authorization", "content-type", "last-event-id"] {
        assert!(allowed.contains(header), "{allowed}");
    }
    assert!(
        headers["access-control-allow-methods"]
            .to_str()
            .unwrap()
            .contains("POST")
    );
    let vary: Vec<&str> = headers
        .get_all("vary")
        .iter()
        .map(|v| v.to_str().unwrap())
        .collect();
    assert!(
        vary.iter()
            .any(|v| v.to_ascii_lowercase().contains("origin")),
        "{vary:?}"
    );
    assert!(headers.get("access-control-allow-credentials").is_none());
    let (_, headers, _) = preflight("https://evil.example").await;
    assert!(headers.get("access-control-allow-origin").is_none());

    // The request itself: the origin echoed, the token still needed.
    let json = ("content-type", "application/json");
    let (status, headers, body) = send(
        &server,
        Method::POST,
        "/api/v1/chats",
        &[("origin", app), json],
        Some(CHAT),
        Some("t0ken"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(headers["access-control-allow-origin"], app);
    assert_eq!(body["chat"]["title"], "from a web page");
    let (status, headers, _) = send(
        &server,
        Method::POST,
        "/v1/chats",
        &[("origin", "http://localhost:5173"), json],
        Some(CHAT),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "the page can read why");
    assert_eq!(
        headers["access-control-allow-origin"],
        "http://localhost:5173"
    );
    // Another origin is still refused, and gets no CORS answer.
    let (status, headers, _) = send(
        &server,
        Method::POST,
        "/v1/chats",
        &[("origin", "https://evil.example"), json],
        Some(CHAT),
        Some("t0ken"),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(headers.get("access-control-allow-origin").is_none());
}

#[tokio::test]
async fn without_allowed_origins_there_is_no_cors() {
    let server = TestServer::start().await;
    let (_, headers, _) = send(
        &server,
        Method::OPTIONS,
        "/v1/chats",
        &[
            ("origin", "https://app.example"),
            ("access-control-request-method", "POST"),
        ],
        None,
        None,
    )
    .await;
    assert!(
        headers.get("access-control-allow-origin").is_none(),
        "{headers:?}"
    );
}
