//! Topic termination (Pulsar's `PersistentTopic.terminate`): the managed ledger takes no more
//! entries, the producers are disconnected (reconnecting, they are refused with
//! `TopicTerminatedError`), and each subscription that has acknowledged everything tells its
//! consumers the end of the topic is reached; the others learn it once they have.

use pulsar_rs_ledger::Position;

use super::Topic;
use crate::error::BrokerError;

/// Pulsar's refusal of a producer on a terminated topic.
pub const TERMINATED: &str = "Topic was already terminated";

impl Topic {
    /// Terminates the topic: the position of its last message, and the handles of the
    /// producers it had (for the server to close). Terminating again answers the same position.
    ///
    /// # Errors
    /// Storage failures (the topic is then not terminated).
    pub fn terminate(&self) -> Result<(Position, Vec<u64>), BrokerError> {
        let at = self.ledger.terminate()?;
        let producers = self.take_producers();
        for sub in self.subscriptions() {
            sub.check_end_of_topic();
        }
        Ok((at, producers))
    }

    /// Whether the topic was terminated.
    #[must_use]
    pub fn is_terminated(&self) -> bool {
        self.ledger.is_terminated()
    }
}

#[cfg(test)]
mod tests {
    use pulsar_rs_ledger::LedgerError;

    use crate::config::BrokerConfig;
    use crate::error::BrokerError;
    use crate::naming::TopicName;
    use crate::service::BrokerService;
    use crate::topic::producers::Admission;
    use crate::topic::{AccessMode, ProducerInfo};

    #[test]
    fn a_terminated_topic_closes_its_producers_and_refuses_new_ones_and_messages() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = BrokerConfig {
            journal_sync_data: false,
            ..BrokerConfig::default()
        };
        let svc = BrokerService::open(cfg, dir.path()).unwrap();
        let t = svc
            .topic(
                &TopicName::parse("persistent://public/default/t").unwrap(),
                true,
            )
            .unwrap();
        let info = |handle: u64, name: &str| ProducerInfo {
            handle,
            name: name.into(),
            access_mode: AccessMode::Shared,
            address: String::new(),
            producer_id: handle,
            connected_since: std::time::SystemTime::UNIX_EPOCH,
            client_version: String::new(),
            metadata: Vec::new(),
            meters: std::sync::Arc::default(),
        };
        assert!(matches!(
            t.add_producer(info(7, "p"), None),
            Ok(Admission::Ready(_))
        ));
        let entry = || {
            let md = pulsar_rs_proto::MessageMetadata {
                producer_name: "p".into(),
                publish_time: 1,
                ..Default::default()
            };
            pulsar_rs_proto::frame::build_stored_entry(&md, b"x")
        };
        let (last, _) = t.publish(entry(), 1, 1).unwrap();
        let (at, producers) = t.terminate().unwrap();
        assert_eq!(at, last);
        assert_eq!(
            producers,
            vec![7],
            "its producers are handed back to be closed"
        );
        assert!(t.is_terminated());
        assert!(matches!(
            t.add_producer(info(8, "q"), None),
            Err(BrokerError::TopicTerminated(m)) if m == super::TERMINATED
        ));
        assert!(matches!(
            t.publish(entry(), 1, 1),
            Err(BrokerError::Ledger(LedgerError::Terminated { .. }))
        ));
        assert_eq!(
            t.terminate().unwrap(),
            (last, Vec::new()),
            "again: the same"
        );
    }
}
