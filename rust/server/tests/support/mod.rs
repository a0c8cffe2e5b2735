//! A minimal protocol client for server tests: raw frames over TCP with the proto crate.

#![allow(dead_code)]

use std::path::Path;

use bytes::{Bytes, BytesMut};
use pulsar_rs_broker::BrokerConfig;
use pulsar_rs_proto::{commands, pb, BaseCommand, Frame};
use pulsar_rs_server::Server;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Starts a server on ephemeral ports.
pub async fn start(dir: &Path, tweak: impl FnOnce(&mut BrokerConfig)) -> Server {
    let mut cfg = BrokerConfig {
        broker_service_port: 0,
        web_service_port: 0,
        ..BrokerConfig::default()
    };
    tweak(&mut cfg);
    Server::start(cfg, dir.to_path_buf())
        .await
        .expect("server starts")
}

/// One raw connection.
pub struct Conn {
    pub stream: TcpStream,
    buf: BytesMut,
}

impl Conn {
    pub async fn open(addr: std::net::SocketAddr) -> std::io::Result<Conn> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(Conn {
            stream,
            buf: BytesMut::with_capacity(4096),
        })
    }

    pub async fn send(&mut self, cmd: &BaseCommand) -> std::io::Result<()> {
        let mut out = BytesMut::new();
        pulsar_rs_proto::encode_simple(cmd, &mut out);
        self.stream.write_all(&out).await
    }

    pub async fn send_raw(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(bytes).await
    }

    pub async fn publish(
        &mut self,
        producer_id: u64,
        seq: u64,
        payload: &[u8],
    ) -> std::io::Result<()> {
        let md = pb::MessageMetadata {
            producer_name: "load".into(),
            sequence_id: seq,
            publish_time: 1,
            ..Default::default()
        };
        let mut out = BytesMut::new();
        pulsar_rs_proto::encode_payload_command(
            &commands::send(producer_id, seq, 1),
            &md,
            payload,
            &mut out,
        );
        self.stream.write_all(&out).await
    }

    /// Reads the next frame (None on EOF or error).
    pub async fn recv(&mut self) -> Option<Frame> {
        loop {
            if let Ok(Some(f)) = pulsar_rs_proto::decode_frame(&mut self.buf, 64 << 20) {
                return Some(f);
            }
            match self.stream.read_buf(&mut self.buf).await {
                Ok(0) | Err(_) => return None,
                Ok(_) => {}
            }
        }
    }

    /// Reads frames until one of type `ty` (skipping pings by answering them).
    pub async fn expect(&mut self, ty: pb::base_command::Type) -> Option<BaseCommand> {
        loop {
            let f = self.recv().await?;
            let cmd = f.command().clone();
            if cmd.r#type == pb::base_command::Type::Ping as i32 {
                let _ = self.send(&commands::pong()).await;
                continue;
            }
            if cmd.r#type == ty as i32 {
                return Some(cmd);
            }
        }
    }

    pub async fn handshake(&mut self) -> Option<BaseCommand> {
        self.send(&commands::connect("pulsar-rs-test", 20))
            .await
            .ok()?;
        self.expect(pb::base_command::Type::Connected).await
    }
}

pub fn payload_of(n: usize) -> Bytes {
    Bytes::from(vec![b'p'; n])
}
