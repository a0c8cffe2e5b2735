//! What a sleep and a wake-up cost on this machine, in CPU time charged to the process
//! (`pulsar-rs-probe wake`).
//!
//! A broker whose load comes in small pieces (one unbatched message per client write) sleeps
//! and is woken several times per message: its connection thread in `epoll_wait`, its journal
//! flusher on a condition variable and in each write and sync. Under a client that cannot
//! saturate it, the broker's CPU per message is then bounded below by wake-ups per message
//! times what one costs. This module measures that cost three ways:
//!
//! * **timed sleep**: a thread sleeps `n` times for a few microseconds; the CPU time it is
//!   charged per sleep, and how long each sleep really lasts;
//! * **wake across CPUs**: two threads pinned to different CPUs hand a turn back and forth
//!   with `park`/`unpark` (a futex), so every hand-over wakes a CPU that went idle;
//! * **wake on one CPU**: the same with both threads pinned to one CPU, where a hand-over is a
//!   plain context switch and no CPU idles.
//!
//! The difference between the last two is what idling and waking a CPU adds to each wake-up.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

/// CPU time of the whole process (every thread), from `CLOCK_PROCESS_CPUTIME_ID`.
fn process_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &raw mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(
        u64::try_from(ts.tv_sec).unwrap_or(0),
        u32::try_from(ts.tv_nsec).unwrap_or(0),
    )
}

/// Pins the calling thread to `cpu`. Returns false where the kernel refuses (fewer CPUs).
fn pin(cpu: usize) -> bool {
    // SAFETY: `set` is a zeroed cpu_set_t, filled with the CPU_* helpers, and outlives the call.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &raw const set) == 0
    }
}

/// The CPUs this thread may run on, from its affinity mask.
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: `set` is a zeroed cpu_set_t that the kernel fills; it outlives both calls.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &raw mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// `n` sleeps of `us` microseconds on this thread: wall and CPU time per sleep.
#[must_use]
pub fn timed_sleep(us: u64, n: u32) -> Value {
    let pause = Duration::from_micros(us);
    let (cpu0, t0) = (process_cpu(), pulsar_rs_clock::monotonic());
    for _ in 0..n {
        std::thread::sleep(pause);
    }
    let (cpu, wall) = (process_cpu().saturating_sub(cpu0), t0.elapsed());
    let per = |d: Duration| d.as_secs_f64() * 1e6 / f64::from(n.max(1));
    json!({
        "sleep_us": us,
        "sleeps": n,
        "wall_us_per_sleep": per(wall),
        "cpu_us_per_sleep": per(cpu),
    })
}

/// Two threads pinned to `cpus` hand a turn back and forth `n` times each: wall and process CPU
/// time per wake-up (2 `n` wake-ups). `None` if a thread could not be pinned.
#[must_use]
pub fn ping_pong(cpus: [usize; 2], n: u32) -> Option<Value> {
    // Whose turn it is: even for the main thread, odd for the other; `u64::MAX` stops both.
    // Release on each hand-over pairs with the other side's Acquire load; the counter is the
    // only data handed over, so nothing stronger is needed.
    let turn = Arc::new(AtomicU64::new(0));
    let main = std::thread::current();
    let other_turn = Arc::clone(&turn);
    let rounds = u64::from(n);
    let other = std::thread::spawn(move || -> bool {
        if !pin(cpus[1]) {
            other_turn.store(u64::MAX, Ordering::Release);
            main.unpark();
            return false;
        }
        for i in 0..rounds {
            loop {
                match other_turn.load(Ordering::Acquire) {
                    t if t == 2 * i + 1 => break,
                    u64::MAX => return false,
                    _ => std::thread::park(),
                }
            }
            other_turn.store(2 * i + 2, Ordering::Release);
            main.unpark();
        }
        true
    });
    if !pin(cpus[0]) {
        // Release the other thread (it stops at the sentinel) before giving up.
        turn.store(u64::MAX, Ordering::Release);
        other.thread().unpark();
        let _ = other.join();
        return None;
    }
    let waiter = other.thread().clone();
    let (cpu0, t0) = (process_cpu(), pulsar_rs_clock::monotonic());
    for i in 0..rounds {
        turn.store(2 * i + 1, Ordering::Release);
        waiter.unpark();
        loop {
            let t = turn.load(Ordering::Acquire);
            if t == 2 * i + 2 {
                break;
            }
            if t == u64::MAX {
                let _ = other.join();
                return None;
            }
            std::thread::park();
        }
    }
    let (cpu, wall) = (process_cpu().saturating_sub(cpu0), t0.elapsed());
    if !other.join().unwrap_or(false) {
        return None;
    }
    let wakes = 2.0 * f64::from(n.max(1));
    Some(json!({
        "cpus": cpus,
        "wake_ups": 2 * u64::from(n),
        "wall_us_per_wake": wall.as_secs_f64() * 1e6 / wakes,
        "cpu_us_per_wake": cpu.as_secs_f64() * 1e6 / wakes,
    }))
}

/// The whole probe: timed sleeps of 20 and 200 µs, and hand-overs across two CPUs and on one.
#[must_use]
pub fn probe(n: u32) -> Value {
    // The sleeps and the hand-overs run on their own threads, so that pinning one measurement
    // does not constrain the next.
    let sleeps = std::thread::spawn(move || vec![timed_sleep(20, n), timed_sleep(200, n / 4 + 1)])
        .join()
        .unwrap_or_default();
    let cpus = allowed_cpus();
    let run = |pair: [usize; 2]| {
        std::thread::spawn(move || ping_pong(pair, n))
            .join()
            .ok()
            .flatten()
    };
    let across = (cpus.len() >= 2).then(|| run([cpus[0], cpus[1]])).flatten();
    let one = cpus.first().and_then(|&c| run([c, c]));
    json!({
        "timed_sleep": sleeps,
        "wake_across_cpus": across,
        "wake_on_one_cpu": one,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both threads pinned to one CPU still hand the turn over to the end (no lost wake-up
    /// leaves one parked for ever) and report per wake-up.
    #[test]
    fn a_hand_over_on_one_cpu_completes() {
        let cpu = allowed_cpus()[0];
        let v = ping_pong([cpu, cpu], 200).expect("a CPU this thread may run on");
        assert_eq!(v["wake_ups"], 400);
        assert!(v["wall_us_per_wake"].as_f64().unwrap() > 0.0);
    }

    /// Figures are per sleep: ten sleeps of 200 µs give at least 200 µs each, not in total.
    #[test]
    fn a_sleep_lasts_at_least_what_was_asked() {
        let v = timed_sleep(200, 10);
        assert!(v["wall_us_per_sleep"].as_f64().unwrap() >= 200.0, "{v}");
    }
}
