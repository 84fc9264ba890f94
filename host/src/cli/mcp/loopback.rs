//! A login approved from the command line: the redirect comes back to a listener on loopback
//! (RFC 8252 §7.3). The authorization URL is first requested by chatd itself: a server that
//! approves at once (a test server, a login already given) answers with the redirect, whose code
//! is taken without a browser; any other answer means a person must log in, so the URL is printed
//! and chatd waits for the browser's redirect.

use std::time::Duration;

use futures::FutureExt as _;
use futures::future::BoxFuture;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;
use url::Url;

use crate::tools::mcp::oauth::http::OAuthHttp;
use crate::tools::mcp::oauth::{Callback, Consent};

/// The longest chatd waits for a person to log in.
const WAIT: Duration = Duration::from_secs(300);
/// The most of the browser's request read.
const MAX_REQUEST: usize = 16 * 1024;

pub struct Loopback {
    listener: TcpListener,
    redirect_uri: String,
}

impl Loopback {
    /// Listens on a free loopback port.
    pub async fn bind() -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        Ok(Self {
            listener,
            redirect_uri: format!("http://127.0.0.1:{port}/callback"),
        })
    }

    /// Whether `location` is this listener's redirect URI (with any query).
    fn is_ours(&self, location: &Url) -> bool {
        let mut bare = location.clone();
        bare.set_query(None);
        bare.set_fragment(None);
        bare.as_str() == self.redirect_uri
    }

    async fn wait(&self, url: &Url) -> Result<Callback, String> {
        let expected = url
            .query_pairs()
            .find(|(k, _)| k == "state")
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default();
        let expected = expected.as_str();
        eprintln!("chatd: open this URL in a browser to log in:\n{url}");
        let wait = async {
            loop {
                let (mut stream, _) = self.listener.accept().await.map_err(|e| e.to_string())?;
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < MAX_REQUEST {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let text = String::from_utf8_lossy(&request);
                let target = text.split_whitespace().nth(1).unwrap_or("/");
                let Ok(at) = Url::parse(&self.redirect_uri).and_then(|u| u.join(target)) else {
                    continue;
                };
                // Only the redirect of this login ends the wait: anything else reaching the
                // port (another page, a stale tab) is turned away.
                let callback = Callback::from_url(&at);
                if !self.is_ours(&at) || callback.state.as_deref() != Some(expected) {
                    let _ = stream
                        .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                        .await;
                    continue;
                }
                let page = "chatd: the login is done; this tab may be closed.";
                let answer = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/plain; charset=utf-8\r\n\
                     content-length: {}\r\nconnection: close\r\n\r\n{page}",
                    page.len()
                );
                let _ = stream.write_all(answer.as_bytes()).await;
                return Ok(callback);
            }
        };
        tokio::time::timeout(WAIT, wait)
            .await
            .map_err(|_| format!("no login within {} s", WAIT.as_secs()))?
    }
}

impl Consent for Loopback {
    fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    fn approve<'a>(
        &'a self,
        http: &'a OAuthHttp,
        url: Url,
    ) -> BoxFuture<'a, Result<Callback, String>> {
        async move {
            // A server that approves at once redirects straight to the listener.
            if let Ok(answer) = http.get(&url, "text/html").await
                && (300..400).contains(&answer.status)
                && let Some(location) = answer.header("location")
                && let Ok(location) = url.join(location)
                && self.is_ours(&location)
            {
                return Ok(Callback::from_url(&location));
            }
            self.wait(&url).await
        }
        .boxed()
    }
}
