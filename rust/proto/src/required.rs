//! Presence of proto2 `required` fields.
//!
//! prost decodes a missing `required` field as its default value, so a command lacking, say, the
//! topic of a PRODUCER would decode fine. protobuf (Java's broker, the C++ client) refuses such a
//! message and the connection is closed. To behave the same, the raw bytes of the command field
//! of a `BaseCommand` are scanned for the field numbers its type requires. Nested messages
//! (message ids, schemas, key/values) are not checked.

use crate::error::ProtocolError;
use crate::pb::base_command::Type;

/// Field numbers that are `required` in the command of each type (from `PulsarApi.proto`).
fn required_fields(ty: Type) -> &'static [u32] {
    match ty {
        Type::Connect | Type::Connected | Type::Success | Type::ReachedEndOfTopic => &[1],
        Type::Subscribe => &[1, 2, 3, 4, 5],
        Type::Producer | Type::Error | Type::GetOrCreateSchema => &[1, 2, 3],
        Type::SendError => &[1, 2, 3, 4],
        Type::Send
        | Type::SendReceipt
        | Type::Message
        | Type::Ack
        | Type::Flow
        | Type::Unsubscribe
        | Type::CloseProducer
        | Type::CloseConsumer
        | Type::ProducerSuccess
        | Type::PartitionedMetadata
        | Type::Lookup
        | Type::Seek
        | Type::GetLastMessageId
        | Type::GetLastMessageIdResponse
        | Type::GetTopicsOfNamespace
        | Type::GetSchema
        | Type::WatchTopicListClose => &[1, 2],
        Type::WatchTopicList => &[1, 2, 3, 4],
        Type::WatchTopicListSuccess => &[1, 2, 4],
        Type::WatchTopicUpdate => &[1, 4],
        Type::RedeliverUnacknowledgedMessages
        | Type::ActiveConsumerChange
        | Type::ConsumerStatsResponse
        | Type::GetTopicsOfNamespaceResponse
        | Type::GetSchemaResponse
        | Type::AckResponse
        | Type::GetOrCreateSchemaResponse => &[1],
        Type::PartitionedMetadataResponse => &[2],
        Type::LookupResponse => &[4],
        Type::ConsumerStats => &[1, 4],
        _ => &[],
    }
}

/// Reads a varint at `*i`, advancing it; `None` if truncated or longer than 10 bytes.
fn varint(buf: &[u8], i: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..70).step_by(7) {
        let b = *buf.get(*i)?;
        *i += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// Calls `f(field, value range)` for each top-level field of an encoded message (the range is
/// only meaningful for length-delimited fields). `None` on a structural error.
fn for_each_field(buf: &[u8], mut f: impl FnMut(u32, std::ops::Range<usize>)) -> Option<()> {
    let mut i = 0;
    while i < buf.len() {
        let key = varint(buf, &mut i)?;
        let field = u32::try_from(key >> 3).ok()?;
        let start = i;
        match key & 7 {
            0 => {
                varint(buf, &mut i)?;
            }
            1 => i = i.checked_add(8)?,
            2 => {
                let len = usize::try_from(varint(buf, &mut i)?).ok()?;
                i = i.checked_add(len)?;
                f(field, i - len..i);
                if i > buf.len() {
                    return None;
                }
                continue;
            }
            5 => i = i.checked_add(4)?,
            _ => return None,
        }
        if i > buf.len() {
            return None;
        }
        f(field, start..i);
    }
    Some(())
}

/// Checks that the command of type `ty` inside the encoded `BaseCommand` carries every
/// `required` field. `base_command` must already have decoded successfully.
///
/// # Errors
/// [`ProtocolError::MissingRequiredField`] naming the first absent field.
pub fn check_required_fields(ty: Type, base_command: &[u8]) -> Result<(), ProtocolError> {
    let required = required_fields(ty);
    if required.is_empty() {
        return Ok(());
    }
    let cmd_field = ty as i32 as u32;
    let mut body = None;
    // prost already accepted the structure; a structural error here cannot happen.
    let _ = for_each_field(base_command, |field, range| {
        if field == cmd_field {
            body = Some(range); // protobuf merges repeats; the last occurrence is enough here
        }
    });
    let body = body.map_or(&[][..], |r| &base_command[r]);
    let mut seen = 0u64;
    let _ = for_each_field(body, |field, _| {
        if field < 64 {
            seen |= 1 << field;
        }
    });
    match required.iter().find(|f| seen & (1 << **f) == 0) {
        Some(&field) => Err(ProtocolError::MissingRequiredField {
            ty: ty.as_str_name(),
            field,
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::*;
    use crate::commands;
    use crate::pb;

    fn encoded(cmd: &pb::BaseCommand) -> Vec<u8> {
        cmd.encode_to_vec()
    }

    #[test]
    fn complete_commands_pass() {
        let cmd = commands::connected("x", 20, 1024);
        check_required_fields(Type::Connected, &encoded(&cmd)).unwrap();
        let cmd = commands::send_receipt(1, 2, None, 3, 4);
        check_required_fields(Type::SendReceipt, &encoded(&cmd)).unwrap();
        let cmd = commands::ping();
        check_required_fields(Type::Ping, &encoded(&cmd)).unwrap();
    }

    #[test]
    fn a_missing_required_field_is_reported() {
        // PRODUCER with producer_id only: topic (1) and request_id (3) are missing.
        let mut producer = Vec::new();
        prost::encoding::uint64::encode(2, &7, &mut producer);
        let mut base = Vec::new();
        prost::encoding::int32::encode(1, &(Type::Producer as i32), &mut base);
        prost::encoding::bytes::encode(5, &producer, &mut base);
        let e = check_required_fields(Type::Producer, &base).unwrap_err();
        assert!(
            matches!(
                e,
                ProtocolError::MissingRequiredField {
                    ty: "PRODUCER",
                    field: 1
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn zero_values_count_as_present() {
        let cmd = pb::BaseCommand {
            r#type: Type::Flow as i32,
            flow: Some(pb::CommandFlow {
                consumer_id: 0,
                message_permits: 0,
            }),
            ..Default::default()
        };
        check_required_fields(Type::Flow, &encoded(&cmd)).unwrap();
    }

    #[test]
    fn garbage_never_panics() {
        for len in 0..64u8 {
            let junk: Vec<u8> = (0..len).map(|i| i.wrapping_mul(37) ^ 0xa5).collect();
            let _ = check_required_fields(Type::Subscribe, &junk);
        }
    }
}
