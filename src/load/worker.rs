//! The one client loop, shared by every workload. Per event it reads one atomic (the phase),
//! runs the script, records the latency into its own HdrHistogram and stores its count into
//! its own cache-padded counter. No lock, no channel, no allocation of ours per query.
//!
//! In rate mode the worker first sleeps until the event's intended start (never spinning; a
//! worker that is late sends at once), and measures latency from that intended start, the
//! service time from its actual send, and the lag between the two.

use super::schedule::Schedule;
use crate::client::connection::DbError;
use crate::rng::Rng;
use crate::server::Connector;
use crate::workload::Client;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

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
    /// Rate mode: each worker's latest schedule lag, µs (for progress).
    pub lag_us: Vec<PaddedCounter>,
    /// Rate mode: the measured window, ns from the trial's start (start, planned length);
    /// the start is u64::MAX until measuring begins.
    pub window_ns: (AtomicU64, u64),
}

impl Shared {
    /// State for `threads` workers, starting in `phase`.
    pub fn new(threads: usize, phase: u8) -> Shared {
        Shared {
            phase: AtomicU8::new(phase),
            events: (0..threads).map(|_| PaddedCounter::default()).collect(),
            finished: AtomicUsize::new(0),
            lag_us: (0..threads).map(|_| PaddedCounter::default()).collect(),
            window_ns: (AtomicU64::new(u64::MAX), 0),
        }
    }

    /// The largest current schedule lag over the workers, µs.
    pub fn max_lag_us(&self) -> u64 {
        self.lag_us
            .iter()
            .map(|c| c.0.load(Ordering::Relaxed))
            .max()
            .unwrap_or(0)
    }

    /// Which end of the measured window a send falls in: Some(0) for its first
    /// quarter, Some(1) for its last, None otherwise.
    fn quarter(&self, since_t0: Duration) -> Option<usize> {
        let start = self.window_ns.0.load(Ordering::Relaxed);
        let len = self.window_ns.1;
        let t = since_t0.as_nanos() as u64;
        if start == u64::MAX || len == 0 || t < start {
            return None;
        }
        let into = t - start;
        if into < len / 4 {
            Some(0)
        } else if into >= len - len / 4 && into < len {
            Some(1)
        } else {
            None
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
    /// Event latencies, µs, measured phase only (in rate mode: from the intended start).
    pub latency_us: Histogram<u64>,
    /// Statements completed while measuring.
    pub queries: u64,
    /// Events completed while measuring.
    pub events: u64,
    /// Failed events while measuring, by message.
    pub errors: BTreeMap<String, u64>,
    /// Why the worker stopped early (its connection was lost and could not be re-made).
    pub fatal: Option<String>,
    /// Connections lost and not made again (after `reconnect`'s tries): the trial ran with
    /// fewer clients than it says from then on.
    pub lost: u32,
    /// Rate mode only.
    pub open: Option<OpenLoopReport>,
    /// A replay: latencies by fingerprint tag (µs, 2 significant digits), made on first use.
    pub by_tag: Vec<Option<Histogram<u64>>>,
    /// A replay: failed statements by fingerprint tag, measured phase only.
    pub errors_by_tag: Vec<u64>,
    /// A replay: statements that sent other rows than the log recorded, by fingerprint tag.
    pub rows_off_by_tag: Vec<u64>,
}

impl WorkerReport {
    /// Nothing measured yet; `open`: with the rate mode's figures.
    pub fn empty(open: bool) -> WorkerReport {
        WorkerReport {
            latency_us: new_histogram(),
            queries: 0,
            events: 0,
            errors: BTreeMap::new(),
            fatal: None,
            lost: 0,
            open: open.then(OpenLoopReport::empty),
            by_tag: vec![],
            errors_by_tag: vec![],
            rows_off_by_tag: vec![],
        }
    }

    /// Count a replayed statement whose rows were not the log's, under its tag.
    pub fn tagged_rows_off(&mut self, tag: u32) {
        let t = tag as usize;
        if self.rows_off_by_tag.len() <= t {
            self.rows_off_by_tag.resize(t + 1, 0);
        }
        self.rows_off_by_tag[t] += 1;
    }

    /// Count a replayed statement that failed, under its fingerprint's tag.
    pub fn tagged_error(&mut self, tag: u32) {
        let t = tag as usize;
        if self.errors_by_tag.len() <= t {
            self.errors_by_tag.resize(t + 1, 0);
        }
        self.errors_by_tag[t] += 1;
    }

    /// Record a replayed statement's latency under its fingerprint's tag.
    pub fn tagged(&mut self, tag: u32, us: u64) {
        let t = tag as usize;
        if self.by_tag.len() <= t {
            self.by_tag.resize_with(t + 1, || None);
        }
        self.by_tag[t]
            .get_or_insert_with(|| {
                Histogram::new_with_bounds(1, MAX_LATENCY_US, 2).expect("valid histogram bounds")
            })
            .saturating_record(us);
    }
}

impl OpenLoopReport {
    /// Nothing measured yet.
    pub fn empty() -> OpenLoopReport {
        OpenLoopReport {
            service_us: new_histogram(),
            lag_us: new_histogram(),
            skipped: 0,
            lag_quarters: [(0.0, 0); 2],
        }
    }
}

/// What a worker on a schedule measured besides the latency from the intended start.
pub struct OpenLoopReport {
    /// From the actual send to the answer, µs.
    pub service_us: Histogram<u64>,
    /// From the intended start to the actual send, µs.
    pub lag_us: Histogram<u64>,
    /// Events skipped because their send would have been too late.
    pub skipped: u64,
    /// (sum of lags in µs, events) in the first and in the last quarter of the measured
    /// window, by actual send: a lag that grows means the server cannot keep up.
    pub lag_quarters: [(f64, u64); 2],
}

/// Highest latency the histograms track: one hour, in µs.
const MAX_LATENCY_US: u64 = 3_600_000_000;

/// A fresh histogram, 3 significant digits.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_US, 3).expect("valid histogram bounds")
}

/// How one worker runs.
pub struct WorkerSetup {
    /// Its index among the trial's workers.
    pub index: usize,
    /// Stop after this many measured statements (queries mode).
    pub quota: Option<u64>,
    /// Rate mode: its schedule of intended starts, from `t0`.
    pub schedule: Option<Schedule>,
    /// Rate mode: skip events later than this.
    pub skip_late: Option<Duration>,
    /// The trial's start: the schedule's origin.
    pub t0: Instant,
}

/// The longest a waiting worker sleeps before it looks at the phase again.
pub const NAP: Duration = Duration::from_millis(20);

/// Make this thread's sleeps end on time: Linux lets a sleep overrun by the thread's timer
/// slack (50 µs by default), which at a few thousand events per second per worker is most of
/// the gap between two intended starts; the worker would then fall behind by sleeping.
pub fn precise_sleep() {
    // SAFETY: prctl(PR_SET_TIMERSLACK) changes only the calling thread's timer slack.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1_000 as libc::c_ulong);
    }
}

/// Rate mode: note how late a send at `start` is against its intended start (the worker's
/// current lag, for the display); true when it is later than `--skip-late` allows, the
/// event skipped (and counted when `measuring`).
pub fn late(
    report: &mut WorkerReport,
    shared: &Shared,
    setup: &WorkerSetup,
    intended: Option<Instant>,
    start: Instant,
    measuring: bool,
) -> bool {
    let (Some(at), Some(open)) = (intended, report.open.as_mut()) else {
        return false;
    };
    let lag = start.saturating_duration_since(at);
    shared.lag_us[setup.index]
        .0
        .store(lag.as_micros() as u64, Ordering::Relaxed);
    let skip = setup.skip_late.is_some_and(|limit| lag > limit);
    if skip && measuring {
        open.skipped += 1;
    }
    skip
}

/// When an event was meant to start and was sent, for counting it once answered.
#[derive(Debug, Clone, Copy)]
pub struct Sent {
    /// The trial's start.
    pub t0: Instant,
    /// Rate mode: its intended start.
    pub intended: Option<Instant>,
    /// Its actual send.
    pub start: Instant,
    /// A replay: its statement's fingerprint tag.
    pub tag: Option<u32>,
}

impl Sent {
    /// A measured event of `n` statements answered at `done`: its latency (from the
    /// intended start in rate mode), and in rate mode its service time and lag.
    pub fn count(&self, report: &mut WorkerReport, shared: &Shared, n: u32, done: Instant) {
        let from = self.intended.unwrap_or(self.start);
        let us = done.saturating_duration_since(from).as_micros() as u64;
        report.latency_us.saturating_record(us.max(1));
        if let Some(t) = self.tag {
            report.tagged(t, us.max(1));
        }
        report.queries += n as u64;
        report.events += 1;
        if let (Some(at), Some(open)) = (self.intended, report.open.as_mut()) {
            let service = done.saturating_duration_since(self.start).as_micros() as u64;
            open.service_us.saturating_record(service.max(1));
            let lag = self.start.saturating_duration_since(at).as_micros() as u64;
            open.lag_us.saturating_record(lag.max(1));
            if let Some(q) = shared.quarter(self.start.duration_since(self.t0)) {
                open.lag_quarters[q].0 += lag as f64;
                open.lag_quarters[q].1 += 1;
            }
        }
    }
}

/// Run events until the phase says stop, or the quota of statements has been measured (a
/// failed event counts as one: a statement that always fails must not run for ever).
pub fn run_worker(
    setup: WorkerSetup,
    mut client: Client,
    connector: &Connector,
    shared: &Shared,
) -> WorkerReport {
    let index = setup.index;
    let mut rng = Rng::from_time(index as u64 + 1);
    let mut report = WorkerReport::empty(setup.schedule.is_some());
    let mut setup = setup;
    let mut schedule = setup.schedule.take();
    if schedule.is_some() {
        precise_sleep();
    }
    let mut all_events = 0u64;
    // Measured events that failed (they count toward a quota too).
    let mut failed = 0u64;
    let counter = &shared.events[index].0;
    'events: loop {
        let mut phase = shared.phase.load(Ordering::Relaxed);
        if phase == PHASE_STOP {
            break;
        }
        let mut intended = None;
        if let Some(s) = schedule.as_mut() {
            let at = setup.t0 + Duration::from_nanos(s.next_start());
            // Wait without spinning, looking at the phase now and then.
            loop {
                let now = Instant::now();
                if now >= at {
                    break;
                }
                std::thread::sleep((at - now).min(NAP));
                phase = shared.phase.load(Ordering::Relaxed);
                if phase == PHASE_STOP {
                    break 'events;
                }
            }
            intended = Some(at);
        }
        let start = Instant::now();
        let measuring = phase == PHASE_MEASURE;
        if late(&mut report, shared, &setup, intended, start, measuring) {
            client.skip();
            continue;
        }
        let outcome = client.event(&mut rng);
        let sent = Sent {
            t0: setup.t0,
            intended,
            start,
            tag: client.tag(),
        };
        match outcome {
            Ok(n) => {
                if measuring {
                    sent.count(&mut report, shared, n, Instant::now());
                    if let Some(tag) = sent.tag
                        && client.rows_differ()
                    {
                        report.tagged_rows_off(tag);
                    }
                }
            }
            Err(e) => {
                if measuring {
                    *report.errors.entry(e.message.clone()).or_default() += 1;
                    if let Some(tag) = sent.tag {
                        report.tagged_error(tag);
                    }
                    failed += 1;
                }
                if e.lost() {
                    match reconnect(connector, shared, false) {
                        Ok(c) => client = c.resume(&mut client),
                        Err(gave_up) => {
                            let why = gave_up.record(&mut report, &format!("connection lost: {e}"));
                            report.fatal = Some(why);
                            break;
                        }
                    }
                }
            }
        }
        all_events += 1;
        counter.store(all_events, Ordering::Relaxed);
        if setup.quota.is_some_and(|q| report.queries + failed >= q) {
            break;
        }
    }
    shared.finished.fetch_add(1, Ordering::Release);
    report
}

/// Connect again after a lost connection: a busy server (a neighbour on its CPU, a burst of
/// kills, a connection limit reached for a moment) may refuse or time out one attempt, so
/// up to five are made, over 2.35 s, while the trial goes on (`once`: one attempt, for a
/// thread that already saw every try fail: a server that is gone is not waited for again per
/// connection). When none succeeds: the last error, how many tries were made, and whether
/// the trial was still on when they ran out (not: its window closed first, and the
/// connection was down only for the rest of it, like an event that failed).
pub fn reconnect(connector: &Connector, shared: &Shared, once: bool) -> Result<Client, GaveUp> {
    let pauses: &[u64] = if once { &[0] } else { &RECONNECT_PAUSES_MS };
    let mut last = None;
    let mut tries = 0;
    for &pause_ms in pauses {
        if pause_ms > 0 {
            if shared.phase.load(Ordering::Relaxed) == PHASE_STOP {
                break;
            }
            std::thread::sleep(Duration::from_millis(pause_ms));
        }
        tries += 1;
        match connector.connect() {
            Ok(c) => return Ok(c),
            Err(e) => last = Some(e),
        }
    }
    Err(GaveUp {
        error: last.expect("at least one attempt"),
        tries,
        in_window: shared.phase.load(Ordering::Relaxed) != PHASE_STOP,
    })
}

/// Why a lost connection was not made again.
pub struct GaveUp {
    /// The last attempt's error.
    pub error: DbError,
    /// Attempts made.
    pub tries: usize,
    /// They ran out while the trial was on: the connection is lost for good to it.
    pub in_window: bool,
}

impl GaveUp {
    /// Count it in `report` (a connection lost for good when the trial was on), and say why.
    pub fn record(&self, report: &mut WorkerReport, why: &str) -> String {
        if self.in_window {
            report.lost += 1;
        }
        let tries = if self.tries == 1 { "try" } else { "tries" };
        format!("{why}; reconnect ({} {tries}): {}", self.tries, self.error)
    }
}

/// The pauses before each attempt to connect again (ms): five tries over 2.35 s.
pub const RECONNECT_PAUSES_MS: [u64; 5] = [0, 50, 200, 600, 1500];
