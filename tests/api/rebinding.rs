//! DNS rebinding: a web page that points its own name at 127.0.0.1 sends that name as the Host
//! header. Open mode (no ADMIN_TOKEN) answers only loopback names and CHATD_ALLOWED_HOSTS, on
//! every route; token mode answers any Host (the page has no token). Raw HTTP/1.1 over TCP, so
//! the Host header is exactly the one written.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::{Options, TestServer};

/// The status and body of `GET path` sent to `server` with `host` as its Host header (none when
/// `None`).
async fn get_with_host(server: &TestServer, path: &str, host: Option<&str>) -> (u16, String) {
    let host = host.map(|h| format!("Host: {h}\r\n")).unwrap_or_default();
    raw(server, &format!("GET {path} HTTP/1.1\r\n{host}")).await
}

/// The status and body of `head` (a request line and header lines, each ending in CRLF), sent
/// as it is with `Connection: close`.
async fn raw(server: &TestServer, head: &str) -> (u16, String) {
    let addr = server.base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let request = format!("{head}Connection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

#[tokio::test]
async fn open_mode_refuses_a_foreign_host_on_every_route() {
    let server = TestServer::start_with(Options {
        args: vec![
            "--chatd-allowed-hosts".into(),
            "chat.lan, 192.168.1.5".into(),
        ],
        ..Options::default()
    })
    .await;
    let port = server.base.rsplit(':').next().unwrap().to_string();
    for path in [
        "/v1/chats",
        "/api/v1/chats",
        "/health",
        "/",
        "/openapi.json",
        "/nope",
    ] {
        let (status, body) = get_with_host(&server, path, Some("rebind.attacker.example")).await;
        assert_eq!(status, 403, "{path}: {body}");
        assert!(
            body.contains("rebind.attacker.example") && body.contains("CHATD_ALLOWED_HOSTS"),
            "{path}: {body}"
        );
    }
    // No Host at all is no browser's (HTTP/1.0 here): served.
    let addr = server.base.trim_start_matches("http://").to_string();
    let mut stream = TcpStream::connect(&addr).await.unwrap();
    stream
        .write_all(b"GET /v1/chats HTTP/1.0\r\n\r\n")
        .await
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    assert!(response.starts_with("HTTP/1.0 200"), "{response}");
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
        format!("chat.lan:{port}"),
        "192.168.1.5".to_string(),
    ] {
        let (status, body) = get_with_host(&server, "/v1/chats", Some(&host)).await;
        assert_eq!(status, 200, "{host}: {body}");
    }
    // Nothing was served to the foreign Host: no chat was listed, none created.
    assert!(
        server
            .store
            .list_chats(chatd::store::people::BUILTIN_ADMIN)
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn token_mode_serves_any_host_but_only_with_the_token() {
    let server = TestServer::start_with(Options {
        token: Some("t0ken".into()),
        ..Options::default()
    })
    .await;
    let (status, _) = get_with_host(&server, "/v1/chats", Some("chat.example.com")).await;
    assert_eq!(status, 401, "the page has no token");
    let res = server
        .client
        .get(format!("{}/v1/chats", server.base))
        .header("host", "chat.example.com")
        .bearer_auth("t0ken")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
}

#[tokio::test]
async fn open_mode_refuses_a_foreign_host_on_mcp() {
    let server = TestServer::start().await;
    for path in ["/mcp", "/api/mcp"] {
        let (status, body) = get_with_host(&server, path, Some("rebind.attacker.example")).await;
        assert_eq!(status, 403, "{path}: {body}");
        assert!(body.contains("CHATD_ALLOWED_HOSTS"), "{body}");
    }
    server.stop().await;
}

/// An ambiguous Host is refused whatever the mode: a check reading one Host while something
/// else reads another is how such checks are bypassed (RFC 9112 §3.2).
#[tokio::test]
async fn an_ambiguous_or_malformed_host_is_400_in_both_modes() {
    for token in [None, Some("t0ken".to_string())] {
        let server = TestServer::start_with(Options {
            token: token.clone(),
            ..Options::default()
        })
        .await;
        let port = server.base.rsplit(':').next().unwrap().to_string();
        let here = format!("127.0.0.1:{port}");
        let cases = [
            (
                format!("GET /health HTTP/1.1\r\nHost: {here}\r\nHost: evil.example\r\n"),
                "Host: sent more than once",
            ),
            (
                "GET /health HTTP/1.1\r\n".to_string(),
                "Host: missing; an HTTP/1.1 request must send one",
            ),
            (
                format!("GET http://evil.example/health HTTP/1.1\r\nHost: {here}\r\n"),
                "the request target names \\\"evil.example\\\" but Host says",
            ),
            (
                format!("GET /health HTTP/1.1\r\nHost: [::1]evil.example:{port}\r\n"),
                "only a port may follow the brackets",
            ),
            (
                "GET /health HTTP/1.1\r\nHost: [::1\r\n".to_string(),
                "an IPv6 address in brackets must close them",
            ),
            (
                "GET /health HTTP/1.1\r\nHost: 127.0.0.1@evil.example\r\n".to_string(),
                "a host name holds only",
            ),
        ];
        for (head, expected) in cases {
            let (status, body) = raw(&server, &head).await;
            assert_eq!(status, 400, "{token:?} {head:?}: {body}");
            assert!(body.contains(expected), "{head:?}: {body}");
        }
        // The same authority in the target and the Host, the default port written or not.
        let (status, body) = raw(
            &server,
            &format!("GET http://{here}/health HTTP/1.1\r\nHost: {here}\r\n"),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        server.stop().await;
    }
}
