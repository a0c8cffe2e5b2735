//! What a bookie publishes when it registers (`/ledgers/available/{bookieId}`): a
//! `BookieServiceInfoFormat` protobuf (`DataFormats.proto`) listing its endpoints. Clients connect to
//! the endpoint whose protocol is `bookie-rpc` (`DefaultBookieAddressResolver`); a bookie id of the
//! legacy `host:port` form is its own address when nothing is published.

use prost::Message;

/// `BookieServiceInfoFormat`.
#[derive(Clone, PartialEq, Message)]
pub struct BookieServiceInfoFormat {
    #[prost(message, repeated, tag = "6")]
    pub endpoints: Vec<Endpoint>,
    #[prost(map = "string, string", tag = "7")]
    pub properties: std::collections::HashMap<String, String>,
}

/// `BookieServiceInfoFormat.Endpoint`.
#[derive(Clone, PartialEq, Message)]
pub struct Endpoint {
    #[prost(string, required, tag = "1")]
    pub id: String,
    #[prost(int32, required, tag = "2")]
    pub port: i32,
    #[prost(string, required, tag = "3")]
    pub host: String,
    #[prost(string, required, tag = "4")]
    pub protocol: String,
    #[prost(string, repeated, tag = "5")]
    pub auth: Vec<String>,
    #[prost(string, repeated, tag = "6")]
    pub extensions: Vec<String>,
}

/// The `host:port` to connect to, from a bookie's registration data; None if it publishes no
/// `bookie-rpc` endpoint (or nothing parseable).
pub fn bookie_rpc_address(registration: &[u8]) -> Option<String> {
    let info = BookieServiceInfoFormat::decode(registration).ok()?;
    info.endpoints
        .into_iter()
        .find(|e| e.protocol == "bookie-rpc")
        .map(|e| format!("{}:{}", e.host, e.port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_rpc_endpoint() {
        let info = BookieServiceInfoFormat {
            endpoints: vec![
                Endpoint {
                    id: "http".into(),
                    port: 8000,
                    host: "10.0.0.1".into(),
                    protocol: "http".into(),
                    auth: vec![],
                    extensions: vec![],
                },
                Endpoint {
                    id: "bookie".into(),
                    port: 3181,
                    host: "10.0.0.1".into(),
                    protocol: "bookie-rpc".into(),
                    auth: vec![],
                    extensions: vec![],
                },
            ],
            properties: Default::default(),
        };
        assert_eq!(
            bookie_rpc_address(&info.encode_to_vec()).as_deref(),
            Some("10.0.0.1:3181")
        );
        assert_eq!(bookie_rpc_address(&[]), None);
    }
}
