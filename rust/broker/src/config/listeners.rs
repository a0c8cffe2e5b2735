//! `advertisedListeners` / `internalListenerName`: the named addresses a broker gives out in
//! lookup answers, chosen by the listener name a client asks for (Pulsar's PIP-61).
//!
//! Format: `name:pulsar://host:port,name:pulsar+ssl://host:port,other:pulsar://...`; each name
//! has at most one `pulsar://` and one `pulsar+ssl://` URL. Without a listener name, lookups
//! answer with the internal listener (`internalListenerName`, else the first one).

use crate::error::BrokerError;

/// One named listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdvertisedListener {
    /// The listener name clients ask for.
    pub name: String,
    /// `pulsar://host:port`.
    pub broker_url: Option<String>,
    /// `pulsar+ssl://host:port`.
    pub broker_url_tls: Option<String>,
}

fn bad(reason: impl Into<String>) -> BrokerError {
    BrokerError::InvalidConfig {
        key: "advertisedListeners".into(),
        reason: reason.into(),
    }
}

/// Parses `advertisedListeners`, in the order given.
///
/// # Errors
/// [`BrokerError::InvalidConfig`] naming `advertisedListeners` (or `internalListenerName`).
pub fn parse(spec: &str, internal: Option<&str>) -> Result<Vec<AdvertisedListener>, BrokerError> {
    let mut out: Vec<AdvertisedListener> = Vec::new();
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (name, url) = item
            .split_once(':')
            .filter(|(n, u)| !n.is_empty() && u.contains("://"))
            .ok_or_else(|| {
                bad(format!(
                    "{item:?} is not <listener_name>:<scheme>://<host>:<port>"
                ))
            })?;
        let (scheme, rest) = url.split_once("://").unwrap_or(("", ""));
        let port_ok = rest
            .rsplit_once(':')
            .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok());
        if !port_ok {
            return Err(bad(format!("{url:?} needs host:port")));
        }
        let idx = match out.iter().position(|l| l.name == name) {
            Some(i) => i,
            None => {
                out.push(AdvertisedListener {
                    name: name.to_owned(),
                    broker_url: None,
                    broker_url_tls: None,
                });
                out.len() - 1
            }
        };
        let l = &mut out[idx];
        let slot = match scheme {
            "pulsar" => &mut l.broker_url,
            "pulsar+ssl" => &mut l.broker_url_tls,
            _ => {
                return Err(bad(format!(
                    "unsupported scheme {scheme:?} in {item:?} (pulsar or pulsar+ssl)"
                )))
            }
        };
        if slot.is_some() {
            return Err(bad(format!(
                "listener {name:?} has more than one {scheme}:// URL"
            )));
        }
        *slot = Some(url.to_owned());
    }
    if let Some(name) = internal {
        if !out.iter().any(|l| l.name == name) {
            return Err(BrokerError::InvalidConfig {
                key: "internalListenerName".into(),
                reason: format!("{name:?} is not one of advertisedListeners"),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listeners() {
        let l = parse(
            "internal:pulsar://10.0.0.1:6650, internal:pulsar+ssl://10.0.0.1:6651,external:pulsar://example.com:16650",
            Some("internal"),
        )
        .unwrap();
        assert_eq!(l.len(), 2);
        assert_eq!(l[0].broker_url.as_deref(), Some("pulsar://10.0.0.1:6650"));
        assert_eq!(
            l[0].broker_url_tls.as_deref(),
            Some("pulsar+ssl://10.0.0.1:6651")
        );
        assert_eq!(l[1].name, "external");
        for bad_spec in [
            "internal",
            "internal:http://x:1",
            "a:pulsar://x:1,a:pulsar://y:2",
            "a:pulsar://x",
        ] {
            assert!(parse(bad_spec, None).is_err(), "{bad_spec}");
        }
        let e = parse("a:pulsar://x:1", Some("b")).unwrap_err().to_string();
        assert!(e.contains("internalListenerName"), "{e}");
    }
}
