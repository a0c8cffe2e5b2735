//! The one accept loop of the server, for the binary protocol (plain and `pulsar+ssl://`) and
//! for HTTPS admin: it takes connections until shutdown and hands each to its own task, which
//! adds TLS when its listener has it ([`crate::tls::handshake`]). The plain admin port is
//! served by axum's own loop.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

/// How long to wait after a failed `accept` (out of file descriptors, say) before the next.
const ACCEPT_RETRY: Duration = Duration::from_millis(50);

/// Accepts on `listener` (named `name` in the logs) until `shutdown`, running
/// `serve(socket, peer, shutdown)` for each connection in a task of its own; then waits for
/// those tasks to end (they watch the same `shutdown`).
pub async fn accept_loop<F, Fut>(
    name: &'static str,
    listener: TcpListener,
    mut shutdown: watch::Receiver<bool>,
    mut serve: F,
) where
    F: FnMut(TcpStream, SocketAddr, watch::Receiver<bool>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            r = listener.accept() => match r {
                Ok((socket, peer)) => {
                    conns.spawn(serve(socket, peer, shutdown.clone()));
                }
                Err(e) => {
                    tracing::warn!(listener = name, error = %e, "accept failed");
                    tokio::time::sleep(ACCEPT_RETRY).await;
                }
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            _ = shutdown.changed() => break,
        }
    }
    while conns.join_next().await.is_some() {}
}
