//! The floor under a durable publish with one message in flight (`pulsar-rs-probe round-trip`).
//!
//! A producer that waits for each receipt measures a broker's durable round trip: its request
//! crosses loopback, the broker writes it to its journal and `fdatasync`s it, and the receipt
//! crosses loopback back. No broker can answer faster than the machine does these three
//! things one after another, with nothing else in between. This probe does exactly that, in
//! the smallest program that can, on blocking threads:
//!
//! * **loopback**: a client thread writes a 100-byte request and waits for a 40-byte answer from
//!   a server thread (`TCP_NODELAY` on both ends): the network's share;
//! * **durable**: the same, the server writing each request as one 4 KiB block over a
//!   preallocated, synced file (`O_DIRECT` where the file system takes it, as the journal's
//!   durable rounds) and `fdatasync`ing it before it answers: the floor a broker is measured
//!   against;
//! * **sync alone**: the server's write and `fdatasync` within the durable run, timed on the
//!   server: the disk's share.
//!
//! Loopback, then durable, each for the same number of seconds; latency percentiles in
//! milliseconds.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde_json::{json, Value};

use crate::stats::{new_histogram, record, summary_ms};

/// The request's size: the load generators' 100-byte message (framing aside).
const REQUEST: usize = 100;
/// The answer's size: about a SEND_RECEIPT frame.
const ANSWER: usize = 40;
/// One journal block: a small record's durable write.
const BLOCK: usize = 4096;
/// The preallocated file the durable server writes over, wrapping around.
const FILE_BYTES: u64 = 64 << 20;

/// A 4 KiB-aligned block of memory, as `O_DIRECT` writes need.
struct AlignedBlock {
    /// One block more than needed, so that an aligned block fits inside.
    raw: Vec<u8>,
    /// Where the aligned block starts in `raw`.
    at: usize,
}

impl AlignedBlock {
    fn new(fill: u8) -> Self {
        let raw = vec![fill; 2 * BLOCK];
        let at = raw.as_ptr().align_offset(BLOCK);
        AlignedBlock { raw, at }
    }

    fn bytes(&self) -> &[u8] {
        &self.raw[self.at..self.at + BLOCK]
    }
}

/// The durable server's file: preallocated with zeros and synced, then reopened for the rounds
/// (`O_DIRECT` when the file system takes it). Returns the file and whether it is direct.
fn journal_file(path: &Path) -> std::io::Result<(File, bool)> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(path)?;
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..(FILE_BYTES >> 20) {
        f.write_all(&zeros)?;
    }
    f.sync_all()?;
    drop(f);
    match OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
    {
        Ok(f) => Ok((f, true)),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            Ok((OpenOptions::new().write(true).open(path)?, false))
        }
        Err(e) => Err(e),
    }
}

/// Serves one connection: reads requests, makes each durable in `journal` when given, answers.
/// Returns the write + `fdatasync` latencies it measured.
fn serve(listener: &TcpListener, journal: Option<&File>) -> std::io::Result<Histogram<u64>> {
    use std::os::unix::fs::FileExt;
    let (mut s, _) = listener.accept()?;
    s.set_nodelay(true)?;
    let block = AlignedBlock::new(0x72);
    let mut request = [0u8; REQUEST];
    let answer = [0x61u8; ANSWER];
    let mut syncs = new_histogram();
    let mut offset = 0u64;
    loop {
        if let Err(e) = s.read_exact(&mut request) {
            return if e.kind() == std::io::ErrorKind::UnexpectedEof {
                Ok(syncs)
            } else {
                Err(e)
            };
        }
        if let Some(f) = journal {
            let t = pulsar_rs_clock::monotonic();
            f.write_all_at(block.bytes(), offset)?;
            f.sync_data()?;
            record(&mut syncs, micros(t.elapsed()), 1);
            offset = (offset + BLOCK as u64) % FILE_BYTES;
        }
        s.write_all(&answer)?;
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// Request / answer round trips for `seconds` against a server thread that makes each request
/// durable in `journal` first when given. Returns the client's round-trip latencies and the
/// server's write + sync latencies.
fn round_trips(
    seconds: f64,
    journal: Option<File>,
) -> std::io::Result<(Histogram<u64>, Histogram<u64>)> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let server = std::thread::spawn(move || serve(&listener, journal.as_ref()));
    let mut s = TcpStream::connect(addr)?;
    s.set_nodelay(true)?;
    let request = [0x71u8; REQUEST];
    let mut answer = [0u8; ANSWER];
    let mut h = new_histogram();
    let end = pulsar_rs_clock::monotonic() + Duration::from_secs_f64(seconds);
    while pulsar_rs_clock::monotonic() < end {
        let t = pulsar_rs_clock::monotonic();
        s.write_all(&request)?;
        s.read_exact(&mut answer)?;
        record(&mut h, micros(t.elapsed()), 1);
    }
    drop(s);
    let syncs = server
        .join()
        .map_err(|_| std::io::Error::other("the probe's server thread panicked"))??;
    Ok((h, syncs))
}

/// `pulsar-rs-probe round-trip`: loopback, durable and sync-alone latencies in `dir`'s file
/// system, `seconds` each.
///
/// # Errors
/// An I/O error of the socket or the scratch file.
pub fn probe(dir: &Path, seconds: f64) -> std::io::Result<Value> {
    std::fs::create_dir_all(dir)?;
    let (loopback, _) = round_trips(seconds, None)?;
    let path = dir.join(format!("probe-round-trip-{}.dat", std::process::id()));
    let (journal, direct) = journal_file(&path)?;
    let durable = round_trips(seconds, Some(journal));
    std::fs::remove_file(&path)?;
    let (durable, syncs) = durable?;
    Ok(json!({
        "request_bytes": REQUEST,
        "answer_bytes": ANSWER,
        "block_bytes": BLOCK,
        "direct": direct,
        "loopback_ms": summary_ms(&loopback),
        "durable_ms": summary_ms(&durable),
        "sync_alone_ms": summary_ms(&syncs),
    }))
}
