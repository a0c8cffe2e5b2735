//! CONNECT: protocol version negotiation and authentication of the connection's role.

use pulsar_rs_proto::{commands, pb};

use super::Connection;
use crate::error::ServerError;

impl Connection {
    pub(super) fn connect(&mut self, c: &pb::CommandConnect) -> Result<(), ServerError> {
        if self.connected {
            return Err(ServerError::BadRequest("second CONNECT".into()));
        }
        let version = c
            .protocol_version()
            .min(pulsar_rs_proto::MAX_PROTOCOL_VERSION);
        self.connected = true;
        self.role = self.ctx.auth.authenticate_connect(c).map_err(|e| {
            tracing::info!(peer = %self.peer, error = %e, "authentication failed");
            e.to_string()
        });
        tracing::debug!(peer = %self.peer, client = %c.client_version, version, "connected");
        let max = i32::try_from(self.service.config.max_message_size).unwrap_or(i32::MAX);
        self.send(&commands::connected(
            &format!("pulsar-rs-{}", env!("CARGO_PKG_VERSION")),
            version,
            max,
        ));
        Ok(())
    }
}
