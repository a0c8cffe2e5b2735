//! Schemas: GET_SCHEMA and GET_OR_CREATE_SCHEMA, and conversions between the wire schema and
//! the broker's `SchemaInfo`.

use std::sync::Arc;

use bytes::Bytes;
use pulsar_rs_broker::{BrokerService, SchemaInfo, TopicName};
use pulsar_rs_proto::{commands, pb, BaseCommand, ServerError as Wire};

use super::Connection;
use crate::error::wire_code;

impl Connection {
    pub(super) fn get_schema(&self, g: &pb::CommandGetSchema) {
        let service = Arc::clone(&self.service);
        let g = g.clone();
        // Loading the topic reads storage: blocking pool.
        self.offload_reply(move || get_schema(&service, &g));
    }

    pub(super) fn get_or_create_schema(&self, g: pb::CommandGetOrCreateSchema) {
        let service = Arc::clone(&self.service);
        // Topic load and schema storage (write + fsync): blocking pool.
        self.offload_reply(move || get_or_create_schema(&service, &g));
    }
}

/// GET_SCHEMA's answer.
fn get_schema(service: &BrokerService, g: &pb::CommandGetSchema) -> BaseCommand {
    let found = TopicName::parse(&g.topic)
        .and_then(|t| service.topic(&t, false))
        .and_then(|topic| {
            let base = topic.name.base().to_string();
            Ok(match &g.schema_version {
                Some(v) if v.len() == 8 => {
                    let want = u64::from_be_bytes(v[..8].try_into().unwrap_or([0; 8]));
                    // As Pulsar's getSchema(version) (trimDeletedSchemaAndGetList): a version
                    // from before the schema's latest deletion is gone too.
                    service
                        .schemas
                        .active(&base)?
                        .into_iter()
                        .find(|(n, _)| *n == want)
                }
                _ => service.schemas.latest(&base)?,
            })
        });
    match found {
        Ok(Some((v, s))) => {
            commands::get_schema_response(g.request_id, wire_schema(&s), version_bytes(v))
        }
        Ok(None) => commands::get_schema_response_error(
            g.request_id,
            Wire::TopicNotFound,
            "schema not found",
        ),
        Err(e) => commands::get_schema_response_error(g.request_id, wire_code(&e), e.to_string()),
    }
}

/// GET_OR_CREATE_SCHEMA's answer.
fn get_or_create_schema(service: &BrokerService, g: &pb::CommandGetOrCreateSchema) -> BaseCommand {
    let result = TopicName::parse(&g.topic)
        .and_then(|t| service.topic(&t, true))
        .and_then(|topic| service.producer_schema(&topic, Some(schema_info(&g.schema))))
        .map(Option::unwrap_or_default);
    match result {
        Ok(v) => commands::get_or_create_schema_response(g.request_id, version_bytes(v)),
        Err(e) => commands::get_or_create_schema_response_error(
            g.request_id,
            wire_code(&e),
            e.to_string(),
        ),
    }
}

pub(super) fn version_bytes(v: u64) -> Bytes {
    Bytes::copy_from_slice(&v.to_be_bytes())
}

pub(super) fn schema_info(s: &pb::Schema) -> SchemaInfo {
    SchemaInfo {
        schema_type: s.r#type,
        name: s.name.clone(),
        data: s.schema_data.to_vec(),
        properties: s
            .properties
            .iter()
            .map(|kv| (kv.key.clone(), kv.value.clone()))
            .collect(),
        deleted: false,
        timestamp: 0,
    }
}

fn wire_schema(s: &SchemaInfo) -> pb::Schema {
    pb::Schema {
        name: s.name.clone(),
        schema_data: Bytes::from(s.data.clone()),
        r#type: s.schema_type,
        properties: s
            .properties
            .iter()
            .map(|(k, v)| pb::KeyValue {
                key: k.clone(),
                value: v.clone(),
            })
            .collect(),
    }
}
