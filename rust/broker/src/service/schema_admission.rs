//! What a producer's or consumer's schema meets when it attaches to a topic (Pulsar's
//! `ServerCnx.tryAddSchema` and `addSchemaIfIdleOrCheckCompatible`), under the topic's effective
//! schema policies (compatibility strategy, auto update, validation enforced).

use super::BrokerService;
use crate::error::BrokerError;
use crate::schema::compat::{type_name, types};
use crate::schema::info::SchemaInfo;
use crate::topic::Topic;

impl BrokerService {
    /// A producer's schema: the version of an identical one, else a new version when auto
    /// update is allowed and the strategy accepts it. Without a schema: refused on a topic that
    /// has one when validation is enforced, else no version.
    ///
    /// # Errors
    /// [`BrokerError::IncompatibleSchema`] with Pulsar's message; storage failures.
    pub fn producer_schema(
        &self,
        topic: &Topic,
        schema: Option<SchemaInfo>,
    ) -> Result<Option<u64>, BrokerError> {
        let base = topic.name.base().to_string();
        let policy = self.policies.effective(&topic.name);
        match schema {
            Some(s) => self
                .schemas
                .put_if_absent(
                    &base,
                    s,
                    policy.schema_compatibility_strategy,
                    policy.allow_auto_update_schema,
                )
                .map(Some),
            None => {
                if policy.schema_validation_enforced && self.schemas.latest(&base)?.is_some() {
                    return Err(BrokerError::IncompatibleSchema(
                        "Producers cannot connect or send message without a schema to topics with a schema"
                            .into(),
                    ));
                }
                Ok(None)
            }
        }
    }

    /// A consumer's schema (`AUTO_CONSUME` takes whatever the topic has): on an idle topic (no
    /// schema, producers, consumers or data) it becomes the topic's schema as a producer's
    /// would; otherwise it must be compatible with the topic's.
    ///
    /// # Errors
    /// [`BrokerError::IncompatibleSchema`] with Pulsar's message; storage failures.
    pub fn consumer_schema(&self, topic: &Topic, schema: &SchemaInfo) -> Result<(), BrokerError> {
        if schema.schema_type == types::AUTO_CONSUME {
            return Ok(());
        }
        let base = topic.name.base().to_string();
        let has_schema = self.schemas.latest(&base)?.is_some();
        let active = has_schema
            || !topic.producers().is_empty()
            || topic
                .subscriptions()
                .iter()
                .any(|s| !s.consumers().is_empty())
            || topic.ledger.stats().total_size != 0;
        if !active {
            return self
                .producer_schema(topic, Some(schema.clone()))
                .map(|_| ());
        }
        let strategy = self
            .policies
            .effective(&topic.name)
            .schema_compatibility_strategy;
        if self.schemas.check_consumer(&base, schema, strategy)? {
            Ok(())
        } else {
            Err(BrokerError::IncompatibleSchema(format!(
                "Failed to add schema to an active topic with empty(BYTES) schema: new schema type {}",
                type_name(schema.schema_type)
            )))
        }
    }
}
