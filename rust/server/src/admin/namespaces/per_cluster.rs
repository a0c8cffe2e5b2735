//! Namespace policies Pulsar keeps per cluster in its `Policies` document, a map from cluster
//! name to value, of which each broker reads, sets and removes only its own cluster's entry
//! (Pulsar's `policies.replicatorDispatchRate.put(config.getClusterName(), rate)`): here the
//! namespace's `replicatorDispatchRate`. The map is kept in the namespace's document as
//! given, so another cluster's entries (a shared configuration store) stay untouched.

use pulsar_rs_broker::policies::Policies;
use serde_json::{Map, Value};

/// `cluster`'s entry of the map `field`, or `null` when the map or the entry is missing.
pub(super) fn get(p: &Policies, field: &str, cluster: &str) -> Value {
    p.other
        .get(field)
        .and_then(|m| m.get(cluster))
        .cloned()
        .unwrap_or(Value::Null)
}

/// Sets `cluster`'s entry of the map `field` to `v`, keeping the other clusters' entries.
pub(super) fn set(p: &mut Policies, field: &str, cluster: &str, v: Value) {
    let mut map = match p.other.remove(field) {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    map.insert(cluster.to_owned(), v);
    p.other.insert(field.to_owned(), Value::Object(map));
}

/// Removes `cluster`'s entry of the map `field`; the map stays (empty), as in Pulsar's document.
pub(super) fn remove(p: &mut Policies, field: &str, cluster: &str) {
    if let Some(Value::Object(m)) = p.other.get_mut(field) {
        m.remove(cluster);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_cluster_keeps_its_own_entry() {
        let mut p = Policies::default();
        assert_eq!(get(&p, "r", "east"), Value::Null);
        set(&mut p, "r", "west", json!(1));
        set(&mut p, "r", "east", json!(2));
        set(&mut p, "r", "east", json!(3));
        assert_eq!(get(&p, "r", "east"), json!(3));
        remove(&mut p, "r", "east");
        assert_eq!(get(&p, "r", "east"), Value::Null);
        assert_eq!(
            p.other["r"],
            json!({"west": 1}),
            "the other cluster's entry stays"
        );
    }
}
