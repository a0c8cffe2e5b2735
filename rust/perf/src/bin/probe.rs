//! `pulsar-rs-probe`: the machine's physical limits, measured in the same run as the brokers.
//!
//! * `tcp`: loopback TCP throughput, one writer thread and one reader thread, 64 KiB writes.
//! * `disk`: `write()+fdatasync` latency (4 KiB appends, and 4 KiB overwrites of a preallocated
//!   file), `write()+fdatasync` bandwidth for several chunk sizes, plain `write()` bandwidth,
//!   the same with `O_DIRECT` writes (as the journal's durable rounds), and reading each file
//!   back sequentially once it is not in the page cache (the read limit of a backlog that is
//!   not cached).
//! * `wake`: the CPU time a sleep and a wake-up cost (see `pulsar_rs_perf::wake`).
//! * `round-trip`: loopback and durable request / answer latency, the floor under a durable
//!   publish with one message in flight (see `pulsar_rs_perf::round_trip`).
//!
//! Output: one JSON object on stdout.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Parser, Subcommand};
use pulsar_rs_perf::stats::{new_histogram, record, summary_ms};
use serde_json::{json, Value};

#[derive(Parser, Debug)]
#[command(
    name = "pulsar-rs-probe",
    about = "Measure loopback, disk and wake-up limits"
)]
struct Args {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Loopback TCP throughput.
    Tcp {
        /// Seconds to run.
        #[arg(long, default_value_t = 3.0)]
        seconds: f64,
        /// Bytes per write().
        #[arg(long, default_value_t = 65536)]
        chunk: usize,
    },
    /// Disk write / fdatasync limits in a directory.
    Disk {
        /// Directory for the scratch file (removed afterwards).
        #[arg(long)]
        dir: PathBuf,
        /// Seconds per measurement.
        #[arg(long, default_value_t = 2.0)]
        seconds: f64,
    },
    /// CPU time per sleep and per wake-up (across CPUs and on one).
    Wake {
        /// Sleeps and hand-overs per measurement.
        #[arg(long, default_value_t = 20_000)]
        count: u32,
    },
    /// Loopback and durable request / answer latency (one request in flight).
    RoundTrip {
        /// Directory for the durable server's scratch file (removed afterwards).
        #[arg(long)]
        dir: PathBuf,
        /// Seconds per measurement.
        #[arg(long, default_value_t = 3.0)]
        seconds: f64,
    },
}

fn tcp(seconds: f64, chunk: usize) -> std::io::Result<Value> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let reader = std::thread::spawn(move || -> std::io::Result<u64> {
        let (mut s, _) = listener.accept()?;
        let mut buf = vec![0u8; 1 << 20];
        let mut total = 0u64;
        loop {
            let n = s.read(&mut buf)?;
            if n == 0 {
                return Ok(total);
            }
            total += n as u64;
        }
    });
    let mut s = TcpStream::connect(addr)?;
    s.set_nodelay(true)?;
    let buf = vec![0x5au8; chunk];
    let start = pulsar_rs_clock::monotonic();
    let end = start + Duration::from_secs_f64(seconds);
    let mut written = 0u64;
    while pulsar_rs_clock::monotonic() < end {
        for _ in 0..64 {
            s.write_all(&buf)?;
            written += chunk as u64;
        }
    }
    drop(s);
    let read = reader
        .join()
        .map_err(|_| std::io::Error::other("reader panicked"))??;
    let secs = start.elapsed().as_secs_f64();
    Ok(json!({
        "chunk_bytes": chunk,
        "bytes": read.max(written),
        "seconds": secs,
        "mb_per_s": read as f64 / secs / 1e6,
    }))
}

fn scratch(dir: &Path, name: &str) -> std::io::Result<(PathBuf, File)> {
    let path = dir.join(name);
    let f = OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(&path)?;
    Ok((path, f))
}

/// write(chunk)+fdatasync repeatedly for `seconds`; latency histogram and bandwidth.
fn sync_writes(dir: &Path, chunk: usize, seconds: f64, prealloc: bool) -> std::io::Result<Value> {
    let (path, mut f) = scratch(dir, "probe-sync.dat")?;
    let buf = vec![0xa5u8; chunk];
    if prealloc {
        let total = 64 << 20;
        let big = vec![0u8; 1 << 20];
        for _ in 0..(total >> 20) {
            f.write_all(&big)?;
        }
        f.sync_all()?;
    }
    let mut h = new_histogram();
    let start = pulsar_rs_clock::monotonic();
    let end = start + Duration::from_secs_f64(seconds);
    let (mut n, mut offset) = (0u64, 0u64);
    while pulsar_rs_clock::monotonic() < end {
        if prealloc {
            if offset + chunk as u64 > 64 << 20 {
                offset = 0;
            }
            f.seek(SeekFrom::Start(offset))?;
            offset += chunk as u64;
        }
        let t = pulsar_rs_clock::monotonic();
        f.write_all(&buf)?;
        f.sync_data()?;
        record(&mut h, t.elapsed().as_micros() as u64, 1);
        n += 1;
    }
    let secs = start.elapsed().as_secs_f64();
    drop(f);
    std::fs::remove_file(path)?;
    Ok(json!({
        "chunk_bytes": chunk,
        "preallocated": prealloc,
        "syncs": n,
        "syncs_per_s": n as f64 / secs,
        "mb_per_s": (n * chunk as u64) as f64 / secs / 1e6,
        "latency_ms": summary_ms(&h),
    }))
}

/// Plain sequential write() of 1 MiB chunks (page cache), one fdatasync at the end excluded.
fn plain_writes(dir: &Path, seconds: f64) -> std::io::Result<Value> {
    let (path, f) = scratch(dir, "probe-plain.dat")?;
    timed_writes(&path, &f, &vec![0x3cu8; 1 << 20], seconds)
}

/// `plain_writes` with `O_DIRECT` 1 MiB writes from aligned memory (`null` where the file
/// system refuses them).
fn direct_writes(dir: &Path, seconds: f64) -> std::io::Result<Value> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = dir.join("probe-direct.dat");
    let f = match OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_DIRECT)
        .open(&path)
    {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => return Ok(Value::Null),
        Err(e) => return Err(e),
    };
    let raw = vec![0x3cu8; (1 << 20) + 4096];
    let skip = raw.as_ptr().align_offset(4096);
    timed_writes(&path, &f, &raw[skip..skip + (1 << 20)], seconds)
}

/// Writes `buf` again and again to `f` (at `path`) for `seconds` (1 GiB at most, so the probe
/// never fills the disk), syncs once (timed apart), reads the file back cold and removes it.
fn timed_writes(path: &Path, f: &File, buf: &[u8], seconds: f64) -> std::io::Result<Value> {
    use std::os::unix::fs::FileExt;
    let chunk = buf.len() as u64;
    let start = pulsar_rs_clock::monotonic();
    let end = start + Duration::from_secs_f64(seconds);
    let mut n = 0u64;
    while pulsar_rs_clock::monotonic() < end && n * chunk < 1 << 30 {
        f.write_all_at(buf, n * chunk)?;
        n += 1;
    }
    let secs = start.elapsed().as_secs_f64();
    let t = pulsar_rs_clock::monotonic();
    f.sync_data()?;
    let flush = t.elapsed().as_secs_f64();
    // Read through a second, buffered descriptor: direct reads would need aligned memory.
    let cold_read = cold_read(&File::open(path)?, n * chunk)?;
    std::fs::remove_file(path)?;
    Ok(json!({
        "chunk_bytes": chunk,
        "bytes": n * chunk,
        "mb_per_s": (n * chunk) as f64 / secs / 1e6,
        "final_fdatasync_s": flush,
        "mb_per_s_including_final_sync": (n * chunk) as f64 / (secs + flush) / 1e6,
        "cold_read_mb_per_s": cold_read,
    }))
}

/// Drops the synced `file` from the page cache, then reads its `len` bytes in 1 MiB reads:
/// MB/s from the disk through the page cache.
fn cold_read(file: &File, len: u64) -> std::io::Result<f64> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::FileExt;
    // SAFETY: a plain system call on a descriptor `file` keeps open; it changes no memory.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if rc != 0 {
        return Err(std::io::Error::from_raw_os_error(rc));
    }
    let mut buf = vec![0u8; 1 << 20];
    let start = pulsar_rs_clock::monotonic();
    let mut at = 0;
    while at < len {
        let n = file.read_at(&mut buf, at)?;
        if n == 0 {
            break;
        }
        at += n as u64;
    }
    Ok(at as f64 / start.elapsed().as_secs_f64() / 1e6)
}

fn disk(dir: &Path, seconds: f64) -> std::io::Result<Value> {
    std::fs::create_dir_all(dir)?;
    let mut bw = Vec::new();
    for chunk in [4096, 64 << 10, 1 << 20] {
        bw.push(sync_writes(dir, chunk, seconds, false)?);
    }
    Ok(json!({
        "fdatasync_append_4k": sync_writes(dir, 4096, seconds, false)?,
        "fdatasync_overwrite_4k": sync_writes(dir, 4096, seconds, true)?,
        "write_fdatasync_bandwidth": bw,
        "plain_write": plain_writes(dir, seconds)?,
        "direct_write": direct_writes(dir, seconds)?,
    }))
}

fn main() {
    let args = Args::parse();
    let out = match args.cmd {
        Cmd::Tcp { seconds, chunk } => tcp(seconds, chunk),
        Cmd::Disk { dir, seconds } => disk(&dir, seconds),
        Cmd::Wake { count } => Ok(pulsar_rs_perf::wake::probe(count)),
        Cmd::RoundTrip { dir, seconds } => pulsar_rs_perf::round_trip::probe(&dir, seconds),
    };
    match out {
        Ok(v) => println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default()),
        Err(e) => {
            eprintln!("pulsar-rs-probe: {e}");
            std::process::exit(1);
        }
    }
}
