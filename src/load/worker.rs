//! The one client loop, shared by every workload. Per event it reads one atomic (the phase),
//! runs the script, records the latency into its own HdrHistogram and stores its count into
//! its own cache-padded counter. No lock, no channel, no allocation of ours per query.

use crate::rng::Rng;
use crate::server::{Client, Connector};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

/// Connected; waiting for the go.
pub const PHASE_WARMUP: u8 = 0;
/// Counting.
pub const PHASE_MEASURE: u8 = 1;
/// Finish the current event and return.
pub const PHASE_STOP: u8 = 2;

/// A counter alone on its cache line, so workers never share a line.
#[repr(align(128))]
#[derive(Default)]
pub struct PaddedCounter(pub AtomicU64);

/// State shared between the coordinator and the workers.
pub struct Shared {
    /// The trial's phase, set by the coordinator.
    pub phase: AtomicU8,
    /// Events completed by each worker, in any phase (for progress).
    pub events: Vec<PaddedCounter>,
    /// Workers that have returned.
    pub finished: AtomicUsize,
}

impl Shared {
    /// State for `threads` workers, starting in `phase`.
    pub fn new(threads: usize, phase: u8) -> Shared {
        Shared {
            phase: AtomicU8::new(phase),
            events: (0..threads).map(|_| PaddedCounter::default()).collect(),
            finished: AtomicUsize::new(0),
        }
    }

    /// Events so far over all workers.
    pub fn total_events(&self) -> u64 {
        self.events
            .iter()
            .map(|c| c.0.load(Ordering::Relaxed))
            .sum()
    }
}

/// What one worker measured.
pub struct WorkerReport {
    /// Event latencies, µs, measured phase only.
    pub latency_us: Histogram<u64>,
    /// Statements completed while measuring.
    pub queries: u64,
    /// Events completed while measuring.
    pub events: u64,
    /// Failed events while measuring, by message.
    pub errors: BTreeMap<String, u64>,
    /// Why the worker stopped early (its connection was lost and could not be re-made).
    pub fatal: Option<String>,
}

/// Highest latency the histograms track: one hour, in µs.
const MAX_LATENCY_US: u64 = 3_600_000_000;

/// A fresh histogram, 3 significant digits.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_US, 3).expect("valid histogram bounds")
}

/// Run events until the phase says stop, or `quota` statements have been measured.
pub fn run_worker(
    index: usize,
    mut client: Box<dyn Client>,
    connector: &dyn Connector,
    shared: &Shared,
    quota: Option<u64>,
) -> WorkerReport {
    let mut rng = Rng::from_time(index as u64 + 1);
    let mut report = WorkerReport {
        latency_us: new_histogram(),
        queries: 0,
        events: 0,
        errors: BTreeMap::new(),
        fatal: None,
    };
    let mut all_events = 0u64;
    let counter = &shared.events[index].0;
    loop {
        let phase = shared.phase.load(Ordering::Relaxed);
        if phase == PHASE_STOP {
            break;
        }
        let start = Instant::now();
        let outcome = client.event(&mut rng);
        let measuring = phase == PHASE_MEASURE;
        match outcome {
            Ok(n) => {
                if measuring {
                    let us = start.elapsed().as_micros() as u64;
                    report.latency_us.saturating_record(us.max(1));
                    report.queries += n as u64;
                    report.events += 1;
                }
            }
            Err(e) => {
                if measuring {
                    *report.errors.entry(e.message.clone()).or_default() += 1;
                }
                if e.lost {
                    match connector.connect() {
                        Ok(c) => client = c,
                        Err(e2) => {
                            report.fatal = Some(format!("connection lost: {e}; reconnect: {e2}"));
                            break;
                        }
                    }
                }
            }
        }
        all_events += 1;
        counter.store(all_events, Ordering::Relaxed);
        if quota.is_some_and(|q| report.queries >= q) {
            break;
        }
    }
    shared.finished.fetch_add(1, Ordering::Release);
    report
}
