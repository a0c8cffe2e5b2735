//! Java key stores for the broker client's TLS: `brokerClientTlsEnabledWithKeyStore` with
//! `brokerClientTlsKeyStore*` / `brokerClientTlsTrustStore*`, and `AuthenticationKeyStoreTls`
//! (`keyStoreType`, `keyStorePath`, `keyStorePassword`). [`read`] gives the first private key,
//! its certificate chain and the trusted certificates, ready for a rustls `ClientConfig`.
//!
//! Both formats Java's keytool writes are read: JKS ([`jks`], our own reader) and PKCS12
//! ([`pkcs12`]). Like Java since 9 (`keystore.type.compat`), the file's content decides which: a
//! `JKS`-typed store that is really PKCS12 (what keytool writes unless told `-storetype JKS`) is
//! read, and the other way round. JCEKS is refused. Java writes EC private keys without their
//! public key, which ring requires: [`complete_ec_key`] adds it (P-256 and P-384).

mod jks;
mod pkcs12;

use std::path::Path;

use p256::pkcs8::{DecodePrivateKey, EncodePrivateKey};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// What a key store holds, for a TLS client.
#[derive(Debug)]
pub struct KeyStore {
    /// The first private-key entry's key (PKCS#8 DER), if the store holds one.
    pub key: Option<PrivateKeyDer<'static>>,
    /// That entry's certificate chain, leaf first.
    pub chain: Vec<CertificateDer<'static>>,
    /// Every trusted-certificate entry (a trust store's CAs), plus nothing else.
    pub trusted: Vec<CertificateDer<'static>>,
}

/// A store's content as the format readers give it.
struct Parsed {
    key: Option<Vec<u8>>,
    chain: Vec<Vec<u8>>,
    trusted: Vec<Vec<u8>>,
}

/// A store type Pulsar names (`keyStoreType`, `brokerClientTls*StoreType`).
#[derive(Clone, Copy)]
enum StoreType {
    Jks,
    Pkcs12,
}

impl StoreType {
    fn parse(name: &str) -> Option<Self> {
        match name.to_ascii_uppercase().as_str() {
            "JKS" => Some(Self::Jks),
            "PKCS12" | "P12" => Some(Self::Pkcs12),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Jks => "JKS",
            Self::Pkcs12 => "PKCS12",
        }
    }
}

/// Reads the store at `path` of `store_type` ("JKS", "PKCS12"/"P12", case-insensitive; anything
/// else: an error naming the type) with `password`, which also unlocks the private key (as
/// Pulsar does). The file's content picks the format, as in Java (a PKCS12 file typed JKS is
/// read).
///
/// Blocking: it reads the file, so call it at start-up or in `spawn_blocking`.
///
/// # Errors
/// A text naming the file and what is wrong: unreadable, wrong password (the store's integrity
/// check failed), not a JKS/PKCS12 file (or truncated), an unsupported key protection algorithm,
/// a JCEKS store.
pub fn read(path: &Path, store_type: &str, password: &str) -> Result<KeyStore, String> {
    let fail = |what: String| format!("key store {}: {what}", path.display());
    let declared = StoreType::parse(store_type).ok_or_else(|| {
        fail(format!(
            "unsupported key store type {store_type:?} (JKS, PKCS12 or P12)"
        ))
    })?;
    let data = std::fs::read(path).map_err(|e| fail(format!("cannot read it: {e}")))?;
    let parsed = parse(&data, declared, password).map_err(fail)?;
    Ok(KeyStore {
        key: parsed
            .key
            .map(|k| PrivatePkcs8KeyDer::from(complete_ec_key(k)).into()),
        chain: parsed.chain.into_iter().map(CertificateDer::from).collect(),
        trusted: parsed
            .trusted
            .into_iter()
            .map(CertificateDer::from)
            .collect(),
    })
}

/// The store in `data`, by its magic number (JKS, JCEKS) or DER's SEQUENCE tag (PKCS12).
fn parse(data: &[u8], declared: StoreType, password: &str) -> Result<Parsed, String> {
    match data {
        _ if data.starts_with(&jks::MAGIC) => jks::parse(data, password),
        _ if data.starts_with(&jks::JCEKS_MAGIC) => Err(
            "a JCEKS store, which is not supported: convert it with keytool -importkeystore \
             -deststoretype PKCS12"
                .into(),
        ),
        [0x30, ..] => pkcs12::parse(data, password),
        [] => Err(format!("empty file, not a {} store", declared.name())),
        _ => Err(format!(
            "not a {} store (neither JKS nor PKCS12)",
            declared.name()
        )),
    }
}

/// `key` (PKCS#8) with the public key added when it is a P-256 or P-384 key (Java leaves it out
/// of the `ECPrivateKey`, ring requires it); any other key unchanged.
fn complete_ec_key(key: Vec<u8>) -> Vec<u8> {
    let completed = match p256::SecretKey::from_pkcs8_der(&key) {
        Ok(k) => k.to_pkcs8_der(),
        Err(_) => match p384::SecretKey::from_pkcs8_der(&key) {
            Ok(k) => k.to_pkcs8_der(),
            Err(_) => return key,
        },
    };
    completed.map_or(key, |doc| doc.as_bytes().to_vec())
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::process::Command;

    use rustls_pki_types::pem::PemObject;

    use super::*;

    const PW: &str = "changeit";

    /// Runs Java's keytool in `dir`; panics (fails the test) when it is missing or fails.
    fn keytool(dir: &Path, args: &[&str]) {
        let out = Command::new("keytool")
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap_or_else(|e| {
                panic!(
                    "keytool (Java 17) is needed for these tests: install a JDK 17 \
                     (apt-get install openjdk-17-jdk-headless): {e}"
                )
            });
        assert!(
            out.status.success(),
            "keytool {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A key pair in a new PKCS12 store `file`: `alg` is "RSA" or "EC".
    fn genkeypair(dir: &Path, file: &str, alias: &str, alg: &str, cn: &str, pw: &str) {
        let dname = format!("CN={cn}");
        let mut args = vec!["-genkeypair", "-alias", alias, "-keyalg", alg];
        args.extend(["-dname", &dname, "-validity", "365", "-storetype", "PKCS12"]);
        args.extend(["-keystore", file, "-storepass", pw]);
        if cn.ends_with("ca") {
            args.extend(["-ext", "bc:c"]);
        }
        keytool(dir, &args);
    }

    /// Exports `alias`'s certificate of `store` as PEM `file`, and returns its DER.
    fn export(dir: &Path, store: &str, alias: &str, pw: &str, file: &str) -> Vec<u8> {
        let args = ["-exportcert", "-rfc", "-alias", alias, "-keystore", store];
        keytool(
            dir,
            &[&args[..], &["-storepass", pw, "-file", file]].concat(),
        );
        pem(&dir.join(file))
    }

    fn pem(path: &Path) -> Vec<u8> {
        CertificateDer::from_pem_file(path).unwrap().to_vec()
    }

    /// Copies PKCS12 `src` to `dest` of `dest_type`; `legacy` writes Java 8's PKCS12 (3DES keys,
    /// RC2-40 certificates, HMAC-SHA1).
    fn convert(dir: &Path, src: &str, dest: &str, dest_type: &str, legacy: bool) {
        let mut args = vec!["-importkeystore", "-noprompt", "-srckeystore", src];
        args.extend(["-srcstoretype", "PKCS12", "-srcstorepass", PW]);
        args.extend(["-destkeystore", dest, "-deststoretype", dest_type]);
        args.extend(["-deststorepass", PW, "-destkeypass", PW]);
        if legacy {
            args.insert(0, "-J-Dkeystore.pkcs12.legacy");
        }
        keytool(dir, &args);
    }

    /// A CA (`ca.p12`, password `capass`) and its certificate (`ca.pem`), returned as DER.
    fn make_ca(dir: &Path) -> Vec<u8> {
        genkeypair(dir, "ca.p12", "ca", "RSA", "test-ca", "capass");
        export(dir, "ca.p12", "ca", "capass", "ca.pem")
    }

    fn read_ok(path: &Path, store_type: &str) -> KeyStore {
        read(path, store_type, PW).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The key is one rustls's ring provider signs with, and the chain is `chain`.
    fn assert_key_and_chain(store: &KeyStore, chain: &[&[u8]]) {
        let key = store.key.as_ref().expect("a private key");
        assert!(matches!(key, PrivateKeyDer::Pkcs8(_)));
        rustls::crypto::ring::sign::any_supported_type(key).unwrap();
        let got: Vec<&[u8]> = store.chain.iter().map(|c| c.as_ref()).collect();
        assert_eq!(got, chain);
        assert!(store.trusted.is_empty());
    }

    #[test]
    fn rsa_key_stores_with_a_ca_signed_chain() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let ca = make_ca(dir);
        genkeypair(dir, "rsa.p12", "broker", "RSA", "broker", PW);
        let store = ["-keystore", "rsa.p12", "-storepass", PW, "-alias", "broker"];
        keytool(
            dir,
            &[&["-certreq", "-file", "broker.csr"], &store[..]].concat(),
        );
        let gencert = ["-gencert", "-rfc", "-alias", "ca", "-keystore", "ca.p12"];
        let gencert_io = [
            "-storepass",
            "capass",
            "-infile",
            "broker.csr",
            "-outfile",
            "leaf.pem",
        ];
        keytool(dir, &[&gencert[..], &gencert_io].concat());
        let reply = [
            std::fs::read(dir.join("leaf.pem")).unwrap(),
            std::fs::read(dir.join("ca.pem")).unwrap(),
        ];
        std::fs::write(dir.join("reply.pem"), reply.concat()).unwrap();
        keytool(
            dir,
            &[
                &["-importcert", "-noprompt", "-file", "reply.pem"],
                &store[..],
            ]
            .concat(),
        );
        let leaf = export(dir, "rsa.p12", "broker", PW, "exported.pem");
        assert_ne!(leaf, ca);
        convert(dir, "rsa.p12", "rsa.jks", "JKS", false);
        for (file, store_type) in [("rsa.p12", "PKCS12"), ("rsa.jks", "JKS")] {
            assert_key_and_chain(&read_ok(&dir.join(file), store_type), &[&leaf, &ca]);
        }
    }

    #[test]
    fn ec_key_stores_modern_and_legacy_pkcs12_and_jks() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        genkeypair(dir, "ec.p12", "ec", "EC", "ec-client", PW);
        let cert = export(dir, "ec.p12", "ec", PW, "ec.pem");
        convert(dir, "ec.p12", "ec.jks", "JKS", false);
        convert(dir, "ec.p12", "legacy.p12", "PKCS12", true);
        for (file, store_type) in [
            ("ec.p12", "pkcs12"),
            ("ec.jks", "jks"),
            ("legacy.p12", "P12"),
        ] {
            assert_key_and_chain(&read_ok(&dir.join(file), store_type), &[&cert]);
        }
    }

    #[test]
    fn trust_stores_hold_the_imported_ca() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let ca = make_ca(dir);
        for (file, store_type) in [("trust.jks", "JKS"), ("trust.p12", "PKCS12")] {
            let args = [
                "-importcert",
                "-noprompt",
                "-alias",
                "ca",
                "-file",
                "ca.pem",
            ];
            let store = [
                "-keystore",
                file,
                "-storetype",
                store_type,
                "-storepass",
                PW,
            ];
            keytool(dir, &[&args[..], &store].concat());
            let got = read_ok(&dir.join(file), store_type);
            assert!(got.key.is_none() && got.chain.is_empty(), "{file}");
            assert_eq!(
                got.trusted,
                vec![CertificateDer::from(ca.clone())],
                "{file}"
            );
        }
    }

    /// A store whose reading fails with an error naming the file and containing `what`.
    fn assert_error(path: &Path, store_type: &str, password: &str, what: &str) {
        let err = read(path, store_type, password).unwrap_err();
        assert!(err.contains(&path.display().to_string()), "{err}");
        assert!(err.contains(what), "{err} (wanted {what:?})");
    }

    #[test]
    fn wrong_password_truncation_and_unknown_types_are_errors() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        genkeypair(dir, "ks.p12", "k", "EC", "client", PW);
        convert(dir, "ks.p12", "ks.jks", "JKS", false);
        for file in ["ks.p12", "ks.jks"] {
            let path = dir.join(file);
            // Java reads a PKCS12 file typed JKS and the other way round.
            read_ok(&path, "JKS");
            read_ok(&path, "PKCS12");
            assert_error(&path, "JKS", "wrong", "wrong password");
            let data = std::fs::read(&path).unwrap();
            let cut: PathBuf = dir.join(format!("cut-{file}"));
            std::fs::write(&cut, &data[..data.len() / 2]).unwrap();
            assert_error(&cut, "PKCS12", PW, "");
            assert_error(&path, "BKS", PW, "\"BKS\"");
            assert_error(&path, "JCEKS", PW, "\"JCEKS\"");
        }
        assert_error(&dir.join("missing.jks"), "JKS", PW, "cannot read");
        std::fs::write(dir.join("text.jks"), "hello").unwrap();
        assert_error(&dir.join("text.jks"), "JKS", PW, "not a JKS store");
        std::fs::write(dir.join("jceks.jks"), [0xCE, 0xCE, 0xCE, 0xCE, 0, 0, 0, 2]).unwrap();
        assert_error(&dir.join("jceks.jks"), "JKS", PW, "JCEKS");
    }
}
