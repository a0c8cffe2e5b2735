//! The guard of every commit on a real SQLite catalog: a commit that started from where the
//! table held a partition lands once; a second commit that started from the same place (a
//! broker that lost the topic and commits late) is refused, and the table keeps the first.

use std::sync::Arc;

use iceberg::transaction::{ApplyTransactionAction, Transaction};
use iceberg::Catalog;
use pulsar_rs_table::catalog::{self, through_key, Guarded, SUPERSEDED};
use pulsar_rs_table::columns::FieldKind;
use pulsar_rs_table::policy::PartitionBy;
use pulsar_rs_table::TableConfig;

async fn move_through(
    catalog: &Arc<iceberg_catalog_sql::SqlCatalog>,
    id: &iceberg::TableIdent,
    expected: Option<&str>,
    to: &str,
) -> iceberg::Result<()> {
    let table = catalog.load_table(id).await?;
    let tx = Transaction::new(&table);
    let tx = tx
        .update_table_properties()
        .set(through_key(-1), to.to_owned())
        .apply(tx)?;
    let guard = Guarded {
        inner: Arc::clone(catalog),
        key: through_key(-1),
        expected: expected.map(str::to_owned),
    };
    tx.commit(&guard).await.map(|_| ())
}

#[tokio::test]
async fn a_late_commit_from_the_same_start_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let uri = format!("sqlite:///{}/catalog.db", dir.path().display());
    let config = TableConfig::from_keys(&uri, "", "pulsar").unwrap().unwrap();
    let catalog = catalog::open(&config).await.unwrap();
    let id = catalog::ident("public", "default", "t").unwrap();
    let values = vec![("id".to_owned(), FieldKind::Long)];
    catalog::load_or_create(&catalog, &id, &values, PartitionBy::Day)
        .await
        .unwrap();
    // The owner commits 1:9 from nothing, then 1:19 from 1:9.
    move_through(&catalog, &id, None, "1:9").await.unwrap();
    move_through(&catalog, &id, Some("1:9"), "1:19")
        .await
        .unwrap();
    // A broker that read "nothing" before the owner's commits lands nothing.
    let late = move_through(&catalog, &id, None, "1:9").await.unwrap_err();
    assert!(late.message().starts_with(SUPERSEDED), "{late}");
    let table = catalog.load_table(&id).await.unwrap();
    assert_eq!(
        table
            .metadata()
            .properties()
            .get(&through_key(-1))
            .map(String::as_str),
        Some("1:19")
    );
    // The table, reopened from its file, is the one pyiceberg and Spark read.
    let again = catalog::open(&config).await.unwrap();
    assert!(again.table_exists(&id).await.unwrap());
}
