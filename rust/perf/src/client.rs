//! A minimal Pulsar protocol client for load generation.
//!
//! One TCP connection per producer or consumer, connected straight to the broker's service URL
//! (no PARTITIONED_METADATA / LOOKUP: the brokers we measure are standalone). Frames are encoded
//! and decoded with `pulsar_rs_proto`; checksums (CRC32C) are always sent.

use std::error::Error as StdError;

use bytes::BytesMut;
use pulsar_rs_proto::{
    commands, decode_frame, encode_simple,
    pb::{self, base_command::Type, command_subscribe::SubType},
    BaseCommand, Frame, DEFAULT_MAX_FRAME_SIZE,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;

/// Errors of the load generator: I/O, protocol or broker errors, as text.
pub type Error = Box<dyn StdError + Send + Sync>;
/// Result with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// Protocol version we announce (v20 is what current clients send).
pub const PROTOCOL_VERSION: i32 = 20;

/// `host:port` of a `pulsar://host:port` URL.
///
/// # Errors
/// If the URL has another scheme.
pub fn socket_addr(url: &str) -> Result<String> {
    let rest = url
        .strip_prefix("pulsar://")
        .ok_or_else(|| format!("not a pulsar:// URL: {url}"))?;
    Ok(rest.trim_end_matches('/').to_owned())
}

/// Reads frames from a connection's read half.
pub struct FrameReader {
    rd: OwnedReadHalf,
    buf: BytesMut,
}

impl FrameReader {
    /// The next frame, or `None` at end of stream.
    ///
    /// # Errors
    /// I/O or a malformed frame.
    pub async fn next(&mut self) -> Result<Option<Frame>> {
        loop {
            if let Some(f) = self.try_next()? {
                return Ok(Some(f));
            }
            if self.buf.capacity() - self.buf.len() < 16 * 1024 {
                self.buf.reserve(64 * 1024);
            }
            if self.rd.read_buf(&mut self.buf).await? == 0 {
                return Ok(None);
            }
        }
    }

    /// A frame already in the buffer, without reading from the socket.
    ///
    /// # Errors
    /// A malformed frame.
    pub fn try_next(&mut self) -> Result<Option<Frame>> {
        Ok(decode_frame(&mut self.buf, DEFAULT_MAX_FRAME_SIZE)?)
    }
}

/// A connected, handshaken client connection.
pub struct Conn {
    /// Frames from the broker.
    pub reader: FrameReader,
    /// The write half.
    pub writer: OwnedWriteHalf,
}

impl Conn {
    /// Connects to `url` and performs CONNECT / CONNECTED.
    ///
    /// # Errors
    /// Connection refused, or the broker answered with an error.
    pub async fn connect(url: &str) -> Result<Conn> {
        let stream = TcpStream::connect(socket_addr(url)?).await?;
        stream.set_nodelay(true)?;
        let (rd, writer) = stream.into_split();
        let mut conn = Conn {
            reader: FrameReader {
                rd,
                buf: BytesMut::with_capacity(128 * 1024),
            },
            writer,
        };
        conn.send(&commands::connect("pulsar-rs-perf", PROTOCOL_VERSION))
            .await?;
        conn.wait_for(|cmd| match Type::try_from(cmd.r#type) {
            Ok(Type::Connected) => Some(Ok(())),
            Ok(Type::Error) => Some(Err(broker_error(cmd))),
            _ => None,
        })
        .await?;
        Ok(conn)
    }

    /// Writes one simple command.
    ///
    /// # Errors
    /// I/O.
    pub async fn send(&mut self, cmd: &BaseCommand) -> Result<()> {
        let mut buf = BytesMut::with_capacity(256);
        encode_simple(cmd, &mut buf);
        self.writer.write_all(&buf).await?;
        Ok(())
    }

    /// Reads frames until `pick` returns something, answering PINGs meanwhile.
    async fn wait_for<T>(&mut self, pick: impl Fn(&BaseCommand) -> Option<Result<T>>) -> Result<T> {
        loop {
            let frame = self
                .reader
                .next()
                .await?
                .ok_or("connection closed by the broker")?;
            let cmd = frame.command();
            if cmd.r#type == Type::Ping as i32 {
                self.send(&commands::pong()).await?;
                continue;
            }
            if let Some(r) = pick(cmd) {
                return r;
            }
        }
    }

    /// Creates producers `(topic, producer_id)` with pipelined requests; returns the producer
    /// names the broker assigned, in order.
    ///
    /// # Errors
    /// The broker refused a producer.
    pub async fn create_producers(&mut self, producers: &[(String, u64)]) -> Result<Vec<String>> {
        let mut buf = BytesMut::new();
        for (i, (topic, id)) in producers.iter().enumerate() {
            encode_simple(&commands::producer(topic, *id, i as u64, None), &mut buf);
        }
        self.writer.write_all(&buf).await?;
        let mut names = vec![None; producers.len()];
        let mut missing = producers.len();
        while missing > 0 {
            let (i, name) = self
                .wait_for(|cmd| {
                    if let Some(ps) = &cmd.producer_success {
                        if ps.producer_ready() {
                            return Some(Ok((ps.request_id, ps.producer_name.clone())));
                        }
                    }
                    cmd.error.as_ref().map(|_| Err(broker_error(cmd)))
                })
                .await?;
            if let Some(slot) = names.get_mut(i as usize) {
                if slot.replace(name).is_none() {
                    missing -= 1;
                }
            }
        }
        Ok(names.into_iter().map(Option::unwrap_or_default).collect())
    }

    /// Subscribes consumers `(topic, consumer_id)` to `subscription` with pipelined requests.
    ///
    /// # Errors
    /// The broker refused a subscription.
    pub async fn subscribe_all(
        &mut self,
        consumers: &[(String, u64)],
        subscription: &str,
        sub_type: SubType,
        earliest: bool,
    ) -> Result<()> {
        let mut buf = BytesMut::new();
        for (i, (topic, id)) in consumers.iter().enumerate() {
            let name = format!("perf-consumer-{id}");
            let mut cmd = commands::subscribe(topic, subscription, sub_type, *id, i as u64, &name);
            if let Some(s) = cmd.subscribe.as_mut() {
                if earliest {
                    s.initial_position =
                        Some(pb::command_subscribe::InitialPosition::Earliest as i32);
                }
            }
            encode_simple(&cmd, &mut buf);
        }
        self.writer.write_all(&buf).await?;
        let mut done = vec![false; consumers.len()];
        let mut missing = consumers.len();
        while missing > 0 {
            let i = self
                .wait_for(|cmd| {
                    if let Some(s) = &cmd.success {
                        return Some(Ok(s.request_id));
                    }
                    cmd.error.as_ref().map(|_| Err(broker_error(cmd)))
                })
                .await?;
            if let Some(d) = done.get_mut(i as usize) {
                if !*d {
                    *d = true;
                    missing -= 1;
                }
            }
        }
        Ok(())
    }
}

/// A broker ERROR (or any unexpected command) as an [`Error`].
#[must_use]
pub fn broker_error(cmd: &BaseCommand) -> Error {
    match &cmd.error {
        Some(e) => format!("broker error {:?}: {}", e.error(), e.message).into(),
        None => format!("unexpected {}", pulsar_rs_proto::command_type_name(cmd)).into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_service_urls() {
        assert_eq!(
            socket_addr("pulsar://127.0.0.1:6650").unwrap(),
            "127.0.0.1:6650"
        );
        assert!(socket_addr("http://x:1").is_err());
    }
}
