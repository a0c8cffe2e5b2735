//! A bounded retry of S3 calls: a few tries with a growing pause, only for failures that may
//! pass (no answer, timeouts, throttling, server errors), never past a total deadline.

use std::future::Future;
use std::time::{Duration, Instant};

use crate::s3::S3Error;

/// Tries per call.
pub const ATTEMPTS: u32 = 4;
/// The first pause; each next one is three times longer (0.2 s, 0.6 s, 1.8 s).
const FIRST_BACKOFF: Duration = Duration::from_millis(200);
/// No new try starts after this long since the first.
pub const DEADLINE: Duration = Duration::from_secs(20);

/// Runs `call` until it succeeds, fails for good, or the tries or the deadline run out.
///
/// # Errors
/// The last failure.
pub async fn retry<T, F, Fut>(mut call: F) -> Result<T, S3Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, S3Error>>,
{
    let start = Instant::now();
    let mut backoff = FIRST_BACKOFF;
    let mut attempt = 1;
    loop {
        match call().await {
            Ok(v) => return Ok(v),
            Err(e) => {
                if !e.retryable() || attempt >= ATTEMPTS || start.elapsed() + backoff >= DEADLINE {
                    return Err(e);
                }
                tracing::debug!(attempt, error = %e, "object store call failed; retrying");
                tokio::time::sleep(backoff).await;
                backoff *= 3;
                attempt += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn err(status: Option<u16>) -> S3Error {
        S3Error {
            what: "GET b/k".into(),
            status,
            code: "X".into(),
            message: String::new(),
        }
    }

    #[test]
    fn retries_only_what_may_pass() {
        // Real pauses (3.4 s in all): tokio's paused clock needs its `test-util` feature, which
        // would build the workspace's tokio apart from the extension's (rust/offload/Cargo.toml).
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let calls = AtomicU32::new(0);
        // Relaxed: a counter read after the calls, on the same thread.
        let r: Result<(), _> = rt.block_on(retry(|| {
            calls.fetch_add(1, Ordering::Relaxed);
            async { Err(err(None)) }
        }));
        assert!(r.is_err());
        // Relaxed: read back on the thread that counted.
        assert_eq!(calls.load(Ordering::Relaxed), ATTEMPTS);
        // Relaxed: reset between runs on this one thread.
        calls.store(0, Ordering::Relaxed);
        let r: Result<(), _> = rt.block_on(retry(|| {
            // Relaxed: the count only, on this one thread.
            calls.fetch_add(1, Ordering::Relaxed);
            async { Err(err(Some(404))) }
        }));
        assert_eq!(r.unwrap_err().status, Some(404));
        // Relaxed: read back on the thread that counted.
        assert_eq!(calls.load(Ordering::Relaxed), 1);
        // Relaxed: reset between runs on this one thread.
        calls.store(0, Ordering::Relaxed);
        let r = rt.block_on(retry(|| {
            // Relaxed: the count only, on this one thread.
            let n = calls.fetch_add(1, Ordering::Relaxed);
            async move {
                if n < 2 {
                    Err(err(Some(503)))
                } else {
                    Ok(n)
                }
            }
        }));
        assert_eq!(r, Ok(2));
    }
}
