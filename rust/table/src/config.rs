//! The broker keys of the topic tables: `icebergCatalogUri` (a SQL catalog as pyiceberg's
//! `SqlCatalog` names it: `sqlite:////abs/path/catalog.db`, or sqlx's `sqlite:/abs/path`),
//! `icebergWarehouse` (a directory or a `file://` URL; `warehouse/` beside the catalog's file
//! when empty) and `icebergCatalogName` (the name the
//! catalog's rows carry, which pyiceberg and Spark must use too; `pulsar`).

use crate::error::TableError;

/// Where topic tables are committed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableConfig {
    /// The SQLite catalog's file (absolute).
    pub catalog_path: String,
    /// The warehouse, as a `file://` URL of an absolute directory.
    pub warehouse: String,
    /// The catalog's name.
    pub catalog_name: String,
}

impl TableConfig {
    /// The settings from the broker's keys; `Ok(None)` when `icebergCatalogUri` is empty.
    ///
    /// # Errors
    /// [`TableError::Config`] naming the key: a catalog that is not SQLite, a relative path, a
    /// warehouse on a scheme other than a local directory, an empty catalog name.
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
        let dir = warehouse.strip_prefix("file://").unwrap_or(warehouse);
        if dir.contains("://") {
            return Err(bad(
                "icebergWarehouse",
                "only a local directory is supported (an absolute path or file:///abs/path)",
            ));
        }
        if !dir.starts_with('/') {
            return Err(bad("icebergWarehouse", "an absolute directory is required"));
        }
        let name = name.trim();
        if name.is_empty() {
            return Err(bad("icebergCatalogName", "must not be empty"));
        }
        Ok(Some(Self {
            catalog_path: path,
            warehouse: format!("file://{dir}"),
            catalog_name: name.to_owned(),
        }))
    }

    /// The warehouse directory.
    #[must_use]
    pub fn warehouse_dir(&self) -> &str {
        self.warehouse.trim_start_matches("file://")
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
        assert_eq!(c.warehouse_dir(), "/data/wh");
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
    fn refusals_name_the_key() {
        let e = TableConfig::from_keys("postgresql://h/db", "/wh", "p").unwrap_err();
        assert!(e.to_string().starts_with("icebergCatalogUri"), "{e}");
        let e = TableConfig::from_keys("sqlite:rel.db", "/wh", "p").unwrap_err();
        assert!(e.to_string().contains("absolute"), "{e}");
        let e = TableConfig::from_keys("sqlite:////c.db", "s3://b/p", "p").unwrap_err();
        assert!(e.to_string().starts_with("icebergWarehouse"), "{e}");
        let e = TableConfig::from_keys("sqlite:////c.db", "/wh", " ").unwrap_err();
        assert!(e.to_string().starts_with("icebergCatalogName"), "{e}");
    }
}
