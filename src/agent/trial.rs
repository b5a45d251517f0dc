//! One trial over every agent. The coordinator prepares each agent's share (every client
//! connected before any load), fixes the measured window on its own clock and sends each agent
//! that window on the agent's clock (its offset measured at hello), reads the server around the
//! same window, then adds the agents' reports: counts summed, histograms merged exactly.

use super::pool::{Event, Pool};
use super::protocol::{self, Prepare, Reply, Request};
use super::split;
use crate::error::{Failure, usage};
use crate::load::summary::summarize;
use crate::load::trial::{Snapshot, snapshot};
use crate::load::worker::WorkerReport;
use crate::load::{Rate, TrialPlan, TrialProbes, TrialProgress};
use crate::results::{AgentTrial, Trial};
use crate::server::{Server, ServerLost};
use crate::workload::PreparedWorkload;
use anyhow::{Result, anyhow, bail};
use std::time::{Duration, Instant};

/// Connecting a share's clients may take this long (many threads, a slow server).
const PREPARE_TIMEOUT: Duration = Duration::from_secs(120);
/// After the window closes, an agent's report may take this long (a worker finishing a
/// statement: the client timeout is 60 s).
const REPORT_TIMEOUT: Duration = Duration::from_secs(90);
/// Lead time before the first agent must start, beyond the slowest round trip.
const LEAD: Duration = Duration::from_millis(50);
/// A trial is flagged when its worst skew exceeds this share of its window.
pub const SKEW_FLAG_SHARE: f64 = 0.1;

impl Pool {
    /// Run one trial with the agents' load (see the module's text).
    pub fn run_trial(
        &mut self,
        server: &Server,
        workload: &PreparedWorkload,
        plan: &TrialPlan,
        probes: &TrialProbes,
        on_tick: &mut dyn FnMut(&TrialProgress),
    ) -> Result<Trial> {
        if plan.queries.is_some() {
            return Err(usage(
                "--queries is not available with --agents: use a duration",
            ));
        }
        if let Some(a) = self.agents.iter_mut().find(|a| a.gone.is_some()) {
            let why = a.gone.clone().unwrap_or_default();
            bail!("{}", a.gone_message(&why));
        }
        let (target, schema) = self
            .target
            .clone()
            .ok_or_else(|| anyhow!("the agents have no target"))?;
        let (cpu0, traffic0) = (crate::host::self_cpu_us(), self.traffic.now());
        let total = plan.threads.max(1);
        let weights: Vec<u32> = self.agents.iter().map(|a| a.spec.weight).collect();
        let shares = split(total, &weights);
        let active: Vec<usize> = (0..shares.len()).filter(|i| shares[*i] > 0).collect();
        let seed = crate::rng::Rng::from_time(total as u64).next_u64();
        for &i in &active {
            let rate = plan.rate.map(|r| Rate {
                per_second: r.per_second * shares[i] as f64 / total as f64,
                ..r
            });
            let prepare = Prepare {
                target: target.clone(),
                schema: schema.clone(),
                workload: workload.clone(),
                threads: shares[i],
                rate,
                duration_ns: plan.duration.as_nanos() as u64,
                seed: seed ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            };
            self.agents[i].send(&Request::Prepare(Box::new(prepare)))?;
        }
        self.collect(&active, PREPARE_TIMEOUT, "connecting its clients", |r| {
            matches!(r, Reply::Ready { .. }).then_some(())
        })?;

        let mut admin = if probes.server_status {
            Some(server.admin()?)
        } else {
            None
        };
        let slowest = active
            .iter()
            .map(|i| self.agents[*i].rtt_ns)
            .max()
            .unwrap_or(0);
        let lead = LEAD + Duration::from_nanos(slowest);
        let measure_at = protocol::clock_ns() + (lead + plan.warmup).as_nanos() as u64;
        let end_at = measure_at + plan.duration.as_nanos() as u64;
        for &i in &active {
            let off = self.agents[i].offset_ns;
            let at = |t: u64| (t as i64 + off).max(0) as u64;
            self.running.push(i);
            self.agents[i].send(&Request::Start {
                measure_at_ns: at(measure_at),
                end_at_ns: at(end_at),
            })?;
        }
        let mut progress = Progress::new(self.agents.len(), plan);
        let stopped = self.wait_until(measure_at, &mut progress, false, probes, on_tick);
        let stopped = match stopped {
            Ok(()) => {
                let before = snapshot(server, probes, admin.as_mut());
                let before_ns = protocol::clock_ns();
                self.wait_until(end_at, &mut progress, true, probes, on_tick)
                    .map(|()| (before, before_ns))
            }
            Err(e) => Err(e),
        };
        let (before, before_ns) = match stopped {
            Ok(b) => b,
            Err(e) => {
                self.abandon(&active);
                return Err(e);
            }
        };
        let after = snapshot(server, probes, admin.as_mut());
        let after_ns = protocol::clock_ns();
        let reports = self.collect(&active, REPORT_TIMEOUT, "reporting", |r| match r {
            Reply::Report(rep) => Some((**rep).clone()),
            _ => None,
        })?;
        self.running.clear();
        let mut trial = self.merge(
            plan,
            &shares,
            &active,
            reports,
            (&before, before_ns),
            (&after, after_ns),
        )?;
        let traffic = self.traffic.now();
        trial.coordination = Some(crate::results::Coordination {
            cpu_us: crate::host::self_cpu_us().saturating_sub(cpu0) as f64,
            messages: traffic.0 - traffic0.0,
            bytes: traffic.1 - traffic0.1,
        });
        Ok(trial)
    }

    /// Before any setting changes: every agent connects one client to the server (its login,
    /// its route, the workload's statements). A failure is bad input (exit 2), naming the host.
    pub fn check(&mut self, workload: &PreparedWorkload) -> Result<()> {
        let (target, schema) = self
            .target
            .clone()
            .ok_or_else(|| anyhow!("the agents have no target"))?;
        let all: Vec<usize> = (0..self.agents.len()).collect();
        for &i in &all {
            let prepare = Prepare {
                target: target.clone(),
                schema: schema.clone(),
                workload: workload.clone(),
                threads: 1,
                rate: None,
                duration_ns: 0,
                seed: 0,
            };
            self.agents[i]
                .send(&Request::Prepare(Box::new(prepare)))
                .map_err(|e| usage(format!("{e:#}")))?;
        }
        self.collect(&all, PREPARE_TIMEOUT, "connecting to the server", |r| {
            matches!(r, Reply::Ready { .. }).then_some(())
        })
        .map_err(|e| {
            usage(format!(
                "{e:#}. The agents reach the server at {} (--agent-target sets that URL)",
                target.redacted()
            ))
        })?;
        Ok(())
    }

    /// Wait until `at_ns` (this host's clock), passing progress on; stop early on Ctrl-C,
    /// the watch, or a lost agent.
    fn wait_until(
        &mut self,
        at_ns: u64,
        progress: &mut Progress,
        measuring: bool,
        probes: &TrialProbes,
        on_tick: &mut dyn FnMut(&TrialProgress),
    ) -> Result<()> {
        progress.phase(measuring, at_ns);
        loop {
            if crate::interrupt::requested() {
                return Err(Failure::Interrupted.into());
            }
            if let Some(why) = probes.watch.as_ref().and_then(|w| w()) {
                bail!("{why}");
            }
            let now = protocol::clock_ns();
            if now >= at_ns {
                return Ok(());
            }
            let nap = Duration::from_nanos(at_ns - now).min(Duration::from_millis(100));
            match self.next_event(Instant::now() + nap) {
                Some((i, Event::Reply(Reply::Tick { events, lag_us }))) => {
                    progress.ticks[i] = (events, lag_us);
                }
                Some((_, Event::Reply(Reply::Started { .. }))) | None => {}
                Some((i, Event::Reply(Reply::Error { message, lost }))) => {
                    return Err(self.failed(i, &message, lost));
                }
                Some((i, Event::Reply(other))) => {
                    bail!(
                        "agent {} answered out of turn: {other:?}",
                        self.agents[i].label()
                    )
                }
                Some((i, Event::Gone(why))) => return Err(self.lost(i, &why)),
            }
            if let Some(p) = progress.sample() {
                on_tick(&p);
            }
        }
    }

    /// Wait for one answer from each of `agents` that `want` accepts (ticks are skipped).
    fn collect<T>(
        &mut self,
        agents: &[usize],
        timeout: Duration,
        doing: &str,
        want: impl Fn(&Reply) -> Option<T>,
    ) -> Result<Vec<T>> {
        let mut got: Vec<Option<T>> = (0..self.agents.len()).map(|_| None).collect();
        let deadline = Instant::now() + timeout;
        while agents.iter().any(|i| got[*i].is_none()) {
            if crate::interrupt::requested() {
                self.abandon(agents);
                return Err(Failure::Interrupted.into());
            }
            let step = (Instant::now() + Duration::from_millis(200)).min(deadline);
            match self.next_event(step) {
                Some((i, Event::Reply(Reply::Error { message, lost }))) => {
                    return Err(self.failed(i, &message, lost));
                }
                Some((i, Event::Gone(why))) => return Err(self.lost(i, &why)),
                Some((i, Event::Reply(r))) => {
                    if let Some(t) = want(&r) {
                        got[i] = Some(t);
                    }
                }
                None if Instant::now() >= deadline => {
                    let late = agents
                        .iter()
                        .find(|i| got[**i].is_none())
                        .map(|i| self.agents[*i].label())
                        .unwrap_or_default();
                    bail!(
                        "agent {late} did not finish {doing} within {} s",
                        timeout.as_secs()
                    );
                }
                None => {}
            }
        }
        Ok(agents.iter().filter_map(|i| got[*i].take()).collect())
    }

    /// Stop a trial on every agent and drop what they answer.
    /// Only those already started are stopped and waited for; the others hold connected
    /// clients, which their next `prepare` (or the end of the session) closes.
    fn abandon(&mut self, agents: &[usize]) {
        let mut left: Vec<usize> = agents
            .iter()
            .copied()
            .filter(|i| self.running.contains(i) && self.agents[*i].gone.is_none())
            .collect();
        self.running.retain(|i| !agents.contains(i));
        for &i in &left {
            let _ = self.agents[i].send(&Request::Stop);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while !left.is_empty() {
            match self.next_event(deadline) {
                Some((i, Event::Reply(Reply::Report(_) | Reply::Error { .. }))) => {
                    left.retain(|j| *j != i)
                }
                Some((i, Event::Gone(why))) => {
                    self.agents[i].gone = Some(why);
                    left.retain(|j| *j != i)
                }
                Some(_) => {}
                None => break,
            }
        }
    }

    /// Agent `i` is gone: a clear error naming it (the run restores and keeps its results).
    fn lost(&mut self, i: usize, why: &str) -> anyhow::Error {
        let msg = self.agents[i].gone_message(&format!("was lost: {why}"));
        self.agents[i].gone = Some(why.to_string());
        let others: Vec<usize> = (0..self.agents.len()).filter(|j| *j != i).collect();
        self.abandon(&others);
        anyhow!("{msg}")
    }

    /// Agent `i` reported a failure.
    fn failed(&mut self, i: usize, message: &str, lost: bool) -> anyhow::Error {
        let msg = format!("agent {}: {message}", self.agents[i].label());
        let others: Vec<usize> = (0..self.agents.len()).filter(|j| *j != i).collect();
        self.abandon(&others);
        if lost {
            anyhow::Error::new(ServerLost(msg))
        } else {
            anyhow!("{msg}")
        }
    }

    /// The agents' reports as one trial, with each agent's share and the windows' skew.
    fn merge(
        &self,
        plan: &TrialPlan,
        shares: &[u32],
        active: &[usize],
        reports: Vec<protocol::AgentReport>,
        (before, before_ns): (&Snapshot, u64),
        (after, after_ns): (&Snapshot, u64),
    ) -> Result<Trial> {
        let mut workers: Vec<WorkerReport> = Vec::with_capacity(reports.len());
        let mut agents = Vec::with_capacity(reports.len());
        let mut cpu_us = 0.0;
        for (&i, r) in active.iter().zip(&reports) {
            let a = &self.agents[i];
            workers.push(
                r.to_worker_report()
                    .map_err(|e| anyhow!("agent {}: {e:#}", a.label()))?,
            );
            cpu_us += r.cpu_us as f64;
            // The agent's window on this host's clock, against the coordinator's; the
            // offset is known to within half the round trip.
            let here = |t: u64| t as i128 - a.offset_ns as i128;
            let start = (here(r.window_ns.0) - before_ns as i128).unsigned_abs();
            let end = (here(r.window_ns.1) - after_ns as i128).unsigned_abs();
            let skew_ms = (start.max(end) as f64 + a.rtt_ns as f64 / 2.0) / 1e6;
            agents.push(AgentTrial {
                host: a.label(),
                threads: shares[i],
                queries: r.queries,
                client_cpu_us_per_query: if r.queries > 0 {
                    r.cpu_us as f64 / r.queries as f64
                } else {
                    0.0
                },
                skew_ms,
            });
        }
        let mut trial = summarize(workers, before, after, plan.rate, cpu_us)?;
        let worst = agents.iter().map(|a| a.skew_ms).fold(0.0, f64::max);
        trial.agent_skew_ms = Some(worst);
        trial.skewed = worst > SKEW_FLAG_SHARE * trial.duration_s * 1000.0;
        trial.agents = agents;
        Ok(trial)
    }
}

/// Progress from the agents' ticks.
struct Progress {
    ticks: Vec<(u64, u64)>,
    rate: Option<f64>,
    measuring: bool,
    phase_start: Instant,
    planned: Duration,
    last: (Instant, u64),
}

impl Progress {
    fn new(agents: usize, plan: &TrialPlan) -> Progress {
        Progress {
            ticks: vec![(0, 0); agents],
            rate: plan.rate.map(|r| r.per_second),
            measuring: false,
            phase_start: Instant::now(),
            planned: Duration::ZERO,
            last: (Instant::now(), 0),
        }
    }

    fn phase(&mut self, measuring: bool, until_ns: u64) {
        self.measuring = measuring;
        self.phase_start = Instant::now();
        self.planned = Duration::from_nanos(until_ns.saturating_sub(protocol::clock_ns()));
    }

    /// A sample a second (agents tick once a second).
    fn sample(&mut self) -> Option<TrialProgress> {
        if self.last.0.elapsed() < Duration::from_secs(1) {
            return None;
        }
        let events: u64 = self.ticks.iter().map(|t| t.0).sum();
        let dt = self.last.0.elapsed().as_secs_f64();
        let eps = events.saturating_sub(self.last.1) as f64 / dt;
        self.last = (Instant::now(), events);
        Some(TrialProgress {
            measuring: self.measuring,
            elapsed: self.phase_start.elapsed(),
            planned: self.planned,
            events_per_s: eps,
            quota_done: None,
            asked_per_s: self.rate,
            lag_ms: self
                .rate
                .map(|_| self.ticks.iter().map(|t| t.1).max().unwrap_or(0) as f64 / 1000.0),
        })
    }
}
