//! `AuthenticationProviderBasic`: users and password hashes from `basicAuthConf` (htpasswd
//! `user:hash` lines; a path, `file:` / `data:` URL or base64 text, read as Pulsar reads it).
//! Hashes as Pulsar checks them: `$apr1$salt$hash` (Apache MD5-crypt), anything else is
//! traditional DES `crypt` with the first two characters as salt.
//!
//! Credentials: on the binary protocol CONNECT `auth_method_name = "basic"`,
//! `auth_data = "user:password"`; on HTTP `Authorization: Basic base64(user:password)`.

use std::collections::HashMap;

use md5::{Digest, Md5};
use pulsar_rs_broker::BrokerError;

use super::{read_key_material, AuthError};

/// The users of the Basic provider; immutable after start.
pub struct BasicUsers {
    /// User → password hash.
    users: HashMap<String, String>,
}

impl std::fmt::Debug for BasicUsers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BasicUsers")
            .field("users", &self.users.len())
            .finish()
    }
}

impl BasicUsers {
    /// Reads the users file named by `basicAuthConf`.
    ///
    /// # Errors
    /// [`BrokerError::InvalidConfig`] naming `basicAuthConf` when unreadable or malformed.
    pub fn load(spec: &str) -> Result<Self, BrokerError> {
        let bytes = read_key_material("basicAuthConf", spec)?;
        let text = String::from_utf8(bytes).map_err(|_| BrokerError::InvalidConfig {
            key: "basicAuthConf".into(),
            reason: "the users file is not UTF-8".into(),
        })?;
        let mut users = HashMap::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim_end_matches('\r');
            if line.trim().is_empty() {
                continue;
            }
            match line.split(':').collect::<Vec<_>>()[..] {
                [user, hash] if !user.is_empty() && !hash.is_empty() => {
                    users.insert(user.to_owned(), hash.to_owned());
                }
                _ => {
                    return Err(BrokerError::InvalidConfig {
                        key: "basicAuthConf".into(),
                        reason: format!("line {}: expected user:hash", i + 1),
                    })
                }
            }
        }
        Ok(BasicUsers { users })
    }

    /// Checks `user:password` credentials and returns the role (the user name).
    ///
    /// # Errors
    /// [`AuthError::InvalidCredentials`] for an unknown user, a wrong password or bad data.
    pub fn authenticate(&self, data: &[u8]) -> Result<String, AuthError> {
        let bad = || AuthError::InvalidCredentials("Unknown user or invalid password".into());
        let text = std::str::from_utf8(data).map_err(|_| bad())?;
        let (user, password) = match text.split(':').collect::<Vec<_>>()[..] {
            [u, p] => (u, p),
            _ => {
                return Err(AuthError::InvalidCredentials(
                    "basic credentials must be user:password".into(),
                ))
            }
        };
        let hash = self.users.get(user).ok_or_else(bad)?;
        if verify(password, hash) {
            Ok(user.to_owned())
        } else {
            Err(bad())
        }
    }
}

/// Whether `password` matches an htpasswd `hash` as Pulsar checks it.
#[must_use]
pub fn verify(password: &str, hash: &str) -> bool {
    if hash.starts_with("$apr1") {
        let parts: Vec<&str> = hash.split('$').collect();
        return parts.len() == 4 && md5_crypt(password.as_bytes(), parts[2], "$apr1$") == hash;
    }
    if hash.len() != 13 {
        return false; // a DES crypt hash is 2 salt + 11 hash characters.
    }
    pwhash::unix_crypt::verify(password, hash)
}

const ITOA64: &[u8] = b"./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// MD5-crypt (Poul-Henning Kamp's algorithm) with `magic` (`$1$` or Apache's `$apr1$`).
#[must_use]
pub fn md5_crypt(password: &[u8], salt: &str, magic: &str) -> String {
    let salt = &salt.as_bytes()[..salt.len().min(8)];
    let mut alt = Md5::new();
    alt.update(password);
    alt.update(salt);
    alt.update(password);
    let alt = alt.finalize();
    let mut ctx = Md5::new();
    ctx.update(password);
    ctx.update(magic.as_bytes());
    ctx.update(salt);
    let mut n = password.len();
    while n > 0 {
        ctx.update(&alt[..n.min(16)]);
        n = n.saturating_sub(16);
    }
    let mut i = password.len();
    while i > 0 {
        if i & 1 == 1 {
            ctx.update([0u8]);
        } else {
            ctx.update(&password[..1]);
        }
        i >>= 1;
    }
    let mut digest = ctx.finalize();
    for round in 0..1000 {
        let mut c = Md5::new();
        if round & 1 == 1 {
            c.update(password);
        } else {
            c.update(digest);
        }
        if round % 3 != 0 {
            c.update(salt);
        }
        if round % 7 != 0 {
            c.update(password);
        }
        if round & 1 == 1 {
            c.update(digest);
        } else {
            c.update(password);
        }
        digest = c.finalize();
    }
    let d = digest;
    let mut out = format!("{magic}{}$", String::from_utf8_lossy(salt));
    let mut push = |v: u32, n: usize| {
        let mut v = v;
        for _ in 0..n {
            out.push(char::from(ITOA64[(v & 0x3f) as usize]));
            v >>= 6;
        }
    };
    for (a, b, c) in [(0, 6, 12), (1, 7, 13), (2, 8, 14), (3, 9, 15), (4, 10, 5)] {
        push(
            (u32::from(d[a]) << 16) | (u32::from(d[b]) << 8) | u32::from(d[c]),
            4,
        );
    }
    push(u32::from(d[11]), 2);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apr1_and_des_as_htpasswd_writes_them() {
        // `openssl passwd -apr1 -salt FG4AO6aX` / `openssl passwd -1` reference values.
        assert_eq!(
            md5_crypt(b"password", "xxxxxxxx", "$1$"),
            "$1$xxxxxxxx$UYCIxa628.9qXjpQCjM4a."
        );
        assert!(verify("123456", "$apr1$FG4AO6aX$KGYPuMoLUou3i6vUkPUUf."));
        assert!(!verify("admin", "$apr1$FG4AO6aX$KGYPuMoLUou3i6vUkPUUf."));
        // DES crypt ("htpasswd -d"): crypt("test", "ab").
        assert!(verify("test", "abgOeLfPimXQo"));
        assert!(!verify("tesT", "abgOeLfPimXQo"));
    }

    #[test]
    fn users_file() {
        let u = BasicUsers::load(
            "data:,admin:$apr1$FG4AO6aX$KGYPuMoLUou3i6vUkPUUf.%0Abob:abgOeLfPimXQo",
        )
        .unwrap();
        assert_eq!(u.authenticate(b"admin:123456").unwrap(), "admin");
        assert_eq!(u.authenticate(b"bob:test").unwrap(), "bob");
        assert!(u.authenticate(b"bob:nope").is_err());
        assert!(u.authenticate(b"carol:test").is_err());
        assert!(u.authenticate(b"nocolon").is_err());
        assert!(BasicUsers::load("data:,just-a-line").is_err());
    }
}
