//! The offloader's configuration from Pulsar's broker keys (`TieredStorageConfiguration`,
//! `JCloudBlobStoreProvider`): the driver, bucket, region, endpoint, block and read-buffer
//! sizes, thread counts and credentials.
//!
//! Keys are looked up as Pulsar does: for `aws-s3` the `s3ManagedLedgerOffload*` name first,
//! then the universal `managedLedgerOffload*` name; the other drivers read only the latter. A
//! key set to an empty value counts as unset.
//!
//! Deviation from Pulsar: with no credentials at all, requests go unsigned (anonymous) and a
//! warning is logged, where Pulsar refuses to start the `S3` driver.

use std::collections::BTreeMap;

use pulsar_rs_ledger::LedgerError;

/// `managedLedgerOffloadDriver`.
pub const DRIVER_KEY: &str = "managedLedgerOffloadDriver";
const MIB: u64 = 1024 * 1024;
/// The default and smallest maximum block size.
pub const DEFAULT_MAX_BLOCK_SIZE: u64 = 64 * MIB;
/// The smallest maximum block size (S3's smallest multipart part).
pub const MIN_BLOCK_SIZE: u64 = 5 * MIB;
/// The default read buffer.
pub const DEFAULT_READ_BUFFER_SIZE: u64 = MIB;

/// A supported driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Driver {
    /// `S3`: any S3-compatible store (needs an endpoint).
    S3,
    /// `aws-s3`: Amazon S3 (a region or an endpoint).
    AwsS3,
    /// `aliyun-oss`: Aliyun OSS through its S3-compatible API.
    AliyunOss,
}

impl Driver {
    /// Parses a driver name, case-insensitively.
    ///
    /// # Errors
    /// A driver pulsar-rs does not implement.
    pub fn parse(name: &str) -> Result<Driver, LedgerError> {
        match name.trim().to_ascii_lowercase().as_str() {
            "s3" => Ok(Driver::S3),
            "aws-s3" => Ok(Driver::AwsS3),
            "aliyun-oss" => Ok(Driver::AliyunOss),
            _ => Err(LedgerError::Offload {
                context: format!(
                    "driver {name} is not supported by pulsar-rs; supported: S3, aws-s3"
                ),
            }),
        }
    }

    /// The driver's name as Pulsar records it in the offload context (`getDriver`).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Driver::S3 => "S3",
            Driver::AwsS3 => "aws-s3",
            Driver::AliyunOss => "aliyun-oss",
        }
    }

    /// The Java enum constant Pulsar records as `managedLedgerOffloadDriver` in the driver
    /// metadata.
    #[must_use]
    pub fn enum_name(self) -> &'static str {
        match self {
            Driver::S3 => "S3",
            Driver::AwsS3 => "AWS_S3",
            Driver::AliyunOss => "ALIYUN_OSS",
        }
    }
}

/// An access key pair for SigV4.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The access key id.
    pub access_key_id: String,
    /// The secret access key.
    pub secret_access_key: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key_id", &self.access_key_id)
            .finish_non_exhaustive()
    }
}

/// What the offloader needs to reach its store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffloadConfig {
    /// The driver.
    pub driver: Driver,
    /// The bucket written to (reads take the bucket recorded with each ledger).
    pub bucket: Option<String>,
    /// The region (signing region; Amazon's host when there is no endpoint).
    pub region: Option<String>,
    /// The service endpoint, e.g. `http://127.0.0.1:9000`: path-style addressing when set.
    pub service_endpoint: Option<String>,
    /// The largest block (multipart part) written.
    pub max_block_size: u64,
    /// The size of each ranged GET when reading.
    pub read_buffer_size: u64,
    /// Threads of the offloader's runtime (`managedLedgerOffloadMaxThreads`).
    pub max_threads: usize,
    /// `managedLedgerOffloadReadThreads` (reads share the offloader's runtime).
    pub read_threads: usize,
    /// `None`: unsigned requests.
    pub credentials: Option<Credentials>,
}

/// Every broker key this crate reads.
pub const KEYS: &[&str] = &[
    DRIVER_KEY,
    "managedLedgerOffloadBucket",
    "managedLedgerOffloadRegion",
    "managedLedgerOffloadServiceEndpoint",
    "managedLedgerOffloadMaxBlockSizeInBytes",
    "managedLedgerOffloadReadBufferSizeInBytes",
    "managedLedgerOffloadMaxThreads",
    "managedLedgerOffloadReadThreads",
    "s3ManagedLedgerOffloadBucket",
    "s3ManagedLedgerOffloadRegion",
    "s3ManagedLedgerOffloadServiceEndpoint",
    "s3ManagedLedgerOffloadMaxBlockSizeInBytes",
    "s3ManagedLedgerOffloadReadBufferSizeInBytes",
    "s3ManagedLedgerOffloadCredentialId",
    "s3ManagedLedgerOffloadCredentialSecret",
];

fn bad(msg: String) -> LedgerError {
    LedgerError::Offload { context: msg }
}

impl OffloadConfig {
    /// Every broker key this crate reads (so the broker's configuration accepts them).
    pub const KEYS: &'static [&'static str] = KEYS;

    /// The configuration from broker properties; `None` when no driver is set. Credentials come
    /// from the properties (`aws-s3`) or the process environment.
    ///
    /// # Errors
    /// An unsupported driver, a missing bucket or endpoint, a bad number, or a block size under
    /// 5 MiB.
    pub fn from_properties(
        props: &BTreeMap<String, String>,
    ) -> Result<Option<OffloadConfig>, LedgerError> {
        Self::from_properties_and_env(props, |k| std::env::var(k).ok())
    }

    /// [`OffloadConfig::from_properties`] with `env` in place of the process environment.
    ///
    /// # Errors
    /// As [`OffloadConfig::from_properties`].
    pub fn from_properties_and_env(
        props: &BTreeMap<String, String>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<OffloadConfig>, LedgerError> {
        let Some(name) = props.get(DRIVER_KEY).filter(|v| !v.trim().is_empty()) else {
            return Ok(None);
        };
        let driver = Driver::parse(name)?;
        let get = |field: &str| -> Option<String> {
            let mut keys = Vec::with_capacity(2);
            if driver == Driver::AwsS3 {
                keys.push(format!("s3ManagedLedgerOffload{field}"));
            }
            keys.push(format!("managedLedgerOffload{field}"));
            keys.iter()
                .filter_map(|k| props.get(k))
                .map(|v| v.trim().to_string())
                .find(|v| !v.is_empty())
        };
        let number = |field: &str, key_value: Option<String>, default: u64| match key_value {
            None => Ok(default),
            Some(v) => v.parse::<u64>().map_err(|_| {
                bad(format!(
                    "managedLedgerOffload{field}: {v:?} is not a number"
                ))
            }),
        };
        let env_nonempty = |k: &str| env(k).filter(|v| !v.is_empty());
        let credentials = match driver {
            Driver::AwsS3 => {
                let id = props
                    .get("s3ManagedLedgerOffloadCredentialId")
                    .filter(|v| !v.is_empty())
                    .cloned();
                let secret = props
                    .get("s3ManagedLedgerOffloadCredentialSecret")
                    .filter(|v| !v.is_empty())
                    .cloned();
                match (id, secret) {
                    (Some(i), Some(s)) => Some((i, s)),
                    _ => {
                        env_nonempty("AWS_ACCESS_KEY_ID").zip(env_nonempty("AWS_SECRET_ACCESS_KEY"))
                    }
                }
            }
            Driver::S3 | Driver::AliyunOss => env_nonempty("ACCESS_KEY_ID")
                .zip(env_nonempty("ACCESS_KEY_SECRET"))
                .or_else(|| {
                    env_nonempty("ALIYUN_OSS_ACCESS_KEY_ID")
                        .zip(env_nonempty("ALIYUN_OSS_ACCESS_KEY_SECRET"))
                }),
        }
        .map(|(access_key_id, secret_access_key)| Credentials {
            access_key_id,
            secret_access_key,
        });
        let threads = |key: &str| -> Result<usize, LedgerError> {
            match props.get(key).map(|v| v.trim()).filter(|v| !v.is_empty()) {
                None => Ok(2),
                Some(v) => v
                    .parse::<usize>()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| bad(format!("{key}: {v:?} is not a positive number"))),
            }
        };
        let config = OffloadConfig {
            driver,
            bucket: get("Bucket"),
            region: get("Region"),
            service_endpoint: get("ServiceEndpoint"),
            max_block_size: number(
                "MaxBlockSizeInBytes",
                get("MaxBlockSizeInBytes"),
                DEFAULT_MAX_BLOCK_SIZE,
            )?,
            read_buffer_size: number(
                "ReadBufferSizeInBytes",
                get("ReadBufferSizeInBytes"),
                DEFAULT_READ_BUFFER_SIZE,
            )?,
            max_threads: threads("managedLedgerOffloadMaxThreads")?,
            read_threads: threads("managedLedgerOffloadReadThreads")?,
            credentials,
        };
        config.validate()?;
        if config.credentials.is_none() {
            tracing::warn!(
                driver = driver.name(),
                "no offload credentials set (Pulsar would refuse to start this driver); \
                 requests to the object store go unsigned"
            );
        }
        Ok(Some(config))
    }

    /// Pulsar's checks: `S3` and `aliyun-oss` need an endpoint and a bucket, `aws-s3` a region
    /// or an endpoint and a bucket; every driver a block size of at least 5 MiB.
    ///
    /// # Errors
    /// The first check that fails.
    pub fn validate(&self) -> Result<(), LedgerError> {
        let d = self.driver.name();
        match self.driver {
            Driver::S3 | Driver::AliyunOss => {
                if self.service_endpoint.is_none() {
                    return Err(bad(format!(
                        "driver {d}: managedLedgerOffloadServiceEndpoint is required"
                    )));
                }
            }
            Driver::AwsS3 => {
                if self.service_endpoint.is_none() && self.region.is_none() {
                    return Err(bad(format!(
                        "driver {d}: s3ManagedLedgerOffloadRegion or \
                         s3ManagedLedgerOffloadServiceEndpoint is required"
                    )));
                }
            }
        }
        if self.bucket.is_none() {
            return Err(bad(format!(
                "driver {d}: managedLedgerOffloadBucket is required"
            )));
        }
        if self.max_block_size < MIN_BLOCK_SIZE {
            return Err(bad(format!(
                "driver {d}: the maximum block size {} is under the minimum of 5 MiB ({MIN_BLOCK_SIZE})",
                self.max_block_size
            )));
        }
        if self.max_block_size > i32::MAX as u64 {
            return Err(bad(format!(
                "driver {d}: the maximum block size {} is over 2 GiB",
                self.max_block_size
            )));
        }
        if self.read_buffer_size == 0 {
            return Err(bad(format!("driver {d}: the read buffer size is 0")));
        }
        Ok(())
    }

    /// The metadata recorded with each offloaded ledger (`getOffloadDriverMetadata`): the
    /// driver's enum name, bucket, region and endpoint, empty strings for unset values.
    #[must_use]
    pub fn driver_metadata(&self) -> BTreeMap<String, String> {
        let s = |v: &Option<String>| v.clone().unwrap_or_default();
        BTreeMap::from([
            (DRIVER_KEY.to_string(), self.driver.enum_name().to_string()),
            ("bucket".to_string(), s(&self.bucket)),
            ("region".to_string(), s(&self.region)),
            ("serviceEndpoint".to_string(), s(&self.service_endpoint)),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect()
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn no_driver_is_none() {
        assert!(matches!(
            OffloadConfig::from_properties_and_env(&props(&[]), no_env),
            Ok(None)
        ));
        assert!(matches!(
            OffloadConfig::from_properties_and_env(&props(&[(DRIVER_KEY, "")]), no_env),
            Ok(None)
        ));
    }

    #[test]
    fn s3_driver_universal_keys() {
        let p = props(&[
            (DRIVER_KEY, "s3"),
            ("managedLedgerOffloadBucket", "b"),
            ("managedLedgerOffloadServiceEndpoint", "http://127.0.0.1:1"),
            ("s3ManagedLedgerOffloadBucket", "ignored"),
        ]);
        let env = |k: &str| (k == "ACCESS_KEY_ID" || k == "ACCESS_KEY_SECRET").then(|| "x".into());
        let c = OffloadConfig::from_properties_and_env(&p, env)
            .unwrap()
            .unwrap();
        assert_eq!(c.driver, Driver::S3);
        assert_eq!(c.bucket.as_deref(), Some("b"));
        assert_eq!(c.max_block_size, 64 << 20);
        assert_eq!(c.read_buffer_size, 1 << 20);
        assert_eq!((c.max_threads, c.read_threads), (2, 2));
        assert!(c.credentials.is_some());
        assert_eq!(
            c.driver_metadata(),
            props(&[
                (DRIVER_KEY, "S3"),
                ("bucket", "b"),
                ("region", ""),
                ("serviceEndpoint", "http://127.0.0.1:1"),
            ])
        );
        let oss = |k: &str| k.starts_with("ALIYUN_OSS_").then(|| "y".into());
        let c = OffloadConfig::from_properties_and_env(&p, oss)
            .unwrap()
            .unwrap();
        assert_eq!(c.credentials.unwrap().access_key_id, "y");
    }

    #[test]
    fn aws_s3_prefers_its_own_keys() {
        let p = props(&[
            (DRIVER_KEY, "AWS-S3"),
            ("s3ManagedLedgerOffloadBucket", "own"),
            ("managedLedgerOffloadBucket", "universal"),
            ("managedLedgerOffloadRegion", "eu-west-1"),
            ("s3ManagedLedgerOffloadMaxBlockSizeInBytes", "5242880"),
            ("s3ManagedLedgerOffloadCredentialId", "id"),
            ("s3ManagedLedgerOffloadCredentialSecret", "secret"),
        ]);
        let c = OffloadConfig::from_properties_and_env(&p, no_env)
            .unwrap()
            .unwrap();
        assert_eq!(c.bucket.as_deref(), Some("own"));
        assert_eq!(c.region.as_deref(), Some("eu-west-1"));
        assert_eq!(c.max_block_size, 5 << 20);
        assert_eq!(c.credentials.as_ref().unwrap().secret_access_key, "secret");
        assert_eq!(c.driver_metadata()[DRIVER_KEY], "AWS_S3");
        assert_eq!(c.driver.name(), "aws-s3");
    }

    #[test]
    fn validation_is_pulsars() {
        let err = |kv: &[(&str, &str)]| match OffloadConfig::from_properties_and_env(
            &props(kv),
            no_env,
        ) {
            Err(LedgerError::Offload { context }) => context,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            err(&[(DRIVER_KEY, "google-cloud-storage")]),
            "driver google-cloud-storage is not supported by pulsar-rs; supported: S3, aws-s3"
        );
        assert!(
            err(&[(DRIVER_KEY, "S3"), ("managedLedgerOffloadBucket", "b")])
                .contains("ServiceEndpoint")
        );
        assert!(
            err(&[(DRIVER_KEY, "aws-s3"), ("managedLedgerOffloadBucket", "b")]).contains("Region")
        );
        assert!(
            err(&[(DRIVER_KEY, "aws-s3"), ("managedLedgerOffloadRegion", "r")]).contains("Bucket")
        );
        assert!(err(&[
            (DRIVER_KEY, "S3"),
            ("managedLedgerOffloadBucket", "b"),
            ("managedLedgerOffloadServiceEndpoint", "http://h"),
            ("managedLedgerOffloadMaxBlockSizeInBytes", "1048576"),
        ])
        .contains("5 MiB"));
        let anon = OffloadConfig::from_properties_and_env(
            &props(&[
                (DRIVER_KEY, "aliyun-oss"),
                ("managedLedgerOffloadBucket", "b"),
                ("managedLedgerOffloadServiceEndpoint", "http://h"),
            ]),
            no_env,
        )
        .unwrap()
        .unwrap();
        assert_eq!(anon.credentials, None);
        assert_eq!(anon.driver_metadata()[DRIVER_KEY], "ALIYUN_OSS");
        for k in KEYS {
            assert!(k.contains("anagedLedgerOffload"), "{k}");
        }
    }
}
