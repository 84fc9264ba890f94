//! The scripted upstream a test points a plugin (or chatd) at: routes answered in order with
//! recorded bodies, errors, paced, held or cut streams; what it received, to assert on.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use tokio::sync::watch;

/// One request the upstream received.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Recorded {
    /// A header's value, if present and text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The body as JSON (panics when it is not: this is for tests).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("the request body is JSON")
    }

    /// The query string's pairs, decoded.
    pub fn query_pairs(&self) -> BTreeMap<String, String> {
        url::form_urlencoded::parse(self.query.as_deref().unwrap_or("").as_bytes())
            .into_owned()
            .collect()
    }
}

/// A gate a reply waits behind until the test opens it (a call held in flight).
#[derive(Clone, Debug)]
pub struct Gate(watch::Sender<bool>);

impl Gate {
    pub fn new() -> Self {
        Self(watch::Sender::new(false))
    }

    pub fn open(&self) {
        self.0.send_replace(true);
    }

    async fn passed(&self) {
        let _ = self.0.subscribe().wait_for(|open| *open).await;
    }
}

impl Default for Gate {
    fn default() -> Self {
        Self::new()
    }
}

/// What the upstream answers to one route.
#[derive(Clone, Debug)]
pub struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    /// The body, in pieces sent with `pause` between them (one piece: sent at once).
    chunks: Vec<Vec<u8>>,
    pause: Duration,
    /// Cut the connection after the chunks instead of ending the body cleanly.
    cut: bool,
    gate: Option<Gate>,
    /// Hold the body before this piece until the gate opens (a stream caught mid-way).
    hold: Option<(usize, Gate)>,
}

impl Reply {
    pub fn bytes(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), content_type.into())],
            chunks: vec![body.into()],
            pause: Duration::ZERO,
            cut: false,
            gate: None,
            hold: None,
        }
    }

    pub fn json(status: u16, value: serde_json::Value) -> Self {
        Self::bytes(status, "application/json", value.to_string())
    }

    pub fn text(status: u16, content_type: &str, body: &str) -> Self {
        Self::bytes(status, content_type, body.as_bytes().to_vec())
    }

    /// A `text/event-stream` body sent as recorded.
    pub fn sse(body: &str) -> Self {
        Self::text(200, "text/event-stream", body)
    }

    /// A redirect to `location`.
    pub fn redirect(status: u16, location: &str) -> Self {
        Self::bytes(status, "text/plain", Vec::new()).header("location", location)
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sends the body in `pieces` with `pause` between them (a paced stream).
    pub fn paced(mut self, pieces: Vec<Vec<u8>>, pause: Duration) -> Self {
        self.chunks = pieces;
        self.pause = pause;
        self
    }

    /// Cuts the connection once the body's pieces are sent (a broken stream).
    pub fn cut(mut self) -> Self {
        self.cut = true;
        self
    }

    /// Sends the pieces before `piece` (of [`Reply::paced`]'s), then holds the rest until
    /// `gate` opens: a stream a test catches in the middle.
    pub fn hold_before(mut self, piece: usize, gate: &Gate) -> Self {
        self.hold = Some((piece, gate.clone()));
        self
    }

    /// Holds the reply until `gate` opens.
    pub fn after(mut self, gate: &Gate) -> Self {
        self.gate = Some(gate.clone());
        self
    }
}

/// A loopback HTTP server that answers scripted routes and records every request.
pub struct ScriptedUpstream {
    url: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
    arrivals: watch::Sender<usize>,
    /// Bodies sent in pieces that were dropped before their end: the client closed the
    /// connection mid-way.
    dropped: watch::Sender<usize>,
    task: tokio::task::JoinHandle<()>,
}

impl ScriptedUpstream {
    /// Routes are `("METHOD /path", reply)`; a request no route matches gets a JSON 404. A
    /// route listed several times answers its replies in order, the last one from then on (a
    /// tool loop: first a tool call, then the answer).
    pub async fn start<'a>(routes: impl IntoIterator<Item = (&'a str, Reply)>) -> Self {
        let mut scripted: BTreeMap<String, Vec<Reply>> = BTreeMap::new();
        for (route, reply) in routes {
            scripted.entry(route.to_string()).or_default().push(reply);
        }
        let routes: Arc<BTreeMap<String, (Vec<Reply>, AtomicUsize)>> = Arc::new(
            scripted
                .into_iter()
                .map(|(route, replies)| (route, (replies, AtomicUsize::new(0))))
                .collect(),
        );
        let requests: Arc<Mutex<Vec<Recorded>>> = Arc::default();
        let arrivals = watch::Sender::new(0usize);
        let dropped = watch::Sender::new(0usize);
        let (log, seen, gone) = (requests.clone(), arrivals.clone(), dropped.clone());
        let app = axum::Router::new().fallback(
            move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
                let (routes, log, seen, gone) =
                    (routes.clone(), log.clone(), seen.clone(), gone.clone());
                async move {
                    let route = format!("{method} {}", uri.path());
                    // The reply is chosen before the arrival is announced: a test that waits
                    // for request n and then sends request n + 1 knows which replies each gets.
                    let reply = routes.get(&route).map(|(replies, next)| {
                        let n = next.fetch_add(1, Ordering::Relaxed).min(replies.len() - 1);
                        replies[n].clone()
                    });
                    log.lock().unwrap().push(Recorded {
                        method: method.to_string(),
                        path: uri.path().to_string(),
                        query: uri.query().map(str::to_string),
                        headers,
                        body: body.to_vec(),
                    });
                    seen.send_modify(|n| *n += 1);
                    match reply {
                        Some(reply) => respond(reply, gone).await,
                        None => axum::response::Response::builder()
                            .status(StatusCode::NOT_FOUND)
                            .header("content-type", "application/json")
                            .body(Body::from(
                                serde_json::json!({ "error": format!("no scripted reply for {route}") })
                                    .to_string(),
                            ))
                            .expect("a valid response"),
                    }
                }
            },
        )
        // A provider's request may carry what a client may send (32 MiB of attachments),
        // more than axum's 2 MiB default.
        .layer(axum::extract::DefaultBodyLimit::max(64 * 1024 * 1024));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let url = format!("http://{}", listener.local_addr().expect("local address"));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            url,
            requests,
            arrivals,
            dropped,
            task,
        }
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// Every request so far, in order of arrival.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    /// Waits until `n` requests have arrived.
    pub async fn received(&self, n: usize) {
        let _ = self.arrivals.subscribe().wait_for(|seen| *seen >= n).await;
    }

    /// Waits until `n` bodies sent in pieces ([`Reply::paced`], [`Reply::hold_before`]) were
    /// dropped before their end: the client closed its connection mid-way.
    pub async fn dropped(&self, n: usize) {
        let _ = self.dropped.subscribe().wait_for(|gone| *gone >= n).await;
    }

    /// How many bodies were dropped before their end so far.
    pub fn dropped_now(&self) -> usize {
        *self.dropped.borrow()
    }
}

impl Drop for ScriptedUpstream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Counts a body dropped before its end.
struct EndWatch {
    dropped: watch::Sender<usize>,
    ended: bool,
}

impl EndWatch {
    /// The body reached its end.
    fn end(mut self) {
        self.ended = true;
    }
}

impl Drop for EndWatch {
    fn drop(&mut self) {
        if !self.ended {
            self.dropped.send_modify(|n| *n += 1);
        }
    }
}

async fn respond(reply: Reply, dropped: watch::Sender<usize>) -> axum::response::Response {
    if let Some(gate) = &reply.gate {
        gate.passed().await;
    }
    let mut builder = axum::response::Response::builder().status(reply.status);
    for (name, value) in &reply.headers {
        builder = builder.header(name, value);
    }
    let body = if reply.chunks.len() <= 1 && !reply.cut && reply.hold.is_none() {
        Body::from(reply.chunks.into_iter().next().unwrap_or_default())
    } else {
        let (pause, cut, hold) = (reply.pause, reply.cut, reply.hold);
        let pieces = reply.chunks;
        let watch = EndWatch {
            dropped,
            ended: false,
        };
        let stream =
            futures::stream::unfold((0usize, pieces, watch), move |(i, pieces, mut watch)| {
                let hold = hold.clone();
                async move {
                    if i > 0 && i <= pieces.len() && !pause.is_zero() {
                        tokio::time::sleep(pause).await;
                    }
                    if let Some((at, gate)) = &hold
                        && *at == i
                    {
                        gate.passed().await;
                    }
                    match pieces.get(i) {
                        Some(piece) => Some((
                            Ok::<_, std::io::Error>(Bytes::from(piece.clone())),
                            (i + 1, pieces, watch),
                        )),
                        None if cut => {
                            watch.ended = true;
                            Some((
                                Err(std::io::Error::other("scripted cut")),
                                (i + 1, Vec::new(), watch),
                            ))
                        }
                        None => {
                            watch.end();
                            None
                        }
                    }
                }
            });
        Body::from_stream(stream)
    };
    builder.body(body).expect("a valid scripted response")
}
