//! How this broker reaches a remote cluster, as Pulsar's `BrokerService.getReplicationClient`
//! and `getClusterPulsarAdmin` read the cluster's record: its `authenticationPlugin` and
//! `authenticationParameters` (both set) replace this broker's `brokerClientAuthentication*`,
//! and its `brokerClientTlsEnabled` with its own trust and key files or stores
//! (`brokerClientTrustCertsFilePath`, `brokerClientCertificateFilePath`,
//! `brokerClientKeyFilePath`, `brokerClientTlsEnabledWithKeyStore` and the stores,
//! `tlsAllowInsecureConnection`) replaces this broker's TLS settings; what the record leaves out
//! is this broker's. The binary-protocol URL is the record's `brokerServiceUrlTls` over TLS,
//! else its `brokerServiceUrl`; the admin URL its `serviceUrlTls` or `serviceUrl`.

use std::sync::Arc;

use pulsar_rs_broker::BrokerConfig;
use serde_json::Value;

use crate::cluster::peers::client::BrokerClient;
use crate::context::ServerContext;
use crate::resources::ClusterData;

/// A remote cluster as a replicator reaches it.
pub(super) struct RemoteCluster {
    /// Its name.
    name: String,
    /// The client: this broker's own unless the record names credentials or TLS of its own.
    pub client: Arc<BrokerClient>,
    /// Its record (`PUT /admin/v2/clusters/{name}`).
    data: ClusterData,
}

impl RemoteCluster {
    /// The remote cluster `name` as registered here.
    ///
    /// # Errors
    /// Not registered, or the record's client settings cannot be used (as text, with the
    /// setting named).
    pub async fn of(ctx: &ServerContext, name: &str) -> Result<Self, String> {
        let data = ctx.resources.cluster(name).ok_or_else(|| {
            format!("cluster {name} is not registered here (PUT /admin/v2/clusters/{name})")
        })?;
        let client = match client_config(&ctx.service.config, &data) {
            None => Arc::clone(&ctx.broker_client),
            // Reads certificate and key files: off the async workers.
            Some(config) => {
                let built =
                    tokio::task::spawn_blocking(move || BrokerClient::from_config(&config)).await;
                match built {
                    Ok(Ok(client)) => Arc::new(client),
                    Ok(Err(e)) => return Err(format!("cluster {name}'s record: {e}")),
                    Err(e) => return Err(format!("cluster {name}'s client: {e}")),
                }
            }
        };
        Ok(RemoteCluster {
            name: name.to_owned(),
            client,
            data,
        })
    }

    /// The record's `plain` URL field, or its `tls` one when the client uses TLS.
    fn url(&self, plain: &str, tls: &str) -> Result<&str, String> {
        let key = if self.client.tls_enabled() {
            tls
        } else {
            plain
        };
        text(&self.data, key).ok_or_else(|| format!("cluster {} has no {key}", self.name))
    }

    /// The binary-protocol URL replicators connect to.
    ///
    /// # Errors
    /// The record has none for the client's transport.
    pub fn broker_url(&self) -> Result<String, String> {
        self.url("brokerServiceUrl", "brokerServiceUrlTls")
            .map(str::to_owned)
    }

    /// The admin API's base URL (no trailing `/`).
    ///
    /// # Errors
    /// The record has none for the client's transport.
    pub fn web_url(&self) -> Result<String, String> {
        self.url("serviceUrl", "serviceUrlTls")
            .map(|u| u.trim_end_matches('/').to_owned())
    }
}

/// A string field of a record, unless missing or blank.
fn text<'a>(data: &'a ClusterData, key: &str) -> Option<&'a str> {
    data.get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// This broker's settings with the record's client fields in their place, or `None` when the
/// record names neither credentials nor TLS of its own (this broker's client serves then).
fn client_config(base: &BrokerConfig, data: &ClusterData) -> Option<BrokerConfig> {
    let plugin = text(data, "authenticationPlugin");
    let params = text(data, "authenticationParameters");
    let tls = data.get("brokerClientTlsEnabled").and_then(Value::as_bool) == Some(true);
    let own_auth = plugin.is_some() && params.is_some();
    if !own_auth && !tls {
        return None;
    }
    let mut c = base.clone();
    if own_auth {
        c.broker_client_authentication_plugin = plugin.map(str::to_owned);
        c.broker_client_authentication_parameters = params.map(str::to_owned);
    }
    if tls {
        let string = |key: &str| text(data, key).map(str::to_owned);
        let flag = |key: &str| data.get(key).and_then(Value::as_bool) == Some(true);
        c.broker_client_tls_enabled = true;
        c.tls_allow_insecure_connection = flag("tlsAllowInsecureConnection");
        c.broker_client_tls_enabled_with_key_store = flag("brokerClientTlsEnabledWithKeyStore");
        c.broker_client_trust_certs_file_path = string("brokerClientTrustCertsFilePath");
        c.broker_client_certificate_file_path = string("brokerClientCertificateFilePath");
        c.broker_client_key_file_path = string("brokerClientKeyFilePath");
        c.broker_client_tls_trust_store = string("brokerClientTlsTrustStore");
        c.broker_client_tls_trust_store_password = string("brokerClientTlsTrustStorePassword");
        c.broker_client_tls_key_store = string("brokerClientTlsKeyStore");
        c.broker_client_tls_key_store_password = string("brokerClientTlsKeyStorePassword");
        if let Some(t) = string("brokerClientTlsTrustStoreType") {
            c.broker_client_tls_trust_store_type = t;
        }
        if let Some(t) = string("brokerClientTlsKeyStoreType") {
            c.broker_client_tls_key_store_type = t;
        }
    }
    Some(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(v: Value) -> ClusterData {
        v.as_object().cloned().unwrap()
    }

    fn base() -> BrokerConfig {
        BrokerConfig {
            broker_client_authentication_plugin: Some("AuthenticationToken".into()),
            broker_client_authentication_parameters: Some("token:mine".into()),
            broker_client_tls_enabled: true,
            broker_client_trust_certs_file_path: Some("/mine/ca.pem".into()),
            ..BrokerConfig::default()
        }
    }

    #[test]
    fn a_record_without_client_fields_uses_this_brokers_client() {
        let data = record(
            serde_json::json!({"brokerServiceUrl": "pulsar://h:1", "authenticationPlugin": "x"}),
        );
        assert!(
            client_config(&base(), &data).is_none(),
            "a plugin without parameters"
        );
    }

    #[test]
    fn the_records_credentials_replace_this_brokers_and_its_tls_stays() {
        let data = record(serde_json::json!({
            "authenticationPlugin": "org.apache.pulsar.client.impl.auth.AuthenticationToken",
            "authenticationParameters": "token:theirs",
        }));
        let c = client_config(&base(), &data).unwrap();
        assert_eq!(
            c.broker_client_authentication_parameters.as_deref(),
            Some("token:theirs")
        );
        assert!(c.broker_client_tls_enabled);
        assert_eq!(
            c.broker_client_trust_certs_file_path.as_deref(),
            Some("/mine/ca.pem")
        );
    }

    #[test]
    fn the_records_tls_replaces_this_brokers_and_its_credentials_stay() {
        let data = record(serde_json::json!({
            "brokerClientTlsEnabled": true,
            "brokerClientTrustCertsFilePath": "/theirs/ca.pem",
            "tlsAllowInsecureConnection": true,
        }));
        let c = client_config(&base(), &data).unwrap();
        assert_eq!(
            c.broker_client_trust_certs_file_path.as_deref(),
            Some("/theirs/ca.pem")
        );
        assert!(c.tls_allow_insecure_connection);
        assert_eq!(c.broker_client_certificate_file_path, None);
        assert_eq!(
            c.broker_client_authentication_parameters.as_deref(),
            Some("token:mine")
        );
    }
}
