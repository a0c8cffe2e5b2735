//! A warehouse on S3: Apache Iceberg's `Storage` over the offloader's S3 client (SigV4,
//! path-style for an S3-compatible endpoint, ranged reads, multipart writes), so that tables
//! on S3 need no second S3 stack. Paths are `s3://bucket/key`, as pyiceberg, Spark and Java's
//! `S3FileIO` write them.
//!
//! A file being written is held in memory up to [`PART_SIZE`], then sent as the parts of a
//! multipart upload; it exists on the store only once closed (an upload never completed is
//! aborted on a failure, or left for the bucket's lifecycle rule after a crash). No request
//! blocks a thread: the client is hyper's, on the caller's Tokio runtime.

use std::ops::Range;
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use futures::stream::BoxStream;
use futures::StreamExt;
use iceberg::io::{
    FileMetadata, FileRead, FileWrite, InputFile, OutputFile, Storage, StorageConfig,
    StorageFactory,
};
use iceberg::{Error, ErrorKind, Result};
use pulsar_rs_offload::config::Credentials;
use pulsar_rs_offload::s3::{S3Client, S3Error};
use serde::{Deserialize, Serialize};

use crate::config::S3Service;

/// The size of each part of a multipart upload (S3's minimum for all parts but the last is
/// 5 MiB; the offloader's blocks are 64 MiB: a table's files are smaller, so 8 MiB keeps a
/// writer's memory low).
pub const PART_SIZE: usize = 8 << 20;

/// The credentials of the warehouse's requests: `AWS_ACCESS_KEY_ID` and
/// `AWS_SECRET_ACCESS_KEY` (both set and non-empty), else none (unsigned requests).
fn environment_credentials() -> Option<Credentials> {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    var("AWS_ACCESS_KEY_ID")
        .zip(var("AWS_SECRET_ACCESS_KEY"))
        .map(|(access_key_id, secret_access_key)| Credentials {
            access_key_id,
            secret_access_key,
        })
}

fn iceberg_error(what: &str, e: &S3Error) -> Error {
    let kind = if e.not_found() {
        ErrorKind::DataInvalid
    } else {
        ErrorKind::Unexpected
    };
    Error::new(kind, format!("{what}: {e}")).with_retryable(e.retryable())
}

/// `s3://bucket/key` (also `s3a://`, `s3n://`, as Hadoop names them) as (bucket, key).
fn split(path: &str) -> Result<(&str, &str)> {
    let rest = ["s3://", "s3a://", "s3n://"]
        .iter()
        .find_map(|scheme| path.strip_prefix(scheme))
        .ok_or_else(|| {
            Error::new(
                ErrorKind::FeatureUnsupported,
                format!("{path}: not an s3:// path (the warehouse is on S3)"),
            )
        })?;
    match rest.split_once('/') {
        Some((bucket, key)) if !bucket.is_empty() && !key.is_empty() => Ok((bucket, key)),
        _ => Err(Error::new(
            ErrorKind::DataInvalid,
            format!("{path}: no bucket and key"),
        )),
    }
}

/// Builds [`S3Storage`] for the catalog's file IO (serialisable, as Iceberg's factories are).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct S3StorageFactory {
    service: S3Service,
}

impl S3StorageFactory {
    /// A factory for the warehouse's service.
    #[must_use]
    pub fn new(service: S3Service) -> Self {
        Self { service }
    }
}

#[typetag::serde]
impl StorageFactory for S3StorageFactory {
    fn build(&self, _config: &StorageConfig) -> Result<Arc<dyn Storage>> {
        let storage = S3Storage {
            service: self.service.clone(),
            client: OnceLock::new(),
        };
        storage.client()?;
        Ok(Arc::new(storage))
    }
}

/// Iceberg's storage on one S3 service. Serialised (Iceberg's storages are), it keeps the
/// service and leaves the credentials out: a deserialised one reads them from the environment.
#[derive(Debug, Serialize, Deserialize)]
pub struct S3Storage {
    service: S3Service,
    /// Built on first use (a deserialised storage has none yet); shared by every file of the
    /// storage (one connection pool). `OnceLock`: set once, read without a lock afterwards.
    #[serde(skip)]
    client: OnceLock<S3Client>,
}

impl S3Storage {
    fn client(&self) -> Result<&S3Client> {
        if let Some(c) = self.client.get() {
            return Ok(c);
        }
        let client = S3Client::new(
            self.service.endpoint.as_deref(),
            Some(&self.service.region),
            environment_credentials(),
        )
        .map_err(|e| Error::new(ErrorKind::Unexpected, format!("icebergS3Endpoint: {e}")))?;
        Ok(self.client.get_or_init(|| client))
    }

    fn shared(&self) -> Result<Arc<dyn Storage>> {
        Ok(Arc::new(S3Storage {
            service: self.service.clone(),
            client: self.client()?.clone().into(),
        }))
    }
}

#[async_trait]
#[typetag::serde]
impl Storage for S3Storage {
    async fn exists(&self, path: &str) -> Result<bool> {
        let (bucket, key) = split(path)?;
        let head = self.client()?.head_object(bucket, key).await;
        Ok(head.map_err(|e| iceberg_error(path, &e))?.is_some())
    }

    async fn metadata(&self, path: &str) -> Result<FileMetadata> {
        let (bucket, key) = split(path)?;
        match self.client()?.head_object(bucket, key).await {
            Ok(Some(head)) => Ok(FileMetadata { size: head.size }),
            Ok(None) => Err(Error::new(
                ErrorKind::DataInvalid,
                format!("{path}: no such object"),
            )),
            Err(e) => Err(iceberg_error(path, &e)),
        }
    }

    async fn read(&self, path: &str) -> Result<Bytes> {
        let (bucket, key) = split(path)?;
        let got = self.client()?.get_object(bucket, key, None).await;
        Ok(got.map_err(|e| iceberg_error(path, &e))?.body)
    }

    async fn reader(&self, path: &str) -> Result<Box<dyn FileRead>> {
        let (bucket, key) = split(path)?;
        Ok(Box::new(S3FileRead {
            client: self.client()?.clone(),
            bucket: bucket.to_owned(),
            key: key.to_owned(),
        }))
    }

    async fn write(&self, path: &str, bs: Bytes) -> Result<()> {
        let mut writer = self.writer(path).await?;
        writer.write(bs).await?;
        writer.close().await
    }

    async fn writer(&self, path: &str) -> Result<Box<dyn FileWrite>> {
        let (bucket, key) = split(path)?;
        Ok(Box::new(S3FileWrite {
            client: self.client()?.clone(),
            bucket: bucket.to_owned(),
            key: key.to_owned(),
            buffer: BytesMut::new(),
            upload: None,
            closed: false,
        }))
    }

    async fn delete(&self, path: &str) -> Result<()> {
        let (bucket, key) = split(path)?;
        let deleted = self.client()?.delete_object(bucket, key).await;
        deleted.map_err(|e| iceberg_error(path, &e))
    }

    async fn delete_prefix(&self, path: &str) -> Result<()> {
        let (bucket, key) = split(path)?;
        let prefix = format!("{}/", key.trim_end_matches('/'));
        let client = self.client()?;
        let keys = client.list_objects(bucket, &prefix).await;
        for k in keys.map_err(|e| iceberg_error(path, &e))? {
            let deleted = client.delete_object(bucket, &k).await;
            deleted.map_err(|e| iceberg_error(&k, &e))?;
        }
        Ok(())
    }

    async fn delete_stream(&self, mut paths: BoxStream<'static, String>) -> Result<()> {
        while let Some(path) = paths.next().await {
            self.delete(&path).await?;
        }
        Ok(())
    }

    fn new_input(&self, path: &str) -> Result<InputFile> {
        Ok(InputFile::new(self.shared()?, path.to_owned()))
    }

    fn new_output(&self, path: &str) -> Result<OutputFile> {
        Ok(OutputFile::new(self.shared()?, path.to_owned()))
    }
}

/// Ranged reads of one object.
struct S3FileRead {
    client: S3Client,
    bucket: String,
    key: String,
}

#[async_trait]
impl FileRead for S3FileRead {
    async fn read(&self, range: Range<u64>) -> Result<Bytes> {
        if range.is_empty() {
            return Ok(Bytes::new());
        }
        let want = range.end - range.start;
        let got = self
            .client
            .get_object(&self.bucket, &self.key, Some(range))
            .await
            .map_err(|e| iceberg_error(&self.key, &e))?;
        if got.body.len() as u64 != want {
            return Err(Error::new(
                ErrorKind::DataInvalid,
                format!(
                    "{}/{}: {} bytes read, {want} asked (the object is shorter)",
                    self.bucket,
                    self.key,
                    got.body.len()
                ),
            ));
        }
        Ok(got.body)
    }
}

/// An object being written: one PUT when it stays under [`PART_SIZE`], else a multipart upload.
struct S3FileWrite {
    client: S3Client,
    bucket: String,
    key: String,
    /// What the next part (or the single PUT) holds so far.
    buffer: BytesMut,
    /// The multipart upload once started: its id and the parts sent (number, ETag).
    upload: Option<(String, Vec<(i32, String)>)>,
    /// Closed, or failed: a write that failed lost a part, so nothing more may be written
    /// (closing then would store the object without it).
    closed: bool,
}

impl S3FileWrite {
    async fn send_part(&mut self, body: Bytes) -> Result<()> {
        let what = format!("{}/{}", self.bucket, self.key);
        if self.upload.is_none() {
            let started = self
                .client
                .create_multipart_upload(&self.bucket, &self.key, &Default::default())
                .await;
            match started {
                Ok(id) => self.upload = Some((id, Vec::new())),
                Err(e) => {
                    self.closed = true;
                    return Err(iceberg_error(&what, &e));
                }
            }
        }
        let Some((id, parts)) = self.upload.as_mut() else {
            return Ok(());
        };
        let number = i32::try_from(parts.len() + 1).unwrap_or(i32::MAX);
        match self
            .client
            .upload_part(&self.bucket, &self.key, id, number, body)
            .await
        {
            Ok(etag) => {
                parts.push((number, etag));
                Ok(())
            }
            Err(e) => {
                self.closed = true;
                self.abort().await;
                Err(iceberg_error(&what, &e))
            }
        }
    }

    /// Gives the store back a started upload's parts (a failure here leaves them to the
    /// bucket's lifecycle rule: nothing more can be done).
    async fn abort(&mut self) {
        if let Some((id, _)) = self.upload.take() {
            let _ = self
                .client
                .abort_multipart_upload(&self.bucket, &self.key, &id)
                .await;
        }
    }
}

#[async_trait]
impl FileWrite for S3FileWrite {
    async fn write(&mut self, bs: Bytes) -> Result<()> {
        if self.closed {
            return Err(Error::new(
                ErrorKind::Unexpected,
                "write to a closed or failed S3 file",
            ));
        }
        self.buffer.extend_from_slice(&bs);
        while self.buffer.len() >= PART_SIZE {
            let part = self.buffer.split_to(PART_SIZE).freeze();
            self.send_part(part).await?;
        }
        Ok(())
    }

    async fn close(&mut self) -> Result<()> {
        if self.closed {
            return Err(Error::new(
                ErrorKind::Unexpected,
                "S3 file closed twice, or after a failed write",
            ));
        }
        self.closed = true;
        let what = format!("{}/{}", self.bucket, self.key);
        let rest = std::mem::take(&mut self.buffer).freeze();
        if self.upload.is_none() {
            let put = self
                .client
                .put_object(&self.bucket, &self.key, rest, &Default::default())
                .await;
            return put.map_err(|e| iceberg_error(&what, &e));
        }
        if !rest.is_empty() {
            self.send_part(rest).await?;
        }
        let Some((id, parts)) = self.upload.take() else {
            return Ok(());
        };
        let done = self
            .client
            .complete_multipart_upload(&self.bucket, &self.key, &id, &parts)
            .await;
        if let Err(e) = done {
            self.upload = Some((id, parts));
            self.abort().await;
            return Err(iceberg_error(&what, &e));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_a_bucket_and_a_key() {
        assert_eq!(
            split("s3://b/wh/t/data/f.parquet").unwrap(),
            ("b", "wh/t/data/f.parquet")
        );
        assert_eq!(split("s3a://b/k").unwrap(), ("b", "k"));
        assert!(split("file:///tmp/x").is_err());
        assert!(split("s3://b").is_err());
        assert!(split("s3:///k").is_err());
    }

    /// A part that could not be sent ends the file: closing it afterwards must not store the
    /// object without that part (here the service refuses every connection).
    #[test]
    fn a_file_whose_part_failed_is_not_stored_by_its_close() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let storage = S3StorageFactory::new(S3Service {
                endpoint: Some("http://127.0.0.1:1".into()),
                region: "us-east-1".into(),
            })
            .build(&StorageConfig::new())
            .unwrap();
            let mut file = storage.writer("s3://b/k.parquet").await.unwrap();
            assert!(file
                .write(Bytes::from(vec![0u8; PART_SIZE + 1]))
                .await
                .is_err());
            let closed = file.close().await.unwrap_err();
            assert!(
                closed.to_string().contains("after a failed write"),
                "{closed}"
            );
        });
    }
}
