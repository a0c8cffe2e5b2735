//! A response body written while it is sent: the handler's work hands it over in chunks through
//! a channel of [`DEPTH`] chunks, so the broker holds a few chunks of a large answer at a time
//! (never the whole of it), and the work stops at its next chunk once the client is gone (hyper
//! drops the body, the channel closes, the send fails).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::{header, HeaderValue};
use axum::response::Response;
use bytes::Bytes;
use http_body::Frame;
use serde_json::Value;
use tokio::sync::mpsc;

/// Chunks written ahead of the client: with chunks of a few hundred KB, the memory one
/// answer holds stays within a few MB whatever its length.
pub(crate) const DEPTH: usize = 2;

/// The writing end, held by the task that does the work.
pub(crate) struct ChunkSender(mpsc::Sender<Result<Bytes, io::Error>>);

/// The client left (or the server is stopping): the work should stop.
#[derive(Debug)]
pub(crate) struct ClientGone;

impl ChunkSender {
    /// Sends one chunk, waiting while [`DEPTH`] chunks wait for the client.
    ///
    /// # Errors
    /// [`ClientGone`] when the response body was dropped.
    pub(crate) async fn send(&self, chunk: Vec<u8>) -> Result<(), ClientGone> {
        self.0
            .send(Ok(Bytes::from(chunk)))
            .await
            .map_err(|_| ClientGone)
    }

    /// Ends the response with an error: hyper aborts it, so the client sees a broken answer
    /// instead of a complete one that lacks part of the data.
    pub(crate) async fn fail(self, why: String) {
        let _ = self.0.send(Err(io::Error::other(why))).await;
    }
}

/// Writes `,"key":value` for each field: the closing fields of a streamed JSON object.
pub(crate) fn write_fields(out: &mut Vec<u8>, fields: impl IntoIterator<Item = (String, Value)>) {
    for (k, v) in fields {
        out.push(b',');
        // Strings and JSON values serialize into a Vec without failing.
        let _ = serde_json::to_writer(&mut *out, &k);
        out.push(b':');
        let _ = serde_json::to_writer(&mut *out, &v);
    }
}

/// A JSON response whose body is what the returned sender writes, `first` first.
pub(crate) fn json_response(first: Vec<u8>) -> (Response, ChunkSender) {
    let (tx, rx) = mpsc::channel(DEPTH);
    // The channel is new and empty: the first chunk always fits.
    let _ = tx.try_send(Ok(Bytes::from(first)));
    let mut response = Response::new(Body::new(Chunks(rx)));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    (response, ChunkSender(tx))
}

/// The reading end, polled by hyper as the socket takes the bytes.
struct Chunks(mpsc::Receiver<Result<Bytes, io::Error>>);

impl http_body::Body for Chunks {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        self.0.poll_recv(cx).map(|c| c.map(|r| r.map(Frame::data)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    #[tokio::test]
    async fn chunks_arrive_in_order_and_a_dropped_body_stops_the_writer() {
        let (response, tx) = json_response(b"[1".to_vec());
        let writer = tokio::spawn(async move {
            let mut sent = 0u32;
            while tx.send(b",1".to_vec()).await.is_ok() {
                sent += 1;
                assert!(sent < 1000, "the writer never noticed the client left");
            }
            sent
        });
        let mut body = response.into_body();
        let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(&first[..], b"[1");
        let second = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(&second[..], b",1");
        drop(body);
        // At most DEPTH chunks were written ahead after the last one read.
        let sent = writer.await.unwrap();
        assert!(sent <= 1 + DEPTH as u32 + 1, "{sent}");
    }

    #[tokio::test]
    async fn a_failure_aborts_the_body() {
        let (response, tx) = json_response(b"{".to_vec());
        tx.fail("owner gone".into()).await;
        let mut body = response.into_body();
        assert!(body.frame().await.unwrap().is_ok());
        assert!(body.frame().await.unwrap().is_err());
    }
}
