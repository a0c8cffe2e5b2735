//! The write half of a connection: drains the outbound queue and writes frames with vectored
//! writes, so a MESSAGE goes out as its small encoded header followed by the stored entry bytes,
//! which are never copied in user space. Generic over the socket: plain TCP or TLS.

use std::io::IoSlice;

use bytes::{Buf, Bytes};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc::UnboundedReceiver;

/// One item to write.
#[derive(Debug)]
pub enum Outbound {
    /// An encoded frame.
    Frame(Bytes),
    /// A MESSAGE: encoded header, then the stored entry.
    Message(Bytes, Bytes),
    /// Flush what is queued, then close the socket.
    Close,
}

/// Most buffers handed to one `writev`.
const MAX_IOV: usize = 256;

/// Writes until the queue closes, an `Outbound::Close` arrives, or the socket fails.
pub async fn run<W: AsyncWrite + Unpin>(mut rx: UnboundedReceiver<Outbound>, mut socket: W) {
    let mut bufs: Vec<Bytes> = Vec::with_capacity(MAX_IOV);
    let mut closing = false;
    while !closing {
        let Some(first) = rx.recv().await else { break };
        closing = push(&mut bufs, first);
        while !closing && bufs.len() < MAX_IOV - 1 {
            match rx.try_recv() {
                Ok(item) => closing = push(&mut bufs, item),
                Err(_) => break,
            }
        }
        if let Err(e) = write_all(&mut socket, &mut bufs).await {
            tracing::debug!(error = %e, "connection write failed");
            break;
        }
    }
    let _ = socket.shutdown().await;
}

fn push(bufs: &mut Vec<Bytes>, item: Outbound) -> bool {
    match item {
        Outbound::Frame(b) => bufs.push(b),
        Outbound::Message(h, d) => {
            bufs.push(h);
            bufs.push(d);
        }
        Outbound::Close => return true,
    }
    false
}

async fn write_all<W: AsyncWrite + Unpin>(
    socket: &mut W,
    bufs: &mut Vec<Bytes>,
) -> std::io::Result<()> {
    let mut start = 0;
    while start < bufs.len() {
        let slices: Vec<IoSlice<'_>> = bufs[start..].iter().map(|b| IoSlice::new(b)).collect();
        let mut n = socket.write_vectored(&slices).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        while n > 0 {
            let b = &mut bufs[start];
            if n >= b.len() {
                n -= b.len();
                start += 1;
            } else {
                b.advance(n);
                n = 0;
            }
        }
        while start < bufs.len() && bufs[start].is_empty() {
            start += 1;
        }
    }
    bufs.clear();
    Ok(())
}
