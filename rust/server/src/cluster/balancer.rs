//! What the load balancer keeps on this broker between its rounds: this process's CPU usage
//! ([`CpuSampler`], read by the load report) and the counts of what it did
//! ([`LoadBalancerCounters`], written by [`super::shedding`] and [`super::split`], read by the
//! metrics). Plain types with no part of the server in them, so the server context can hold them.

use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use pulsar_rs_cluster::documents::ResourceUsage;

/// How long the CPU usage is averaged over: shorter reads are noise, longer ones lag.
const CPU_WINDOW: Duration = Duration::from_secs(10);

/// What the load balancer did on this broker, for `/metrics` (Pulsar's `brk_lb_*` counts).
#[derive(Debug, Default)]
pub struct LoadBalancerCounters {
    /// Brokers shed from, summed over the rounds this broker led (`pulsar_lb_unload_broker_count`).
    /// Written by the shedding task; Relaxed: a count read by metrics only.
    pub unload_broker_count: AtomicU64,
    /// Bundles shed (`pulsar_lb_unload_bundle_count`). As above.
    pub unload_bundle_count: AtomicU64,
    /// Bundles split automatically (`pulsar_lb_bundles_split_count`). Written by the split
    /// task; Relaxed as above.
    pub bundles_split_count: AtomicU64,
}

/// This process's CPU usage over the last [`CPU_WINDOW`].
#[derive(Debug)]
pub struct CpuSampler {
    /// (when, CPU time then) of the window's start, and the usage of the last full window
    /// (percent of one core). Locked by the one caller a second (the report task), briefly.
    state: Mutex<(Instant, Duration, f64)>,
    /// 100 per core the process may run on.
    limit: f64,
}

impl Default for CpuSampler {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        CpuSampler {
            state: Mutex::new((
                pulsar_rs_clock::monotonic(),
                pulsar_rs_clock::process_cpu_time(),
                0.0,
            )),
            limit: 100.0 * cores as f64,
        }
    }
}

impl CpuSampler {
    /// The usage of the last full window (percent of one core) out of 100 per core.
    pub fn usage(&self) -> ResourceUsage {
        let now = pulsar_rs_clock::monotonic();
        let cpu = pulsar_rs_clock::process_cpu_time();
        let mut s = self.state.lock();
        let elapsed = now.duration_since(s.0);
        if elapsed >= CPU_WINDOW {
            s.2 = cpu.saturating_sub(s.1).as_secs_f64() / elapsed.as_secs_f64() * 100.0;
            *s = (now, cpu, s.2);
        }
        ResourceUsage {
            usage: s.2,
            limit: self.limit,
        }
    }
}
