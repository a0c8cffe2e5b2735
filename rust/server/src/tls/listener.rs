//! HTTPS admin: an axum [`Listener`](axum::serve::Listener) over the one accept loop
//! ([`crate::listen`]) whose streams come out handshaken, and the client certificate's CN that
//! each request of such a stream carries ([`ClientCn`]).

use std::net::SocketAddr;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

/// An axum [`Listener`](axum::serve::Listener) yielding TLS streams whose handshake is done.
pub struct TlsListener {
    /// Handshaken streams from the accept task; owned by axum's serve loop.
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    /// The TCP listener's address; immutable.
    local: SocketAddr,
    /// The accept task; aborted when the listener is dropped.
    task: tokio::task::JoinHandle<()>,
}

impl TlsListener {
    /// Starts accepting and handshaking on `listener` until `shutdown`.
    ///
    /// # Errors
    /// The listener's address cannot be read.
    pub fn new(
        listener: TcpListener,
        acceptor: TlsAcceptor,
        shutdown: watch::Receiver<bool>,
    ) -> std::io::Result<Self> {
        let local = listener.local_addr()?;
        let (tx, ready) = mpsc::channel(64);
        let task = tokio::spawn(crate::listen::accept_loop(
            "admin-tls",
            listener,
            shutdown,
            move |socket, peer, mut stop| {
                let acceptor = acceptor.clone();
                let tx = tx.clone();
                async move {
                    let peer_name = peer.to_string();
                    let handshaken =
                        super::handshake(&acceptor, socket, &peer_name, "admin-tls", &mut stop);
                    if let Some(stream) = handshaken.await {
                        let _ = tx.send((stream, peer)).await;
                    }
                }
            },
        ));
        Ok(TlsListener { ready, local, task })
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(x) => x,
            // The accept task ended (on shutdown or abort): nothing more will come.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}

/// The client certificate's CN of an HTTPS admin connection (axum connect info; `None` when the
/// client sent no certificate).
#[derive(Clone, Debug)]
pub struct ClientCn(pub Option<String>);

impl axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, TlsListener>>
    for ClientCn
{
    fn connect_info(stream: axum::serve::IncomingStream<'_, TlsListener>) -> Self {
        ClientCn(super::peer_common_name(stream.io().get_ref().1))
    }
}
