//! A TCP proxy between a chatd instance and PostgreSQL that the test can cut: while cut, bytes
//! are held in both directions and new connections are accepted but carry nothing, as a network
//! partition looks to both ends (no reset, no answer); healed, what was held flows on.

use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

pub struct Proxy {
    pub port: u16,
    cut: Arc<watch::Sender<bool>>,
    accept: tokio::task::JoinHandle<()>,
}

impl Proxy {
    /// Forwards a loopback port to 127.0.0.1:`target`.
    pub async fn start(target: u16) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let cut = Arc::new(watch::Sender::new(false));
        let accept = {
            let cut = cut.clone();
            tokio::spawn(async move {
                while let Ok((client, _)) = listener.accept().await {
                    let Ok(server) = TcpStream::connect(("127.0.0.1", target)).await else {
                        continue;
                    };
                    let (client_read, client_write) = client.into_split();
                    let (server_read, server_write) = server.into_split();
                    tokio::spawn(pipe(client_read, server_write, cut.subscribe()));
                    tokio::spawn(pipe(server_read, client_write, cut.subscribe()));
                }
            })
        };
        Self { port, cut, accept }
    }

    /// Cuts (`true`) or heals (`false`) every connection, present and future.
    pub fn set_cut(&self, cut: bool) {
        self.cut.send_replace(cut);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// Copies `from` to `to`, holding each chunk while the link is cut.
async fn pipe(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut cut: watch::Receiver<bool>,
) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        // Nothing is read while cut either: the sender's data waits in the kernel, unanswered.
        if cut.wait_for(|cut| !*cut).await.is_err() {
            return;
        }
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if cut.wait_for(|cut| !*cut).await.is_err() || to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}
