//! One trial: connect every client first (so a bad login fails before any load), start the
//! workers, settle for the warmup, snapshot the probes, measure, snapshot again, stop, merge.
//! The coordinator thread is also the progress reporter: it samples the workers' counters a
//! few times a second and never touches the hot path. `summary` makes the reports one trial.

use super::schedule::{Rate, Schedule};
use super::worker::{
    self, PHASE_MEASURE, PHASE_STOP, PHASE_WARMUP, Shared, WorkerReport, WorkerSetup,
};
use crate::error::Failure;
use crate::results::Trial;
use crate::server::{Admin, Client, Connector, Server, ServerLost};
use crate::workload::PreparedWorkload;
use anyhow::{Result, bail};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// How to run one trial.
#[derive(Debug, Clone)]
pub struct TrialPlan {
    /// Client threads, one connection each.
    pub threads: u32,
    /// Measured time (ignored when `queries` is set).
    pub duration: Duration,
    /// Settle time before measuring.
    pub warmup: Duration,
    /// Stop after this many statements in total, split over the threads (mysqlslap style).
    pub queries: Option<u64>,
    /// Open loop: events start on a schedule at this rate (None: closed loop).
    pub rate: Option<Rate>,
    /// Load from these agents instead of this process's own workers.
    pub agents: Option<crate::agent::Agents>,
}

/// Rate mode's calibration measures closed-loop capacity for at least this long.
pub const CALIBRATION: Duration = Duration::from_secs(2);

impl TrialPlan {
    /// The calibration before a share-of-capacity rate: this plan in closed loop, for at
    /// least `CALIBRATION`.
    pub fn calibration(&self) -> TrialPlan {
        TrialPlan {
            duration: self.duration.max(CALIBRATION),
            rate: None,
            ..self.clone()
        }
    }
}

/// A check made a few times a second while a trial runs; Some(reason) stops the trial with
/// that error (the disk guard: a log must not fill its filesystem mid-trial).
pub type Watch = std::sync::Arc<dyn Fn() -> Option<String> + Send + Sync>;

/// What to read around the measured window besides the counters.
#[derive(Clone, Default)]
pub struct TrialProbes {
    /// Log files whose growth is the feature's log bytes (local paths).
    pub log_files: Vec<PathBuf>,
    /// Read `SHOW GLOBAL STATUS` before and after.
    pub server_status: bool,
    /// Stop the trial when this says so.
    pub watch: Option<Watch>,
}

/// A progress sample, passed to the caller's display.
#[derive(Debug, Clone)]
pub struct TrialProgress {
    /// True while measuring, false while settling.
    pub measuring: bool,
    /// Time in the current phase.
    pub elapsed: Duration,
    /// Planned length of the current phase (zero in queries mode).
    pub planned: Duration,
    /// Events per second over the last sample interval.
    pub events_per_s: f64,
    /// Fraction of the query quota done (queries mode).
    pub quota_done: Option<f64>,
    /// Rate mode: the asked rate, events/s.
    pub asked_per_s: Option<f64>,
    /// Rate mode: the largest current schedule lag over the workers, ms.
    pub lag_ms: Option<f64>,
}

/// What is read of the server (and of this process) at each end of the measured window.
pub(crate) struct Snapshot {
    pub(crate) at: Instant,
    pub(crate) client_cpu_us: u64,
    pub(crate) server_cpu: Option<crate::host::CpuSnapshot>,
    pub(crate) log_bytes: Option<u64>,
    pub(crate) status: BTreeMap<String, f64>,
}

pub(crate) fn snapshot(
    server: &Server,
    probes: &TrialProbes,
    admin: Option<&mut Box<dyn Admin>>,
) -> Snapshot {
    let status = match admin {
        Some(a) => a.status_counters().unwrap_or_default(),
        None => BTreeMap::new(),
    };
    // A file not created yet counts 0 bytes; one dbtax may not read makes the figure
    // unknown (null), never 0.
    let log_bytes = if probes.log_files.is_empty() {
        None
    } else {
        probes
            .log_files
            .iter()
            .map(|p| match std::fs::metadata(p) {
                Ok(m) => Some(m.len()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(0),
                Err(_) => None,
            })
            .sum::<Option<u64>>()
    };
    Snapshot {
        client_cpu_us: crate::host::self_cpu_us(),
        server_cpu: server.server_cpu(),
        log_bytes,
        status,
        at: Instant::now(),
    }
}

/// Run one trial against `server`: with the plan's agents when it has some (they load, this
/// process measures the server), else with this process's own workers.
pub fn run_trial(
    server: &Server,
    workload: &PreparedWorkload,
    plan: &TrialPlan,
    probes: &TrialProbes,
    on_tick: &mut dyn FnMut(&TrialProgress),
) -> Result<Trial> {
    if let Some(agents) = &plan.agents {
        return crate::agent::lock(agents).run_trial(server, workload, plan, probes, on_tick);
    }
    let threads = plan.threads.max(1) as usize;
    let connector = server.connector(workload);
    let clients = connect_clients(connector.as_ref(), threads)?;
    let mut admin = if probes.server_status {
        Some(server.admin()?)
    } else {
        None
    };
    let queries_mode = plan.queries.is_some();
    let seed = crate::rng::Rng::from_time(threads as u64).next_u64();
    // Fixed-count trials measure from the first query: snapshot before the workers start.
    let mut early = queries_mode.then(|| snapshot(server, probes, admin.as_mut()));
    let (reports, (before, after, stopped)) =
        with_workers(clients, connector.as_ref(), plan, seed, |shared, t0| {
            let mut stopped = None;
            let mut sampler = Sampler::new(shared, probes.watch.clone(), plan.rate);
            if !queries_mode {
                stopped = sampler.wait(plan.warmup, false, &mut *on_tick, None);
            }
            let before = early
                .take()
                .unwrap_or_else(|| snapshot(server, probes, admin.as_mut()));
            begin_measure(shared, t0, before.at);
            if stopped.is_none() {
                let quota_total = plan.queries.map(|q| (q, threads));
                let planned = if queries_mode {
                    Duration::ZERO
                } else {
                    plan.duration
                };
                stopped = sampler.wait(planned, true, &mut *on_tick, quota_total);
            }
            let after = snapshot(server, probes, admin.as_mut());
            (before, after, stopped)
        });
    match stopped {
        Some(Stop::Interrupted) => return Err(Failure::Interrupted.into()),
        Some(Stop::Watch(why)) => bail!("{why}"),
        None => {}
    }
    let client_cpu_us = after.client_cpu_us.saturating_sub(before.client_cpu_us);
    super::summary::summarize(reports, &before, &after, plan.rate, client_cpu_us as f64)
}

/// Open one connection per client, all before any load: a bad login fails here.
pub fn connect_clients(connector: &dyn Connector, threads: usize) -> Result<Vec<Box<dyn Client>>> {
    (0..threads)
        .map(|i| {
            connector.connect().map_err(|e| {
                let what = format!("opening client connection {} of {threads}: {e}", i + 1);
                if e.lost {
                    anyhow::Error::new(ServerLost(what))
                } else {
                    anyhow::anyhow!(what)
                }
            })
        })
        .collect()
}

/// Run one worker per client (warming up, or measuring from the start in queries mode) while
/// `body` runs on this thread and moves the phases (`begin_measure`); stop them when it
/// returns, and hand back each worker's report with what `body` returned. `plan.rate` is the
/// rate of these workers together.
pub fn with_workers<R>(
    clients: Vec<Box<dyn Client>>,
    connector: &dyn Connector,
    plan: &TrialPlan,
    seed: u64,
    body: impl FnOnce(&Shared, Instant) -> R,
) -> (Vec<WorkerReport>, R) {
    let threads = clients.len();
    let mut shared = Shared::new(
        threads,
        if plan.queries.is_some() {
            PHASE_MEASURE
        } else {
            PHASE_WARMUP
        },
    );
    shared.window_ns.1 = plan.duration.as_nanos() as u64;
    let quota = |i: usize| {
        plan.queries
            .map(|n| n / threads as u64 + u64::from((i as u64) < n % threads as u64))
    };
    let t0 = Instant::now();
    std::thread::scope(|s| {
        let handles: Vec<_> = clients
            .into_iter()
            .enumerate()
            .map(|(i, client)| {
                let shared = &shared;
                let setup = WorkerSetup {
                    index: i,
                    quota: quota(i),
                    schedule: plan
                        .rate
                        .map(|r| Schedule::new(r.per_second, r.arrival, i, threads, seed)),
                    skip_late: plan.rate.and_then(|r| r.skip_late),
                    t0,
                };
                s.spawn(move || worker::run_worker(setup, client, connector, shared))
            })
            .collect();
        let out = body(&shared, t0);
        shared.phase.store(PHASE_STOP, Ordering::SeqCst);
        let reports: Vec<WorkerReport> = handles
            .into_iter()
            .map(|h| h.join().expect("worker thread panicked"))
            .collect();
        (reports, out)
    })
}

/// The measured window starts now (`at`): workers count from here.
pub fn begin_measure(shared: &Shared, t0: Instant, at: Instant) {
    shared
        .window_ns
        .0
        .store(at.duration_since(t0).as_nanos() as u64, Ordering::SeqCst);
    shared.phase.store(PHASE_MEASURE, Ordering::SeqCst);
}

/// Why a phase ended before its time.
pub(crate) enum Stop {
    /// Ctrl-C or SIGTERM.
    Interrupted,
    /// The watch said so.
    Watch(String),
}

/// Samples the workers' counters for the progress display while a phase runs.
struct Sampler<'a> {
    shared: &'a Shared,
    watch: Option<Watch>,
    rate: Option<Rate>,
    last_events: u64,
    last_at: Instant,
}

impl<'a> Sampler<'a> {
    fn new(shared: &'a Shared, watch: Option<Watch>, rate: Option<Rate>) -> Self {
        Sampler {
            shared,
            watch,
            rate,
            last_events: shared.total_events(),
            last_at: Instant::now(),
        }
    }

    /// Wait for `planned` (or, in queries mode, until every worker is done). Some: why it
    /// stopped early.
    fn wait(
        &mut self,
        planned: Duration,
        measuring: bool,
        on_tick: &mut dyn FnMut(&TrialProgress),
        quota: Option<(u64, usize)>,
    ) -> Option<Stop> {
        let start = Instant::now();
        loop {
            if crate::interrupt::requested() {
                return Some(Stop::Interrupted);
            }
            if let Some(why) = self.watch.as_ref().and_then(|w| w()) {
                return Some(Stop::Watch(why));
            }
            let elapsed = start.elapsed();
            let done = match quota {
                Some((_, threads)) => self.shared.finished.load(Ordering::Acquire) >= threads,
                None => {
                    elapsed >= planned
                        || self.shared.finished.load(Ordering::Acquire) == self.shared.events.len()
                }
            };
            if done {
                return None;
            }
            let step = Duration::from_millis(100).min(
                planned
                    .saturating_sub(elapsed)
                    .max(Duration::from_millis(1)),
            );
            std::thread::sleep(if quota.is_some() {
                Duration::from_millis(20)
            } else {
                step
            });
            if self.last_at.elapsed() >= Duration::from_millis(250) {
                let events = self.shared.total_events();
                let dt = self.last_at.elapsed().as_secs_f64();
                let eps = (events - self.last_events) as f64 / dt;
                self.last_events = events;
                self.last_at = Instant::now();
                let quota_done = quota.map(|(q, _)| (events as f64 / q.max(1) as f64).min(1.0));
                on_tick(&TrialProgress {
                    measuring,
                    elapsed: start.elapsed(),
                    planned,
                    events_per_s: eps,
                    quota_done,
                    asked_per_s: self.rate.map(|r| r.per_second),
                    lag_ms: self.rate.map(|_| self.shared.max_lag_us() as f64 / 1000.0),
                });
            }
        }
    }
}
