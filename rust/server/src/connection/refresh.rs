//! Credential refresh on long-lived connections, as Pulsar's `ServerCnx` does it: every
//! `authenticationRefreshCheckSeconds` a connection whose credentials have expired (token `exp`)
//! is sent AUTH_CHALLENGE (`auth_data = "refresh"`, the method it authenticated with). The
//! client answers AUTH_RESPONSE with fresh credentials, which must be valid and name the same
//! role; otherwise, or if no answer has come by the next check, the connection is closed.

use pulsar_rs_proto::pb;
use pulsar_rs_proto::BaseCommand;

use crate::auth::{Authenticator, Identity};

/// Challenge data asking the client to refresh (Pulsar's `AuthData.REFRESH_AUTH_DATA`).
pub const REFRESH_AUTH_DATA: &[u8] = b"refresh";

/// The credential state of one connection; owned by its reader task.
#[derive(Debug, Default)]
pub struct AuthState {
    /// Who the client is (None: authentication off or anonymous without a role).
    pub identity: Option<Identity>,
    /// The method it authenticated with (`token`, `basic`, `tls`, or empty).
    pub method: String,
    /// CN of the TLS client certificate, if any.
    pub peer_cn: Option<String>,
    /// An AUTH_CHALLENGE is outstanding.
    challenged: bool,
}

/// What a refresh check decided.
#[derive(Debug, PartialEq)]
pub enum RefreshAction {
    /// Credentials still valid (or never expire).
    Nothing,
    /// Send this AUTH_CHALLENGE (boxed: a command is large).
    Challenge(Box<BaseCommand>),
    /// Close the connection, for this reason.
    Close(String),
}

impl AuthState {
    /// The state of a new connection (`peer_cn`: its TLS client certificate's CN).
    #[must_use]
    pub fn new(peer_cn: Option<String>) -> Self {
        AuthState {
            peer_cn,
            ..AuthState::default()
        }
    }

    /// The periodic check at `now` (Unix seconds).
    pub fn check(&mut self, now: u64, protocol_version: i32) -> RefreshAction {
        let Some(id) = &self.identity else {
            return RefreshAction::Nothing;
        };
        if !id.expired(now) {
            return RefreshAction::Nothing;
        }
        if self.challenged {
            return RefreshAction::Close(
                "timed out waiting for refreshed credentials (AUTH_RESPONSE)".into(),
            );
        }
        self.challenged = true;
        RefreshAction::Challenge(Box::new(
            pb::CommandAuthChallenge {
                server_version: Some(format!("pulsar-rs-{}", env!("CARGO_PKG_VERSION"))),
                challenge: Some(pb::AuthData {
                    auth_method_name: Some(self.method.clone()),
                    auth_data: Some(REFRESH_AUTH_DATA.to_vec().into()),
                }),
                protocol_version: Some(protocol_version),
            }
            .into(),
        ))
    }

    /// Handles an AUTH_RESPONSE.
    ///
    /// # Errors
    /// Why the connection must be closed (invalid credentials, another role).
    pub fn respond(
        &mut self,
        auth: &Authenticator,
        r: &pb::CommandAuthResponse,
    ) -> Result<(), String> {
        let data = r.response.as_ref();
        let method = data
            .and_then(|d| d.auth_method_name.as_deref())
            .unwrap_or(&self.method)
            .to_owned();
        let bytes = data
            .and_then(|d| d.auth_data.as_deref())
            .unwrap_or_default();
        let fresh = auth
            .authenticate(&method, bytes, self.peer_cn.as_deref())
            .map_err(|e| format!("refreshed credentials refused: {e}"))?;
        let old_role = self.identity.as_ref().map(|i| i.role.as_str());
        let new_role = fresh.as_ref().map(|i| i.role.as_str());
        if old_role != new_role {
            return Err(format!(
                "refreshed credentials name role {new_role:?}, the connection has {old_role:?}"
            ));
        }
        self.identity = fresh;
        self.challenged = false;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenge_then_close_without_answer() {
        let mut s = AuthState {
            identity: Some(Identity {
                role: "r".into(),
                expires_at: Some(100),
            }),
            method: "token".into(),
            ..AuthState::default()
        };
        assert_eq!(s.check(99, 20), RefreshAction::Nothing);
        assert!(matches!(s.check(100, 20), RefreshAction::Challenge(_)));
        assert!(matches!(s.check(101, 20), RefreshAction::Close(_)));
        let mut forever = AuthState {
            identity: Some(Identity {
                role: "r".into(),
                expires_at: None,
            }),
            ..AuthState::default()
        };
        assert_eq!(forever.check(u64::MAX, 20), RefreshAction::Nothing);
    }
}
