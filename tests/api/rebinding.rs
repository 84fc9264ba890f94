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
    let addr = server.base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let host = host.map(|h| format!("Host: {h}\r\n")).unwrap_or_default();
    let request = format!("GET {path} HTTP/1.1\r\n{host}Connection: close\r\n\r\n");
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
    assert!(server.store.list_chats().await.unwrap().is_empty());
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
