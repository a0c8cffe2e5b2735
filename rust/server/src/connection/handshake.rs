//! CONNECT: protocol version negotiation and authentication of the connection's role; the
//! periodic credential check and AUTH_RESPONSE (`crate::auth_refresh`).

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
        self.protocol_version = version;
        let identity = self
            .ctx
            .auth
            .authenticate_connect(c, self.auth.peer_cn.as_deref())
            .map_err(|e| {
                tracing::info!(peer = %self.peer, error = %e, "authentication failed");
                e.to_string()
            });
        self.role = identity
            .as_ref()
            .map(|i| i.as_ref().map(|i| i.role.clone()))
            .map_err(Clone::clone);
        self.auth.method = c.auth_method_name.clone().unwrap_or_default();
        self.auth.identity = identity.ok().flatten();
        tracing::debug!(peer = %self.peer, client = %c.client_version, version, "connected");
        self.client_version.clone_from(&c.client_version);
        let max = i32::try_from(self.service.config.max_message_size).unwrap_or(i32::MAX);
        self.send(&commands::connected(
            &format!("pulsar-rs-{}", env!("CARGO_PKG_VERSION")),
            version,
            max,
        ));
        Ok(())
    }

    /// The periodic credential check (`authenticationRefreshCheckSeconds`).
    pub(super) fn refresh_check(&mut self) -> Result<(), String> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        match self.auth.check(now, self.protocol_version) {
            crate::auth_refresh::RefreshAction::Nothing => Ok(()),
            crate::auth_refresh::RefreshAction::Challenge(cmd) => {
                self.send(&cmd);
                Ok(())
            }
            crate::auth_refresh::RefreshAction::Close(reason) => Err(reason),
        }
    }
}
