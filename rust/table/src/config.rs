//! The broker keys of the topic tables: `icebergCatalogUri` (a SQL catalog as pyiceberg's
//! `SqlCatalog` names it: `sqlite:////abs/path/catalog.db`, or sqlx's `sqlite:/abs/path`),
//! `icebergWarehouse` (a directory, a `file://` URL or an S3 location `s3://bucket/prefix`;
//! `warehouse/` beside the catalog's file when empty), `icebergCatalogName` (the name the
//! catalog's rows carry, which pyiceberg and Spark must use too; `pulsar`), and for an S3
//! warehouse `icebergS3Endpoint` (an S3-compatible service's URL, path-style; empty: Amazon S3)
//! and `icebergS3Region`; its credentials come from `AWS_ACCESS_KEY_ID` and
//! `AWS_SECRET_ACCESS_KEY` (as the readers' S3 file IO finds them; none: unsigned requests).

use crate::error::TableError;

/// Where topic tables are committed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableConfig {
    /// The SQLite catalog's file (absolute).
    pub catalog_path: String,
    /// The warehouse: a `file://` URL of an absolute directory, or `s3://bucket/prefix`.
    pub warehouse: String,
    /// The catalog's name.
    pub catalog_name: String,
    /// The S3 service of an `s3://` warehouse; `None` for a local one.
    pub s3: Option<S3Service>,
}

/// The S3 service an `s3://` warehouse is on.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct S3Service {
    /// An S3-compatible service's URL (`http://host:port`, path-style requests); `None`: Amazon
    /// S3 in [`S3Service::region`].
    pub endpoint: Option<String>,
    /// The region requests are signed for.
    pub region: String,
}

/// The region of an S3 warehouse when `icebergS3Region` is empty (the AWS SDKs' default).
pub const DEFAULT_S3_REGION: &str = "us-east-1";

impl TableConfig {
    /// The settings from the broker's keys; `Ok(None)` when `icebergCatalogUri` is empty.
    ///
    /// # Errors
    /// [`TableError::Config`] naming the key: a catalog that is not SQLite, a relative path, a
    /// warehouse neither a local directory nor `s3://bucket/...`, an empty catalog name.
    pub fn from_keys(uri: &str, warehouse: &str, name: &str) -> Result<Option<Self>, TableError> {
        let uri = uri.trim();
        if uri.is_empty() {
            return Ok(None);
        }
        let bad = |key: &str, why: &str| TableError::Config(format!("{key}: {why}"));
        // pyiceberg (SQLAlchemy) writes `sqlite:////abs` for `/abs`; sqlx takes `sqlite:/abs`
        // and `sqlite:///abs`.
        let path = uri
            .strip_prefix("sqlite:///")
            .map(|rest| {
                if rest.starts_with('/') {
                    rest.to_owned()
                } else {
                    format!("/{rest}")
                }
            })
            .or_else(|| uri.strip_prefix("sqlite:").map(str::to_owned))
            .ok_or_else(|| {
                bad(
                    "icebergCatalogUri",
                    "only a SQLite catalog is supported (sqlite:////abs/path/catalog.db)",
                )
            })?;
        let path = path.split('?').next().unwrap_or_default().to_owned();
        if !path.starts_with('/') || path.len() < 2 {
            return Err(bad(
                "icebergCatalogUri",
                "the catalog's path must be absolute (sqlite:////abs/path/catalog.db)",
            ));
        }
        // No warehouse: `warehouse/` beside the catalog's file.
        let beside = format!(
            "{}/warehouse",
            std::path::Path::new(&path)
                .parent()
                .map_or_else(String::new, |d| d.display().to_string())
                .trim_end_matches('/')
        );
        let warehouse = match warehouse.trim() {
            "" => beside.as_str(),
            w => w.trim_end_matches('/'),
        };
        let name = name.trim();
        if name.is_empty() {
            return Err(bad("icebergCatalogName", "must not be empty"));
        }
        if let Some(location) = warehouse.strip_prefix("s3://") {
            let bucket = location.split('/').next().unwrap_or_default();
            if bucket.is_empty() {
                return Err(bad(
                    "icebergWarehouse",
                    "an S3 warehouse names its bucket (s3://bucket/prefix)",
                ));
            }
            return Ok(Some(Self {
                catalog_path: path,
                warehouse: format!("s3://{location}"),
                catalog_name: name.to_owned(),
                s3: Some(S3Service {
                    endpoint: None,
                    region: DEFAULT_S3_REGION.to_owned(),
                }),
            }));
        }
        let dir = warehouse.strip_prefix("file://").unwrap_or(warehouse);
        if dir.contains("://") {
            return Err(bad(
                "icebergWarehouse",
                "a local directory (an absolute path or file:///abs/path) or s3://bucket/prefix",
            ));
        }
        if !dir.starts_with('/') {
            return Err(bad("icebergWarehouse", "an absolute directory is required"));
        }
        Ok(Some(Self {
            catalog_path: path,
            warehouse: format!("file://{dir}"),
            catalog_name: name.to_owned(),
            s3: None,
        }))
    }

    /// The S3 service of an `s3://` warehouse, from `icebergS3Endpoint` and `icebergS3Region`
    /// (empty: Amazon S3; `us-east-1`). Set for a local warehouse, they are refused: a
    /// warehouse meant for S3 would otherwise be written to the local disk unnoticed.
    ///
    /// # Errors
    /// [`TableError::Config`] naming the key: an endpoint that is not an `http(s)://` URL, or
    /// S3 settings beside a local warehouse.
    pub fn with_s3_service(mut self, endpoint: &str, region: &str) -> Result<Self, TableError> {
        let (endpoint, region) = (endpoint.trim(), region.trim());
        let Some(s3) = self.s3.as_mut() else {
            if endpoint.is_empty() && region.is_empty() {
                return Ok(self);
            }
            let key = if endpoint.is_empty() {
                "icebergS3Region"
            } else {
                "icebergS3Endpoint"
            };
            return Err(TableError::Config(format!(
                "{key}: set, but icebergWarehouse is not on S3 (s3://bucket/prefix)"
            )));
        };
        if !endpoint.is_empty() {
            if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
                return Err(TableError::Config(format!(
                    "icebergS3Endpoint: {endpoint:?} is not an http:// or https:// URL"
                )));
            }
            s3.endpoint = Some(endpoint.trim_end_matches('/').to_owned());
        }
        if !region.is_empty() {
            region.clone_into(&mut s3.region);
        }
        Ok(self)
    }

    /// The warehouse directory; `None` for a warehouse on S3.
    #[must_use]
    pub fn warehouse_dir(&self) -> Option<&str> {
        self.s3
            .is_none()
            .then(|| self.warehouse.trim_start_matches("file://"))
    }

    /// The catalog's URL for sqlx (created when missing).
    #[must_use]
    pub fn sqlx_uri(&self) -> String {
        format!("sqlite://{}?mode=rwc", self.catalog_path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_as_pyiceberg_writes_them() {
        let c = TableConfig::from_keys("sqlite:////data/cat.db", "file:///data/wh/", "pulsar")
            .unwrap()
            .unwrap();
        assert_eq!(c.catalog_path, "/data/cat.db");
        assert_eq!(c.warehouse, "file:///data/wh");
        assert_eq!(c.warehouse_dir(), Some("/data/wh"));
        let c = TableConfig::from_keys("sqlite:/data/cat.db", "/data/wh", "p")
            .unwrap()
            .unwrap();
        assert_eq!(c.catalog_path, "/data/cat.db");
        assert_eq!(TableConfig::from_keys("", "", "pulsar").unwrap(), None);
        let c = TableConfig::from_keys("sqlite:////data/ice/cat.db", "", "p")
            .unwrap()
            .unwrap();
        assert_eq!(c.warehouse, "file:///data/ice/warehouse");
    }

    #[test]
    fn an_s3_warehouse_with_its_service() {
        let c = TableConfig::from_keys("sqlite:////data/cat.db", "s3://tables/wh/", "pulsar")
            .unwrap()
            .unwrap();
        assert_eq!(c.warehouse, "s3://tables/wh");
        assert_eq!(c.warehouse_dir(), None);
        let c = c
            .with_s3_service("http://127.0.0.1:9000/", "eu-west-1")
            .unwrap();
        assert_eq!(
            c.s3,
            Some(S3Service {
                endpoint: Some("http://127.0.0.1:9000".into()),
                region: "eu-west-1".into(),
            })
        );
    }

    #[test]
    fn refusals_name_the_key() {
        let e = TableConfig::from_keys("postgresql://h/db", "/wh", "p").unwrap_err();
        assert!(e.to_string().starts_with("icebergCatalogUri"), "{e}");
        let e = TableConfig::from_keys("sqlite:rel.db", "/wh", "p").unwrap_err();
        assert!(e.to_string().contains("absolute"), "{e}");
        let e = TableConfig::from_keys("sqlite:////c.db", "gs://b/p", "p").unwrap_err();
        assert!(e.to_string().starts_with("icebergWarehouse"), "{e}");
        let e = TableConfig::from_keys("sqlite:////c.db", "s3:///p", "p").unwrap_err();
        assert!(e.to_string().contains("bucket"), "{e}");
        let local = TableConfig::from_keys("sqlite:////c.db", "/wh", "p")
            .unwrap()
            .unwrap();
        let e = local.clone().with_s3_service("http://h:1", "").unwrap_err();
        assert!(e.to_string().starts_with("icebergS3Endpoint"), "{e}");
        assert_eq!(local.clone().with_s3_service("", "").unwrap(), local);
        let s3 = TableConfig::from_keys("sqlite:////c.db", "s3://b/p", "p")
            .unwrap()
            .unwrap();
        let e = s3.with_s3_service("h:1", "").unwrap_err();
        assert!(e.to_string().starts_with("icebergS3Endpoint"), "{e}");
        let e = TableConfig::from_keys("sqlite:////c.db", "/wh", " ").unwrap_err();
        assert!(e.to_string().starts_with("icebergCatalogName"), "{e}");
    }
}
