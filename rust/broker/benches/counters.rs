//! Counter micro-benchmarks: [`PermitCounter`] (FLOW permits) and [`Meter`] from one thread and
//! under contention from several threads, and [`TokenBucket`] (publish/dispatch rate limiting).
//!
//! Contended runs split the iterations over `threads` OS threads hammering one shared counter;
//! the reported time is wall-clock per operation over all threads.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use pulsar_rs_broker::permits::PermitCounter;
use pulsar_rs_broker::rate::{Meter, TokenBucket};

/// Runs `op` `iters` times split over `threads` threads; returns wall-clock time.
fn contended<T: Send + Sync + 'static>(
    shared: &Arc<T>,
    threads: usize,
    iters: u64,
    op: fn(&T, u64),
) -> Duration {
    let per = iters.div_ceil(threads as u64);
    let barrier = Arc::new(std::sync::Barrier::new(threads + 1));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (s, b) = (Arc::clone(shared), Arc::clone(&barrier));
            std::thread::spawn(move || {
                b.wait();
                for i in 0..per {
                    op(&s, i);
                }
            })
        })
        .collect();
    barrier.wait();
    let t = pulsar_rs_clock::monotonic();
    for h in handles {
        h.join().expect("bench thread");
    }
    t.elapsed()
}

fn bench_permits(c: &mut Criterion) {
    let mut g = c.benchmark_group("permits");
    g.throughput(Throughput::Elements(1));
    let counter = PermitCounter::new();
    g.bench_function("add_take_1_thread", |b| {
        b.iter(|| {
            counter.add(black_box(2));
            black_box(counter.try_take(black_box(1)))
        })
    });
    for threads in [2usize, 4] {
        let shared = Arc::new(PermitCounter::new());
        g.bench_with_input(
            BenchmarkId::new("add_take_contended", threads),
            &threads,
            |b, &threads| {
                b.iter_custom(|iters| {
                    contended(&shared, threads, iters, |c, i| {
                        // Half the threads' ops add (FLOW), half take (dispatch).
                        if i % 2 == 0 {
                            c.add(2);
                        } else {
                            black_box(c.try_take(2));
                        }
                    })
                })
            },
        );
    }
    g.finish();
}

fn bench_meter(c: &mut Criterion) {
    let mut g = c.benchmark_group("meter");
    g.throughput(Throughput::Elements(1));
    let m = Meter::default();
    g.bench_function("record_1_thread", |b| {
        b.iter(|| m.record(black_box(1), black_box(100)))
    });
    let shared = Arc::new(Meter::default());
    g.bench_function("record_contended_2", |b| {
        b.iter_custom(|iters| contended(&shared, 2, iters, |m, _| m.record(1, 100)))
    });
    g.finish();
}

fn bench_token_bucket(c: &mut Criterion) {
    let mut g = c.benchmark_group("token_bucket");
    g.throughput(Throughput::Elements(1));
    let tb = TokenBucket::new(1e12);
    g.bench_function("consume_1_thread", |b| {
        b.iter(|| black_box(tb.consume(black_box(1.0))))
    });
    g.bench_function("wait_time_1_thread", |b| {
        b.iter(|| black_box(tb.wait_time(black_box(1.0))))
    });
    let shared = Arc::new(TokenBucket::new(1e12));
    g.bench_function("consume_contended_2", |b| {
        b.iter_custom(|iters| {
            contended(&shared, 2, iters, |t, _| {
                black_box(t.consume(1.0));
            })
        })
    });
    g.finish();
}

criterion_group!(benches, bench_permits, bench_meter, bench_token_bucket);
criterion_main!(benches);
