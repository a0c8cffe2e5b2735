//! [`BlobStoreOffloader`]: Pulsar's `BlobStoreManagedLedgerOffloader` for S3-compatible stores.
//!
//! An offload writes the data object `{uuid}-ledger-{ledgerId}` as one multipart upload, one
//! block per part, in order, reading the ledger in small batches so that about one block is in
//! memory; then the index `{uuid}-ledger-{ledgerId}-index` in one PUT. A failed upload is
//! aborted, and a failed index PUT deletes the data object, so nothing is left behind.
//!
//! The calls block their caller (never a Tokio worker): the S3 requests run on the offloader's
//! own runtime (`managedLedgerOffloadMaxThreads` threads) and the caller waits on a channel.

use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use pulsar_rs_ledger::offload::uuid_string;
use pulsar_rs_ledger::{LedgerError, LedgerOffloader, OffloadSource, OffloadedLedger, Result};

use crate::config::OffloadConfig;
use crate::format::block::{self, BlockBuilder};
use crate::format::index::{self, IndexEntry};
use crate::format::{metadata, names};
use crate::reader::BlobStoreBackedLedger;
use crate::retry::retry;
use crate::s3::S3Client;
use crate::shared::{offload_error, Core};

/// Most entries read from the ledger at once.
const MAX_READ_BATCH: i64 = 100;

/// The bucket of an offloaded ledger: the one recorded with it, else the configured one.
pub(crate) fn bucket_of(
    config: &OffloadConfig,
    driver_metadata: &BTreeMap<String, String>,
) -> String {
    driver_metadata
        .get("bucket")
        .filter(|b| !b.is_empty())
        .cloned()
        .or_else(|| config.bucket.clone())
        .unwrap_or_default()
}

/// The offloader of one driver configuration.
pub struct BlobStoreOffloader {
    core: Arc<Core>,
}

impl std::fmt::Debug for BlobStoreOffloader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlobStoreOffloader")
            .field("driver", &self.core.config.driver)
            .field("bucket", &self.core.config.bucket)
            .field("client", &self.core.client)
            .finish()
    }
}

impl BlobStoreOffloader {
    /// An offloader for `config`, with its own runtime.
    ///
    /// # Errors
    /// [`LedgerError::Offload`]: a bad configuration, or the runtime could not start.
    pub fn new(config: OffloadConfig) -> Result<Self> {
        config.validate()?;
        let client = S3Client::new(
            config.service_endpoint.as_deref(),
            config.region.as_deref(),
            config.credentials.clone(),
        )
        .map_err(|context| LedgerError::Offload { context })?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(config.max_threads.max(1))
            .thread_name("offload-s3")
            .enable_all()
            .build()
            .map_err(|e| LedgerError::Offload {
                context: format!("cannot start the offloader's runtime: {e}"),
            })?;
        let handle = runtime.handle().clone();
        Ok(BlobStoreOffloader {
            core: Arc::new(Core {
                base_metadata: BTreeMap::new(),
                runtime: Some(runtime),
                handle,
                client,
                config,
            }),
        })
    }

    /// Adds user metadata to every object written from now on, under Pulsar's names
    /// (`PulsarClusterName`, `S3ManagedLedgerOffloaderSoftwareVersion`, ...), as Pulsar's broker
    /// adds its own; only while this offloader is not shared yet.
    #[must_use]
    pub fn with_base_metadata(mut self, base: BTreeMap<String, String>) -> Self {
        if let Some(core) = Arc::get_mut(&mut self.core) {
            core.base_metadata = base;
        }
        self
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &OffloadConfig {
        &self.core.config
    }

    /// Runs `f` with the client on the offloader's runtime (for tools and tests: listing,
    /// creating the bucket, raw reads).
    ///
    /// # Errors
    /// What `f` returns.
    pub fn with_client<T, F, Fut>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(S3Client) -> Fut,
        Fut: Future<Output = Result<T>> + Send + 'static,
    {
        self.core.block(f(self.core.client.clone()))
    }

    /// The user metadata of both objects (`role` aside): Pulsar's keys, lower-cased.
    fn user_metadata(extra: &BTreeMap<String, String>) -> BTreeMap<String, String> {
        let mut m: BTreeMap<String, String> = extra
            .iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v.clone()))
            .collect();
        m.entry(names::METADATA_SOFTWARE_VERSION.into())
            .or_insert_with(|| env!("CARGO_PKG_VERSION").into());
        m.entry(names::METADATA_SOFTWARE_GIT_SHA.into())
            .or_insert_with(|| "unknown".into());
        m.entry(names::METADATA_CLUSTER_NAME.into())
            .or_insert_with(|| "unknown".into());
        m.entry(names::METADATA_ML_NAME.into()).or_default();
        m.insert(
            names::METADATA_FORMAT_VERSION_KEY.into(),
            names::CURRENT_VERSION.into(),
        );
        m
    }

    /// Uploads the blocks; the index entries and the data object's length and entry bytes.
    /// `upload` is set once the multipart upload exists (so that the caller can abort it).
    fn upload_blocks(
        &self,
        source: &dyn OffloadSource,
        bucket: &str,
        key: &str,
        data_meta: &BTreeMap<String, String>,
        upload: &mut Option<String>,
    ) -> Result<(Vec<IndexEntry>, u64, u64)> {
        let ledger_id = source.ledger_id();
        let last = source.last_entry_id();
        let length = source.length();
        let max_block = self.core.config.max_block_size;
        let max_entry = block::max_entry_size(max_block);
        // About one block's worth of entries per read, at most MAX_READ_BATCH.
        let avg = length / u64::try_from(last + 1).unwrap_or(1).max(1);
        let batch = i64::try_from(max_block / avg.max(1))
            .unwrap_or(MAX_READ_BATCH)
            .clamp(1, MAX_READ_BATCH);
        let mut pending: VecDeque<(i64, Bytes)> = VecDeque::new();
        let mut next_to_read = 0i64;
        let mut next_entry = 0i64;
        let mut bytes_written = 0u64;
        let mut offset = 0u64;
        let mut parts: Vec<(i32, String)> = Vec::new();
        let mut entries = Vec::new();
        while next_entry <= last {
            let size =
                block::calculate_block_size(max_block, last, next_entry, length, bytes_written);
            let mut b = BlockBuilder::new(size, next_entry);
            loop {
                if pending.is_empty() && next_to_read <= last {
                    let to = (next_to_read + batch - 1).min(last);
                    let got = source.read(next_to_read, to)?;
                    let want = usize::try_from(to - next_to_read + 1).unwrap_or(0);
                    if got.len() != want {
                        return Err(LedgerError::Offload {
                            context: format!(
                                "ledger {ledger_id}: reading entries {next_to_read}..={to} \
                                 returned {} entries",
                                got.len()
                            ),
                        });
                    }
                    pending.extend((next_to_read..=to).zip(got));
                    next_to_read = to + 1;
                }
                let Some((id, e)) = pending.front() else {
                    break;
                };
                if e.len() as u64 > max_entry {
                    return Err(LedgerError::Offload {
                        context: format!(
                            "ledger {ledger_id}: entry {id} has {} bytes, more than the {max_entry} \
                             a block of managedLedgerOffloadMaxBlockSizeInBytes={max_block} holds",
                            e.len()
                        ),
                    });
                }
                if !b.fits(e.len()) {
                    break;
                }
                b.push(*id, e);
                next_entry = id + 1;
                pending.pop_front();
            }
            if b.entries() == 0 {
                return Err(LedgerError::Offload {
                    context: format!(
                        "ledger {ledger_id}: entry {next_entry} does not fit the block of {size} \
                         bytes computed from the ledger's length {length} (the length is less \
                         than its entries' bytes)"
                    ),
                });
            }
            bytes_written += b.entry_bytes();
            let first = b.first_entry_id();
            let data = b.finish();
            if upload.is_none() {
                let (c, bk, k, m) = (
                    self.core.client.clone(),
                    bucket.to_string(),
                    key.to_string(),
                    data_meta.clone(),
                );
                let id = self.core.block(async move {
                    retry(|| c.create_multipart_upload(&bk, &k, &m))
                        .await
                        .map_err(|e| offload_error("starting the data object's upload", &e))
                })?;
                *upload = Some(id);
            }
            let part = i32::try_from(parts.len() + 1).expect("under 2^31 parts");
            let (c, bk, k, u) = (
                self.core.client.clone(),
                bucket.to_string(),
                key.to_string(),
                upload.clone().unwrap_or_default(),
            );
            let etag = self.core.block(async move {
                retry(|| c.upload_part(&bk, &k, &u, part, data.clone()))
                    .await
                    .map_err(|e| offload_error(&format!("uploading block {part}"), &e))
            })?;
            parts.push((part, etag));
            entries.push(IndexEntry {
                first_entry_id: first,
                part_id: part,
                block_offset: offset,
            });
            offset += size;
        }
        let (c, bk, k, u) = (
            self.core.client.clone(),
            bucket.to_string(),
            key.to_string(),
            upload.clone().unwrap_or_default(),
        );
        self.core.block(async move {
            retry(|| c.complete_multipart_upload(&bk, &k, &u, &parts))
                .await
                .map_err(|e| offload_error("completing the data object's upload", &e))
        })?;
        Ok((entries, offset, bytes_written))
    }
}

impl LedgerOffloader for BlobStoreOffloader {
    fn driver_name(&self) -> &str {
        self.core.config.driver.name()
    }

    fn driver_metadata(&self) -> BTreeMap<String, String> {
        self.core.config.driver_metadata()
    }

    fn offload(
        &self,
        source: &dyn OffloadSource,
        uid: u128,
        extra_metadata: &BTreeMap<String, String>,
    ) -> Result<()> {
        let ledger_id = source.ledger_id();
        let last = source.last_entry_id();
        if last < 0 {
            return Err(LedgerError::Offload {
                context: format!("ledger {ledger_id} is empty: nothing to offload"),
            });
        }
        let bucket = self.core.config.bucket.clone().unwrap_or_default();
        let data_key = names::data_key(uid, ledger_id);
        let index_key = names::index_key(uid, ledger_id);
        let mut extra = self.core.base_metadata.clone();
        extra.extend(extra_metadata.iter().map(|(k, v)| (k.clone(), v.clone())));
        let base = Self::user_metadata(&extra);
        let ml_name = base
            .get(names::METADATA_ML_NAME)
            .cloned()
            .unwrap_or_default();
        let mut data_meta = base.clone();
        data_meta.insert(names::METADATA_ROLE.into(), names::ROLE_DATA.into());
        let mut index_meta = base;
        index_meta.insert(names::METADATA_ROLE.into(), names::ROLE_INDEX.into());

        let mut upload = None;
        let uploaded = self.upload_blocks(source, &bucket, &data_key, &data_meta, &mut upload);
        let (entries, data_len, entry_bytes) = match uploaded {
            Ok(v) => v,
            Err(e) => {
                if let Some(u) = upload {
                    let (c, bk, k) = (self.core.client.clone(), bucket.clone(), data_key.clone());
                    let aborted = self.core.block(async move {
                        retry(|| c.abort_multipart_upload(&bk, &k, &u))
                            .await
                            .map_err(|e| offload_error("aborting the upload", &e))
                    });
                    if let Err(a) = aborted {
                        tracing::warn!(ledger_id, error = %a, "could not abort a failed offload's upload");
                    }
                }
                return Err(e);
            }
        };
        let meta = metadata::build(last, entry_bytes, source.created_ms(), &ml_name);
        let body = Bytes::from(index::encode(data_len, block::HEADER_LEN, &entries, &meta));
        let (c, bk, ik, dk) = (
            self.core.client.clone(),
            bucket.clone(),
            index_key,
            data_key,
        );
        self.core.block(async move {
            let put = retry(|| c.put_object(&bk, &ik, body.clone(), &index_meta)).await;
            if let Err(e) = put {
                if let Err(d) = retry(|| c.delete_object(&bk, &dk)).await {
                    tracing::warn!(error = %d, "could not delete the data object of a failed offload");
                }
                return Err(offload_error("writing the index object", &e));
            }
            Ok(())
        })?;
        tracing::info!(
            ledger_id,
            uuid = %uuid_string(uid),
            blocks = entries.len(),
            bytes = data_len,
            "offloaded ledger"
        );
        Ok(())
    }

    fn open_offloaded(
        &self,
        ledger_id: i64,
        uid: u128,
        driver_metadata: &BTreeMap<String, String>,
    ) -> Result<Arc<dyn OffloadedLedger>> {
        let bucket = bucket_of(&self.core.config, driver_metadata);
        let ledger = BlobStoreBackedLedger::open(self.core.clone(), bucket, ledger_id, uid)?;
        Ok(Arc::new(ledger))
    }

    fn delete_offloaded(
        &self,
        ledger_id: i64,
        uid: u128,
        driver_metadata: &BTreeMap<String, String>,
    ) -> Result<()> {
        let bucket = bucket_of(&self.core.config, driver_metadata);
        let c = self.core.client.clone();
        let keys = [
            names::data_key(uid, ledger_id),
            names::index_key(uid, ledger_id),
        ];
        self.core.block(async move {
            for k in &keys {
                retry(|| c.delete_object(&bucket, k)).await.map_err(|e| {
                    offload_error(&format!("deleting offloaded ledger {ledger_id}"), &e)
                })?;
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_metadata_is_pulsars() {
        let extra = BTreeMap::from([(
            "ManagedLedgerName".to_string(),
            "public/default/persistent/t".to_string(),
        )]);
        let m = BlobStoreOffloader::user_metadata(&extra);
        assert_eq!(m["s3managedledgeroffloaderformatversion"], "1");
        assert_eq!(m["managedledgername"], "public/default/persistent/t");
        assert!(m.contains_key("s3managedledgeroffloadersoftwareversion"));
        assert!(m.contains_key("s3managedledgeroffloadersoftwaregitsha"));
        assert!(m.contains_key("pulsarclustername"));
        assert_eq!(m.len(), 5);
    }
}
