//! Topic lookup answers, shared by the binary LOOKUP command and the REST lookup
//! (`GET /lookup/v2/topic/{domain}/{tenant}/{ns}/{topic}`): which broker URLs a client is given,
//! by the listener name it asks for (`advertisedListeners`, see
//! [`pulsar_rs_broker::config::listeners`]). One broker serves every topic, so every lookup answers
//! with this broker.

use pulsar_rs_broker::config::listeners::AdvertisedListener;

/// What a lookup answers: the broker's URLs for the client's listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LookupUrls {
    /// `pulsar://host:port`.
    pub broker_url: String,
    /// `pulsar+ssl://host:port`, when TLS is on (or the listener has one).
    pub broker_url_tls: Option<String>,
}

/// The broker URLs of a server, by listener; immutable after start.
#[derive(Debug, Clone)]
pub struct Lookups {
    /// `pulsar://advertisedAddress:port` (no listeners configured).
    pub service_url: String,
    /// `pulsar+ssl://advertisedAddress:port`.
    pub service_url_tls: Option<String>,
    /// `advertisedListeners`, in configuration order.
    pub listeners: Vec<AdvertisedListener>,
    /// Index of the internal listener (`internalListenerName`, else the first).
    pub internal: usize,
}

impl Lookups {
    /// The URLs for a client naming `listener` (`None` or empty: the internal listener).
    ///
    /// # Errors
    /// Pulsar's message for an unknown listener, `the broker do not have {name} listener`
    /// (answered with `ServiceNotReady`, as Pulsar does).
    pub fn urls(&self, listener: Option<&str>) -> Result<LookupUrls, String> {
        let chosen = match listener.filter(|l| !l.is_empty()) {
            Some(name) => Some(
                self.listeners
                    .iter()
                    .find(|l| l.name == name)
                    .ok_or_else(|| format!("the broker do not have {name} listener"))?,
            ),
            None => self.listeners.get(self.internal),
        };
        Ok(match chosen {
            Some(l) => LookupUrls {
                broker_url: l
                    .broker_url
                    .clone()
                    .or_else(|| l.broker_url_tls.clone())
                    .unwrap_or_default(),
                broker_url_tls: l.broker_url_tls.clone(),
            },
            None => LookupUrls {
                broker_url: self.service_url.clone(),
                broker_url_tls: self.service_url_tls.clone(),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn by_listener_name() {
        let listeners = pulsar_rs_broker::config::listeners::parse(
            "a:pulsar://h1:1,b:pulsar://h2:2,b:pulsar+ssl://h2:3",
            Some("b"),
        )
        .unwrap();
        let l = Lookups {
            service_url: "pulsar://s:9".into(),
            service_url_tls: None,
            listeners,
            internal: 1,
        };
        assert_eq!(l.urls(None).unwrap().broker_url, "pulsar://h2:2");
        assert_eq!(l.urls(Some("a")).unwrap().broker_url, "pulsar://h1:1");
        assert_eq!(
            l.urls(Some("b")).unwrap().broker_url_tls.as_deref(),
            Some("pulsar+ssl://h2:3")
        );
        assert_eq!(
            l.urls(Some("zz")).unwrap_err(),
            "the broker do not have zz listener"
        );
        let plain = Lookups {
            service_url: "pulsar://s:9".into(),
            service_url_tls: None,
            listeners: Vec::new(),
            internal: 0,
        };
        assert_eq!(plain.urls(None).unwrap().broker_url, "pulsar://s:9");
        assert!(plain.urls(Some("x")).is_err());
    }
}
