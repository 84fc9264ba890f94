//! The accept loop: every connection served with hyper's HTTP/1 connection, TCP_NODELAY set;
//! when told to stop, no new connections, and the open ones finish what they are sending, for as
//! long as the caller allows: then the rest are closed.
//!
//! Not `axum::serve`, for memory. A live stream is a connection that lasts as long as its run,
//! so what a connection holds is memory per live stream (BENCHMARKS.md, "Serving HTTP/1.1 by
//! hand"). `axum::serve` serves through hyper-util's version-sniffing builder, whose connection
//! task carries an HTTP/2 state machine beside the HTTP/1 one; and hyper, unless half-closed
//! connections are allowed, keeps reading the socket while a response streams, which takes a
//! second read buffer while the request still holds the first. Only HTTP/1.x is served (no h2c):
//! browsers speak HTTP/2 only over TLS, which a proxy in front of chatd ends.

use std::future::Future;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;

/// How long a connection may take to send a request's head (hyper's default, stated here).
/// Without it, a client that opens connections and sends nothing holds them, and their
/// buffers, for ever.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Serves `app` on `listener` until `shutdown` resolves, then waits for the open connections:
/// each finishes the response it is sending (a stream, until its run ends) and closes. Those
/// still open `close_after` the signal are closed: a client that stopped reading, or stopped
/// sending a request's body, would otherwise hold the server up for ever.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send,
    close_after: Duration,
) {
    let mut builder = hyper::server::conn::http1::Builder::new();
    // A client that half-closes is not gone: the response still goes out. And without it hyper
    // reads the socket while a response streams (see the module docs). A client that really
    // left is seen when a write fails: the first write after it left is usually still accepted
    // (the peer answers it with a reset), so the second event or keep-alive comment, within
    // about 30 s on an idle stream.
    builder
        .half_close(true)
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
    let graceful = GracefulShutdown::new();
    // A watch, not a list of tasks to abort: a connection task holds a receiver, and the
    // number of receivers is the number of connections still open.
    let (close, closing) = tokio::sync::watch::channel(false);
    tokio::pin!(shutdown);
    loop {
        let tcp = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => tcp,
                Err(e) => {
                    tokio::select! {
                        () = wait_after_accept_error(e) => continue,
                        () = &mut shutdown => break,
                    }
                }
            },
            () = &mut shutdown => break,
        };
        // Small JSON responses and SSE frames: send them now rather than wait for Nagle.
        let _ = tcp.set_nodelay(true);
        // A handle on the one router: cloning it is an `Arc` clone, and it takes hyper's
        // request body as it is. (Not the `Router`'s own per-connection service, which
        // `axum::serve(listener, router)` uses: it copies every route with its layers for each
        // connection, measured at ~500 KiB per open connection.)
        let service = TowerToHyperService::new(app.clone());
        let connection = builder.serve_connection(TokioIo::new(tcp), service);
        let connection = graceful.watch(connection);
        let mut closing = closing.clone();
        tokio::spawn(async move {
            tokio::select! {
                // The connection first: a response that just finished ends the task as it
                // should, and no random draw on each of a stream's many polls.
                biased;
                // A connection's errors (a client gone mid-request, a bad request line) are
                // the client's; hyper has answered what it could.
                _ = connection => {}
                // Dropping the connection closes its socket.
                _ = closing.wait_for(|close| *close) => {}
            }
        });
    }
    drop(listener);
    drop(closing);
    if tokio::time::timeout(close_after, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            connections = close.receiver_count(),
            "closing the connections still open {} s after the signal to stop",
            close_after.as_secs()
        );
        let _ = close.send(true);
        // Each task drops its connection when it next runs; wait for that, so the caller
        // (closing the store next) knows no request is left.
        close.closed().await;
    }
}

/// A failed accept: the peer's own failure costs nothing; anything else (out of file
/// descriptors, above all) is waited out for a moment rather than retried in a hot loop.
async fn wait_after_accept_error(e: std::io::Error) {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        e.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    ) {
        return;
    }
    tracing::error!(error = %e, "accepting a connection failed; retrying in a second");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;
    use std::io::{Error, ErrorKind};

    #[tokio::test]
    async fn a_peers_failure_is_passed_over_and_anything_else_waited_out() {
        use ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
        for kind in [ConnectionAborted, ConnectionRefused, ConnectionReset] {
            let waited = wait_after_accept_error(Error::from(kind)).now_or_never();
            assert!(
                waited.is_some(),
                "{kind:?} is the peer's: accept again at once"
            );
        }
        // EMFILE: out of file descriptors. Accepting again at once would spin.
        let out_of_fds = Error::from_raw_os_error(24);
        assert!(wait_after_accept_error(out_of_fds).now_or_never().is_none());
    }
}
