//! An offloaded ledger open for reading (Pulsar's `BlobStoreBackedReadHandleImpl`): the index
//! is read whole once; entries come from ranged GETs of the data object, `readBufferSize` bytes
//! at a time, each checked for the format version.
//!
//! A read seeks to its first entry from where the previous read stopped when that is on the
//! way, else from the block the sparse index names, skipping entries forward; negative lengths
//! are padding (jump to the next block). The last buffer read serves the next reads (sequential
//! reads re-use it as a read-ahead).

use std::sync::Arc;

use bytes::Bytes;
use pulsar_rs_ledger::{LedgerError, OffloadedLedger, Result};

use crate::format::block::ENTRY_HEADER_LEN;
use crate::format::index::{self, OffloadIndex};
use crate::format::names;
use crate::retry::retry;
use crate::s3::GetObject;
use crate::shared::{offload_error, Core};

/// What one ledger's reads share: the last buffer and where the last read stopped.
#[derive(Default)]
struct ReadState {
    /// Data-object offset of `buf`'s first byte.
    buf_start: u64,
    /// The last range read.
    buf: Bytes,
    /// `(entry, offset)`: the entry after the last one read, and where it starts.
    next: Option<(i64, u64)>,
}

/// An offloaded ledger.
pub struct BlobStoreBackedLedger {
    core: Arc<Core>,
    bucket: String,
    data_key: String,
    ledger_id: i64,
    index: Arc<OffloadIndex>,
    /// Reads of one ledger are serialized (as Pulsar's on one executor thread), sharing the
    /// buffer; an async mutex because it is held across the GETs.
    state: Arc<tokio::sync::Mutex<ReadState>>,
}

fn check_version(what: &str, got: &GetObject) -> Result<()> {
    match got.metadata.get(names::METADATA_FORMAT_VERSION_KEY) {
        Some(v) if v == names::CURRENT_VERSION => Ok(()),
        other => Err(LedgerError::Offload {
            context: format!(
                "{what}: Invalid object version: {}={other:?}, expected {}",
                names::METADATA_FORMAT_VERSION_KEY,
                names::CURRENT_VERSION
            ),
        }),
    }
}

impl BlobStoreBackedLedger {
    /// Reads and parses the index of ledger `ledger_id` offloaded under `uid` to `bucket`.
    pub(crate) fn open(core: Arc<Core>, bucket: String, ledger_id: i64, uid: u128) -> Result<Self> {
        let index_key = names::index_key(uid, ledger_id);
        let (c, bk, ik) = (core.client.clone(), bucket.clone(), index_key.clone());
        let got = core.block(async move {
            retry(|| c.get_object(&bk, &ik, None)).await.map_err(|e| {
                if e.not_found() {
                    LedgerError::Offload {
                        context: format!(
                            "offloaded ledger {ledger_id} does not exist: no index object \
                             {bk}/{ik} ({e})"
                        ),
                    }
                } else {
                    offload_error(
                        &format!("reading the index of offloaded ledger {ledger_id}"),
                        &e,
                    )
                }
            })
        })?;
        let what = format!("index object {bucket}/{index_key}");
        check_version(&what, &got)?;
        let index = index::parse(&got.body).map_err(|e| LedgerError::Offload {
            context: format!("{what}: {e}"),
        })?;
        Ok(BlobStoreBackedLedger {
            core,
            bucket,
            data_key: names::data_key(uid, ledger_id),
            ledger_id,
            index: Arc::new(index),
            state: Arc::new(tokio::sync::Mutex::new(ReadState::default())),
        })
    }

    /// The parsed index.
    #[must_use]
    pub fn index(&self) -> &OffloadIndex {
        &self.index
    }
}

/// The reading side of one call: the state, the index and the data object.
struct Cursor<'a> {
    st: &'a mut ReadState,
    core: &'a Core,
    bucket: &'a str,
    key: &'a str,
    index: &'a OffloadIndex,
}

impl Cursor<'_> {
    /// Bytes `pos..pos + n` of the data object, from the buffer or a new ranged GET of at least
    /// `readBufferSize` bytes.
    async fn bytes(&mut self, pos: u64, n: u64) -> Result<Bytes> {
        let end = pos + n;
        let len = self.index.data_object_length;
        if end > len {
            return Err(LedgerError::Offload {
                context: format!(
                    "data object {}/{}: bytes {pos}..{end} are past its length {len}",
                    self.bucket, self.key
                ),
            });
        }
        let have = self.st.buf_start..self.st.buf_start + self.st.buf.len() as u64;
        if pos >= have.start && end <= have.end {
            let from = usize::try_from(pos - have.start).expect("in buffer");
            return Ok(self
                .st
                .buf
                .slice(from..from + usize::try_from(n).expect("in buffer")));
        }
        let fetch_end = len.min(pos + n.max(self.core.config.read_buffer_size));
        let (c, bk, k) = (self.core.client.clone(), self.bucket, self.key);
        let got = retry(|| c.get_object(bk, k, Some(pos..fetch_end)))
            .await
            .map_err(|e| offload_error("reading an offloaded ledger", &e))?;
        check_version(&format!("data object {bk}/{k}"), &got)?;
        if got.body.len() as u64 != fetch_end - pos {
            return Err(LedgerError::Offload {
                context: format!(
                    "data object {bk}/{k}: asked bytes {pos}..{fetch_end}, got {} bytes",
                    got.body.len()
                ),
            });
        }
        self.st.buf_start = pos;
        self.st.buf = got.body;
        Ok(self.st.buf.slice(0..usize::try_from(n).expect("fetched")))
    }
}

impl BlobStoreBackedLedger {
    // Owned pieces of `self`: the future runs on the offloader's runtime, past `&self`.
    #[allow(clippy::too_many_arguments)]
    async fn read_async(
        core: Arc<Core>,
        bucket: String,
        key: String,
        index: Arc<OffloadIndex>,
        state: Arc<tokio::sync::Mutex<ReadState>>,
        ledger_id: i64,
        first: i64,
        last: i64,
    ) -> Result<Vec<Bytes>> {
        // Held for the whole read: one ledger's reads are serialized and share the buffer.
        let mut st = state.lock().await;
        let floor = index.floor(first).ok_or_else(|| LedgerError::Offload {
            context: format!("offloaded ledger {ledger_id}: no block holds entry {first}"),
        })?;
        let header = index.data_header_length;
        // From where the last read stopped if that is in this entry's block and not past it.
        let mut pos = match st.next {
            Some((e, p)) if e <= first && e >= floor.first_entry_id => p,
            _ => floor.block_offset + header,
        };
        let mut cur = Cursor {
            st: &mut st,
            core: &core,
            bucket: &bucket,
            key: &key,
            index: &index,
        };
        let mut out = Vec::with_capacity(usize::try_from(last - first + 1).unwrap_or(0));
        let mut wanted = first;
        let not_found = |wanted: i64, pos: u64| LedgerError::Offload {
            context: format!(
                "offloaded ledger {ledger_id}: entry {wanted} not found (reached offset {pos} of \
                 the data object {bucket}/{key})"
            ),
        };
        while wanted <= last {
            // A block filled to its last byte ends where the next one's header starts.
            if index.entries.iter().any(|e| e.block_offset == pos) {
                pos += header;
                continue;
            }
            let block_end = index.block_end(pos);
            let at_padding = if pos + 4 > block_end {
                true
            } else {
                let len = cur.bytes(pos, 4).await?;
                i32::from_be_bytes(len[..].try_into().expect("4 bytes")) < 0
            };
            if at_padding {
                pos = index
                    .next_block_offset(pos)
                    .map(|o| o + header)
                    .ok_or_else(|| not_found(wanted, pos))?;
                continue;
            }
            if pos + ENTRY_HEADER_LEN > block_end {
                return Err(not_found(wanted, pos));
            }
            let h = cur.bytes(pos, ENTRY_HEADER_LEN).await?;
            let len = u64::from(u32::from_be_bytes(h[0..4].try_into().expect("4 bytes")));
            let id = i64::from_be_bytes(h[4..12].try_into().expect("8 bytes"));
            let payload = pos + ENTRY_HEADER_LEN;
            if payload + len > block_end {
                return Err(LedgerError::Offload {
                    context: format!(
                        "offloaded ledger {ledger_id}: entry {id} at offset {pos} ({len} bytes) \
                         runs past its block's end {block_end}"
                    ),
                });
            }
            if id == wanted {
                out.push(cur.bytes(payload, len).await?);
                wanted += 1;
            } else if id > wanted {
                return Err(LedgerError::Offload {
                    context: format!(
                        "offloaded ledger {ledger_id}: found entry {id} at offset {pos} where \
                         entry {wanted} was expected"
                    ),
                });
            }
            pos = payload + len;
        }
        cur.st.next = Some((wanted, pos));
        Ok(out)
    }
}

impl OffloadedLedger for BlobStoreBackedLedger {
    fn last_entry_id(&self) -> i64 {
        self.index.metadata.last_entry_id
    }

    fn length(&self) -> u64 {
        self.index.metadata.length
    }

    fn read(&self, first: i64, last: i64) -> Result<Vec<Bytes>> {
        if first < 0 || first > last || last > self.last_entry_id() {
            return Err(LedgerError::Offload {
                context: format!(
                    "offloaded ledger {}: entries {first}..={last} are out of 0..={}",
                    self.ledger_id,
                    self.last_entry_id()
                ),
            });
        }
        self.core.block(Self::read_async(
            self.core.clone(),
            self.bucket.clone(),
            self.data_key.clone(),
            self.index.clone(),
            self.state.clone(),
            self.ledger_id,
            first,
            last,
        ))
    }
}
