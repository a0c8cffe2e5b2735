//! BookKeeper's v2 wire protocol (`BookieProtocol`, `BookieProtoEncoding.RequestEnDeCoderPreV3` /
//! `ResponseEnDeCoderPreV3`), the one Pulsar uses by default (`bookkeeperUseV2WireProtocol=true`).
//!
//! Every frame is a 4-byte big-endian length then the body. A body starts with the packet header
//! `version << 24 | opCode << 16 | flags` (version 2). Requests:
//! * ADD_ENTRY: header, master key (20 bytes), then the stored entry (digest header, digest, payload);
//!   the bookie takes the ledger and entry ids from the entry itself.
//! * READ_ENTRY: header, ledger id, entry id (-1 = the last entry the bookie has), and the master key
//!   only when the DO_FENCING flag is set.
//!
//! Responses: header, rc, ledger id, entry id, and for reads the stored entry bytes. A v2 bookie
//! decodes no READ_LAC request (its pre-v3 decoder knows only add, read, batch read and auth), so the
//! LAC is read the way v2 recovery reads it: READ_ENTRY of entry -1, whose stored entry carries the
//! piggybacked LAC.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::digest::MASTER_KEY_LENGTH;
use crate::error::{BkError, Result};

/// `BookieProtocol.CURRENT_PROTOCOL_VERSION`.
pub const PROTOCOL_VERSION: u8 = 2;
/// Opcodes.
pub const ADD_ENTRY: u8 = 1;
pub const READ_ENTRY: u8 = 2;
/// Flags.
pub const FLAG_NONE: u16 = 0;
pub const FLAG_DO_FENCING: u16 = 0x1;
pub const FLAG_RECOVERY_ADD: u16 = 0x2;
/// Entry id that asks a bookie for the last entry it holds (`BookieProtocol.LAST_ADD_CONFIRMED`).
pub const LAST_ADD_CONFIRMED: i64 = -1;
/// Largest frame we accept from a bookie.
pub const MAX_FRAME: usize = 16 * 1024 * 1024;
/// Largest frame a bookie accepts by default (`nettyMaxFrameSizeBytes`, 5 MiB); a larger ADD makes
/// the bookie drop the connection, which would look like a failed bookie.
pub const BOOKIE_MAX_FRAME: usize = 5 * 1024 * 1024;
/// Bytes an ADD frame adds to the payload: length, header, master key, entry header, CRC32C.
pub const ADD_OVERHEAD: usize = 4 + 4 + MASTER_KEY_LENGTH + 32 + 4;

/// The packet header int.
pub fn packet_header(op: u8, flags: u16) -> u32 {
    (u32::from(PROTOCOL_VERSION) << 24) | (u32::from(op) << 16) | u32::from(flags)
}

/// A v2 request ready to be framed.
#[derive(Debug, Clone)]
pub enum Request {
    /// Add a digest-framed entry (see `digest::package_entry`).
    Add {
        flags: u16,
        master_key: [u8; MASTER_KEY_LENGTH],
        ledger_id: i64,
        entry_id: i64,
        stored: Bytes,
    },
    /// Read one entry; with `fence` the master key goes along and the bookie fences the ledger.
    Read {
        ledger_id: i64,
        entry_id: i64,
        fence: Option<[u8; MASTER_KEY_LENGTH]>,
    },
}

impl Request {
    /// What its response will be matched on.
    pub fn key(&self) -> ResponseKey {
        match self {
            Request::Add {
                ledger_id,
                entry_id,
                ..
            } => ResponseKey {
                op: ADD_ENTRY,
                ledger_id: *ledger_id,
                entry_id: *entry_id,
            },
            Request::Read {
                ledger_id,
                entry_id,
                ..
            } => ResponseKey {
                op: READ_ENTRY,
                ledger_id: *ledger_id,
                entry_id: *entry_id,
            },
        }
    }

    /// Appends the framed request to `out`.
    pub fn encode(&self, out: &mut BytesMut) {
        match self {
            Request::Add {
                flags,
                master_key,
                stored,
                ..
            } => {
                out.put_u32((4 + MASTER_KEY_LENGTH + stored.len()) as u32);
                out.put_u32(packet_header(ADD_ENTRY, *flags));
                out.put_slice(master_key);
                out.put_slice(stored);
            }
            Request::Read {
                ledger_id,
                entry_id,
                fence,
            } => {
                let len = 4
                    + 16
                    + if fence.is_some() {
                        MASTER_KEY_LENGTH
                    } else {
                        0
                    };
                out.put_u32(len as u32);
                let flags = if fence.is_some() {
                    FLAG_DO_FENCING
                } else {
                    FLAG_NONE
                };
                out.put_u32(packet_header(READ_ENTRY, flags));
                out.put_i64(*ledger_id);
                out.put_i64(*entry_id);
                if let Some(key) = fence {
                    out.put_slice(key);
                }
            }
        }
    }
}

/// How a v2 response is matched to its request: v2 has no request id, so (op, ledger, entry) it is,
/// as in `PerChannelBookieClient`'s completion keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ResponseKey {
    pub op: u8,
    pub ledger_id: i64,
    pub entry_id: i64,
}

/// A decoded v2 response.
#[derive(Debug, Clone)]
pub struct Response {
    pub key: ResponseKey,
    pub rc: i32,
    /// For reads with rc=EOK: the stored entry bytes.
    pub body: Bytes,
}

/// Takes one complete frame off the front of `buf`, if there is one.
pub fn decode_response(buf: &mut BytesMut) -> Result<Option<Response>> {
    if buf.len() < 4 {
        return Ok(None);
    }
    let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
    if len > MAX_FRAME {
        return Err(BkError::Protocol(format!("frame of {len} bytes")));
    }
    if buf.len() < 4 + len {
        return Ok(None);
    }
    buf.advance(4);
    let mut body = buf.split_to(len).freeze();
    if body.len() < 24 {
        return Err(BkError::Protocol(format!(
            "response of {} bytes",
            body.len()
        )));
    }
    let header = body.get_u32();
    let version = (header >> 24) as u8;
    let op = ((header >> 16) & 0xff) as u8;
    if version != PROTOCOL_VERSION || !(op == ADD_ENTRY || op == READ_ENTRY) {
        return Err(BkError::Protocol(format!(
            "unexpected response header {header:#x}"
        )));
    }
    let rc = body.get_i32();
    let ledger_id = body.get_i64();
    let entry_id = body.get_i64();
    Ok(Some(Response {
        key: ResponseKey {
            op,
            ledger_id,
            entry_id,
        },
        rc,
        body,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::{master_key, package_entry};

    #[test]
    fn add_frame_matches_bookkeeper() {
        // The full v2 ADD frame printed by BookKeeper 4.17.2 (see digest.rs tests).
        let stored = package_entry(crate::DigestType::Crc32c, 7, 3, 2, 1234, b"hello, bookie");
        let req = Request::Add {
            flags: 0,
            master_key: master_key(b""),
            ledger_id: 7,
            entry_id: 3,
            stored,
        };
        let mut out = BytesMut::new();
        req.encode(&mut out);
        let hex: String = out.iter().map(|x| format!("{x:02x}")).collect();
        assert_eq!(
            hex,
            "0000004902010000850bf1071c5e3d8c24235676f8816ae0cbe2f14f000000000000000700000000000000030000\
             00000000000200000000000004d2d581685068656c6c6f2c20626f6f6b6965"
        );
    }

    #[test]
    fn read_frames() {
        let mut out = BytesMut::new();
        Request::Read {
            ledger_id: 5,
            entry_id: -1,
            fence: None,
        }
        .encode(&mut out);
        assert_eq!(&out[..8], &[0, 0, 0, 20, 2, 2, 0, 0]);
        out.clear();
        Request::Read {
            ledger_id: 5,
            entry_id: -1,
            fence: Some([9; 20]),
        }
        .encode(&mut out);
        assert_eq!(out.len(), 4 + 40);
        assert_eq!(&out[..8], &[0, 0, 0, 40, 2, 2, 0, 1]);
    }

    #[test]
    fn decodes_split_responses() {
        let mut wire = BytesMut::new();
        wire.put_u32(24);
        wire.put_u32(packet_header(ADD_ENTRY, 0));
        wire.put_i32(104);
        wire.put_i64(5);
        wire.put_i64(9);
        let mut buf = BytesMut::from(&wire[..10]);
        assert!(decode_response(&mut buf).unwrap().is_none());
        buf.extend_from_slice(&wire[10..]);
        let r = decode_response(&mut buf).unwrap().unwrap();
        assert_eq!(
            (r.key.op, r.key.ledger_id, r.key.entry_id, r.rc),
            (ADD_ENTRY, 5, 9, 104)
        );
        assert!(buf.is_empty());
    }
}
