//! One trial of this process's own workers: connect every client first (so a bad login
//! fails before any load), start the workers, settle until steady (`settle`; at most the
//! warmup), read the server, measure (noting the events at half time: the trial's halves),
//! read it again, stop, merge. The window's waits are `window::run_phase`; the workers' side
//! of them (their counters sampled a few times a second, never touched on the hot path) is
//! `Workers`. `with_workers` and `begin_measure` also serve an agent's trial.

use super::measure::{snapshot, status_reader};
use super::schedule::{Rate, Schedule};
use super::settle::Settle;
use super::window::{Phase, run_phase};
use super::worker::{
    self, PHASE_MEASURE, PHASE_STOP, PHASE_WARMUP, Shared, WorkerReport, WorkerSetup,
};
use super::{Execution, evented};
use super::{Target, TrialPlan, TrialProbes, TrialProgress};
use crate::results::Trial;
use crate::server::{Connector, ServerLost};
use crate::workload::Client;
use anyhow::Result;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// How often the workers' counters are sampled for the display.
const SAMPLE: Duration = Duration::from_millis(250);

/// Run one trial with this process's workers (`LocalLoad`).
pub fn run_local(
    target: &Target<'_>,
    plan: &TrialPlan,
    probes: &TrialProbes,
    on_tick: &mut dyn FnMut(&TrialProgress),
) -> Result<Trial> {
    let server = target.server;
    let threads = plan.threads.max(1) as usize;
    let connector = server.connector(target.workload);
    let clients = connect_clients(&connector, threads)?;
    let mut admin = status_reader(server, probes)?;
    let queries_mode = plan.queries.is_some();
    let seed = crate::rng::Rng::from_time(threads as u64).next_u64();
    // Fixed-count trials measure from the first query: read the server before the workers
    // start.
    // (No load runs yet: nothing of dbtax's is counted during this read.)
    let mut early = queries_mode
        .then(|| snapshot(server, probes, admin.as_mut()))
        .transpose()?
        .map(|mut s| {
            s.read_lag_events = Some(0);
            s
        });
    // Closed loop settles until steady; at a rate the throughput is the schedule's, and the
    // warm-up is the plan's.
    let settles = plan.rate.is_none() && !queries_mode;
    let (reports, outcome) = with_workers(clients, &connector, plan, seed, |shared, t0| {
        let watch = probes.watch.as_ref();
        let mut workers = Workers::new(shared, plan, on_tick);
        let mut settled = None;
        if !queries_mode {
            let started = Instant::now();
            if settles {
                workers.settle = Some(Settle::new(started, shared.total_events()));
            }
            run_phase(&mut workers, Some(started + plan.warmup), false, watch)?;
            settled = workers.settle.take().map(|s| s.elapsed_s(Instant::now()));
        }
        let before = match early.take() {
            Some(s) => s,
            None => snapshot_during(shared, server, probes, admin.as_mut())?,
        };
        begin_measure(shared, t0, before.at);
        let mut halves = None;
        if settles {
            let e0 = shared.total_events();
            let mid = before.at + plan.duration / 2;
            run_phase(&mut workers, Some(mid), true, watch)?;
            let (e1, at1) = (shared.total_events(), Instant::now());
            run_phase(&mut workers, Some(before.at + plan.duration), true, watch)?;
            let (e2, at2) = (shared.total_events(), Instant::now());
            let rate = |e: u64, dt: Duration| e as f64 / dt.as_secs_f64().max(1e-9);
            halves = Some([
                rate(e1 - e0, at1.duration_since(before.at)),
                rate(e2 - e1, at2.duration_since(at1)),
            ]);
        } else {
            let end = (!queries_mode).then(|| before.at + plan.duration);
            run_phase(&mut workers, end, true, watch)?;
        }
        Ok::<_, anyhow::Error>((
            before,
            snapshot_during(shared, server, probes, admin.as_mut())?,
            settled,
            halves,
        ))
    });
    let (before, after, settled, halves) = outcome?;
    let client_cpu_us = after.client_cpu_us.saturating_sub(before.client_cpu_us);
    // One report per OS thread that drove connections.
    let load_threads = reports.len() as u32;
    let fingerprints = match &target.workload.workload.slice.0 {
        Some(slice) => super::reports::fingerprints(&reports, slice)?,
        None => vec![],
    };
    let mut trial =
        super::reports::summarize(reports, &before, &after, plan.rate, client_cpu_us as f64)?;
    trial.settle_s = settled;
    trial.load_threads = Some(load_threads);
    trial.fingerprints = fingerprints;
    // The halves were counted in events: in statements, as `qps` is.
    let per_event = if trial.tps > 0.0 {
        trial.qps / trial.tps
    } else {
        1.0
    };
    trial.halves_qps = halves.map(|h| h.map(|e| e * per_event));
    Ok(trial)
}

/// A snapshot taken while the workers run, with the events they completed during it.
fn snapshot_during(
    shared: &Shared,
    server: &crate::server::Server,
    probes: &TrialProbes,
    admin: Option<&mut Box<dyn crate::server::Admin>>,
) -> Result<super::measure::Snapshot> {
    let from = shared.total_events();
    let mut s = snapshot(server, probes, admin)?;
    s.read_lag_events = Some(shared.total_events().saturating_sub(from));
    Ok(s)
}

/// Open one connection per client, all before any load: a bad login fails here.
pub fn connect_clients(connector: &Connector, threads: usize) -> Result<Vec<Client>> {
    (0..threads)
        .map(|i| {
            connector.connect().map_err(|e| {
                let what = format!("opening client connection {} of {threads}: {e}", i + 1);
                if e.lost() {
                    anyhow::Error::new(ServerLost(what))
                } else {
                    anyhow::anyhow!(what)
                }
            })
        })
        .collect()
}

/// After Ctrl-C, how long the workers may take to finish the statement they are in before
/// they are left behind (a frozen server would keep them waiting for the client timeout):
/// the run goes on to restore the server's settings.
const GRACE: Duration = Duration::from_secs(2);

/// Run one worker per client (warming up, or measuring from the start in queries mode) while
/// `body` runs on this thread and moves the phases (`begin_measure`); stop them when it
/// returns, and hand back each worker's report with what `body` returned. `plan.rate` is the
/// rate of these workers together. After Ctrl-C a worker that does not stop within `GRACE`
/// is left behind, its report lost (the trial is not kept anyway).
pub fn with_workers<R>(
    clients: Vec<Client>,
    connector: &Connector,
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
    let shared = Arc::new(shared);
    let quota = |i: usize| {
        plan.queries
            .map(|n| n / threads as u64 + u64::from((i as u64) < n % threads as u64))
    };
    let t0 = Instant::now();
    let mut clients = clients;
    let model = match super::execution(threads, plan.client_threads) {
        Execution::EventLoop(n) if evented::can_run(&mut clients) => n,
        _ => 0,
    };
    let setups = clients.into_iter().enumerate().map(|(i, mut client)| {
        // A replay: this client's share of the sessions, at their recorded times or not.
        client.set_lane(i, threads);
        let recorded = client
            .recorded_schedule()
            .map(|(starts, period)| Schedule::recorded(starts, period));
        let setup = WorkerSetup {
            index: i,
            quota: quota(i),
            schedule: recorded.or_else(|| {
                plan.rate
                    .map(|r| Schedule::new(r.per_second, r.arrival, i, threads, seed))
            }),
            skip_late: plan.rate.and_then(|r| r.skip_late),
            t0,
        };
        (setup, client)
    });
    let handles: Vec<_> = if model == 0 {
        setups
            .map(|(setup, client)| {
                let (shared, connector) = (shared.clone(), connector.clone());
                std::thread::spawn(move || worker::run_worker(setup, client, &connector, &shared))
            })
            .collect()
    } else {
        // Connections dealt round-robin over the loop's threads.
        let mut shares: Vec<Vec<_>> = (0..model).map(|_| vec![]).collect();
        for (i, c) in setups.enumerate() {
            shares[i % model].push(c);
        }
        shares
            .into_iter()
            .map(|share| {
                let (shared, connector) = (shared.clone(), connector.clone());
                std::thread::spawn(move || evented::run(share, &connector, &shared))
            })
            .collect()
    };
    let out = body(&shared, t0);
    shared.phase.store(PHASE_STOP, Ordering::SeqCst);
    let mut stopped_at: Option<Instant> = None;
    let mut left = handles;
    let mut reports = Vec::with_capacity(left.len());
    loop {
        let (done, waiting): (Vec<_>, Vec<_>) = left.into_iter().partition(|h| h.is_finished());
        reports.extend(
            done.into_iter()
                .map(|h| h.join().expect("worker thread panicked")),
        );
        left = waiting;
        if left.is_empty() {
            break;
        }
        if crate::interrupt::requested() {
            let since = *stopped_at.get_or_insert_with(Instant::now);
            if since.elapsed() >= GRACE {
                // Left behind, blocked on the server: they end with the process.
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    (reports, out)
}

/// The measured window starts now (`at`): workers count from here.
pub fn begin_measure(shared: &Shared, t0: Instant, at: Instant) {
    shared
        .window_ns
        .0
        .store(at.duration_since(t0).as_nanos() as u64, Ordering::SeqCst);
    shared.phase.store(PHASE_MEASURE, Ordering::SeqCst);
}

/// The workers as a phase of the window sees them: a nap is a sleep, their counters are
/// sampled for the display, and in queries mode the phase ends when every worker is done.
struct Workers<'a, 'b> {
    shared: &'a Shared,
    rate: Option<Rate>,
    /// Queries mode: the quota in total.
    quota: Option<u64>,
    last_events: u64,
    last_at: Instant,
    on_tick: &'b mut dyn FnMut(&TrialProgress),
    /// While settling: the rule that ends the warm-up once the throughput is steady.
    settle: Option<Settle>,
}

impl<'a, 'b> Workers<'a, 'b> {
    fn new(
        shared: &'a Shared,
        plan: &TrialPlan,
        on_tick: &'b mut dyn FnMut(&TrialProgress),
    ) -> Self {
        Workers {
            shared,
            rate: plan.rate,
            quota: plan.queries,
            last_events: shared.total_events(),
            last_at: Instant::now(),
            on_tick,
            settle: None,
        }
    }
}

impl Phase for Workers<'_, '_> {
    fn nap(&self) -> Duration {
        // Queries mode ends when the workers do, settling looks at every window: more often.
        if self.quota.is_some() {
            Duration::from_millis(20)
        } else if self.settle.is_some() {
            Duration::from_millis(25)
        } else {
            Duration::from_millis(100)
        }
    }

    fn wait(&mut self, nap: Duration) -> Result<()> {
        std::thread::sleep(nap);
        Ok(())
    }

    fn finished(&self) -> bool {
        self.shared.finished.load(Ordering::Acquire) == self.shared.events.len()
            || self
                .settle
                .as_ref()
                .is_some_and(|s| s.steady(Instant::now()))
    }

    fn tick(&mut self, measuring: bool, elapsed: Duration, planned: Duration) -> Result<()> {
        if let Some(s) = self.settle.as_mut() {
            s.sample(Instant::now(), self.shared.total_events());
        }
        if self.last_at.elapsed() < SAMPLE {
            return Ok(());
        }
        let events = self.shared.total_events();
        let dt = self.last_at.elapsed().as_secs_f64();
        let eps = (events - self.last_events) as f64 / dt;
        self.last_events = events;
        self.last_at = Instant::now();
        (self.on_tick)(&TrialProgress {
            measuring,
            elapsed,
            planned,
            events_per_s: eps,
            quota_done: self
                .quota
                .map(|q| (events as f64 / q.max(1) as f64).min(1.0)),
            asked_per_s: self.rate.map(|r| r.per_second),
            lag_ms: self.rate.map(|_| self.shared.max_lag_us() as f64 / 1000.0),
        });
        Ok(())
    }
}
