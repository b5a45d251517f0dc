//! The agents' pool as a `Load`: one trial over every agent. The coordinator prepares each
//! agent's share (every client connected before any load), fixes the measured window on its
//! own clock and sends each agent that window on the agent's clock (its offset measured at
//! hello), waits it out with the window's one loop (`load::window`), reads the server around
//! the same window, then adds the agents' reports: counts summed, histograms merged exactly.
//! An agent whose window closes a little before the coordinator's (a clock offset that moved,
//! a coordinator late on busy cores) reports while the coordinator still waits: that report
//! is kept, not taken for a protocol error.

use super::link::Event;
use super::pool::Pool;
use super::protocol::{self, AgentReport, Prepare, Reply, Request};
use super::split;
use crate::error::{Failure, usage};
use crate::load::measure::{Snapshot, snapshot, status_reader};
use crate::load::reports::summarize;
use crate::load::window::{Phase, instant_of, run_phase};
use crate::load::worker::WorkerReport;
use crate::load::{Load, Rate, Target, TrialPlan, TrialProbes, TrialProgress};
use crate::results::{AgentInfo, AgentTrial, Trial};
use crate::server::ServerLost;
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

impl Load for Pool {
    /// Every agent connects one client to the server (its login, its route, the workload's
    /// statements). A failure is bad input (exit 2), naming the host.
    fn check(&mut self, target: &Target<'_>) -> Result<()> {
        let all: Vec<usize> = (0..self.agents.len()).collect();
        let one = TrialPlan::timed(1, Duration::ZERO);
        for &i in &all {
            let prepare = self.prepare(target.workload, &one, 1, 0)?;
            self.agents[i]
                .send(&Request::Prepare(Box::new(prepare)))
                .map_err(|e| usage(format!("{e:#}")))?;
        }
        let shown = self.target_shown();
        self.collect(&all, PREPARE_TIMEOUT, "connecting to the server", |r| {
            matches!(r, Reply::Ready { .. }).then_some(())
        })
        .map_err(|e| {
            usage(format!(
                "{e:#}. The agents reach the server at {shown} (--agent-target sets that URL)"
            ))
        })?;
        Ok(())
    }

    fn run_trial(
        &mut self,
        target: &Target<'_>,
        plan: &TrialPlan,
        probes: &TrialProbes,
        on_tick: &mut dyn FnMut(&TrialProgress),
    ) -> Result<Trial> {
        if let Some(a) = self.agents.iter_mut().find(|a| a.gone.is_some()) {
            let why = a.gone.clone().unwrap_or_default();
            bail!("{}", a.gone_message(&why));
        }
        // The agents on this machine's kernel are not other processes of the server's host
        // when it is this one.
        let probes = &TrialProbes {
            not_others: self.agents_here(),
            ..probes.clone()
        };
        let (cpu0, traffic0) = (crate::host::self_cpu_us(), self.traffic.now());
        let weights: Vec<u32> = self.agents.iter().map(|a| a.spec.weight).collect();
        let shares = split(plan.threads.max(1), &weights);
        let active: Vec<usize> = (0..shares.len()).filter(|i| shares[*i] > 0).collect();
        let seed = crate::rng::Rng::from_time(plan.threads as u64).next_u64();
        for &i in &active {
            let seed = seed ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let mut prepare = self.prepare(target.workload, plan, shares[i], seed)?;
            prepare.not_others = self.not_others_of(i, target.server);
            self.agents[i].send(&Request::Prepare(Box::new(prepare)))?;
        }
        self.collect(&active, PREPARE_TIMEOUT, "connecting its clients", |r| {
            matches!(r, Reply::Ready { .. }).then_some(())
        })?;

        let mut admin = status_reader(target.server, probes)?;
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
            let at = |t: u64| (t as i128 + off as i128).max(0) as u64;
            self.running.push(i);
            self.agents[i].send(&Request::Start {
                measure_at_ns: at(measure_at),
                end_at_ns: at(end_at),
            })?;
        }
        let mut early: Vec<Option<AgentReport>> = vec![None; self.agents.len()];
        let window = {
            let mut phase = Agents {
                pool: self,
                progress: Progress::new(plan),
                early: &mut early,
                on_tick,
            };
            let watch = probes.watch.as_ref();
            let at = |ns: u64| instant_of(ns, protocol::clock_ns());
            run_phase(&mut phase, Some(at(measure_at)), false, watch).and_then(|()| {
                let before = snapshot(target.server, probes, admin.as_mut())?;
                let before_ns = protocol::clock_ns();
                phase.progress.measuring();
                run_phase(&mut phase, Some(at(end_at)), true, watch)?;
                let after = snapshot(target.server, probes, admin.as_mut())?;
                Ok(((before, before_ns), (after, protocol::clock_ns())))
            })
        };
        let (before, after) = match window {
            Ok(w) => w,
            Err(e) => {
                self.abandon(&active);
                return Err(e);
            }
        };
        let reports =
            self.collect_with(early, &active, REPORT_TIMEOUT, "reporting", |r| match r {
                Reply::Report(rep) => Some((**rep).clone()),
                _ => None,
            })?;
        self.running.clear();
        let mut trial = self.merge(plan, &shares, &active, reports, before, after)?;
        let traffic = self.traffic.now();
        trial.coordination = Some(crate::results::Coordination {
            cpu_us: crate::host::self_cpu_us().saturating_sub(cpu0) as f64,
            messages: traffic.0 - traffic0.0,
            bytes: traffic.1 - traffic0.1,
        });
        Ok(trial)
    }

    fn hosts(&self) -> Vec<AgentInfo> {
        self.info()
    }
}

/// The agents as a phase of the window sees them: a nap waits for their messages (ticks
/// for the progress, an early report kept, a failure or a lost agent ends the trial).
struct Agents<'p, 'e, 't> {
    pool: &'p mut Pool,
    progress: Progress,
    early: &'e mut Vec<Option<AgentReport>>,
    on_tick: &'t mut dyn FnMut(&TrialProgress),
}

impl Phase for Agents<'_, '_, '_> {
    fn nap(&self) -> Duration {
        Duration::from_millis(100)
    }

    fn wait(&mut self, nap: Duration) -> Result<()> {
        match self.pool.next_event(Instant::now() + nap) {
            Some((i, Event::Reply(Reply::Tick { events, lag_us }))) => {
                self.progress.ticks.insert(i, (events, lag_us));
            }
            Some((i, Event::Reply(Reply::Report(r)))) => self.early[i] = Some(*r),
            Some((_, Event::Reply(Reply::Started { .. }))) | None => {}
            Some((i, Event::Reply(Reply::Error { message, lost }))) => {
                return Err(self.pool.failed(i, &message, lost));
            }
            Some((i, Event::Reply(other))) => {
                bail!(
                    "agent {} answered out of turn (a '{}' message during a trial)",
                    self.pool.agents[i].label(),
                    other.kind()
                )
            }
            Some((i, Event::Gone(why))) => return Err(self.pool.lost(i, &why)),
        }
        Ok(())
    }

    fn tick(&mut self, _: bool, _: Duration, _: Duration) -> Result<()> {
        if let Some(p) = self.progress.sample() {
            (self.on_tick)(&p);
        }
        Ok(())
    }
}

impl Pool {
    /// One agent's `prepare` for `plan`: its `threads` of the plan's, and the same share of
    /// the rate (every worker runs the same rate).
    fn prepare(
        &self,
        workload: &PreparedWorkload,
        plan: &TrialPlan,
        threads: u32,
        seed: u64,
    ) -> Result<Prepare> {
        let (target, schema) = self
            .target
            .clone()
            .ok_or_else(|| anyhow!("the agents have no target"))?;
        let total = plan.threads.max(1) as f64;
        Ok(Prepare {
            target,
            schema,
            workload: workload.clone(),
            threads,
            rate: plan.rate.map(|r| Rate {
                per_second: r.per_second * threads as f64 / total,
                ..r
            }),
            duration_ns: plan.duration.as_nanos() as u64,
            seed,
            not_others: vec![],
        })
    }

    /// The pids on agent `i`'s kernel that are this run's (the other agents', the
    /// coordinator's) or the server's: not other processes of that host.
    fn not_others_of(&self, i: usize, server: &crate::server::Server) -> Vec<u32> {
        let kernel = &self.agents[i].hello.boot_id;
        if kernel.is_empty() {
            return vec![];
        }
        let mut pids: Vec<u32> = self
            .agents
            .iter()
            .filter(|a| a.hello.boot_id == *kernel)
            .map(|a| a.hello.pid)
            .collect();
        if *kernel == crate::host::probe::boot_id() {
            pids.push(std::process::id());
            pids.extend(server.server_pid.filter(|_| server.host.0.here()));
            pids.extend(server.neighbour_pid);
        }
        pids
    }

    /// The pids of this run's agents on this machine's kernel (not other processes here).
    fn agents_here(&self) -> Vec<u32> {
        let here = crate::host::probe::boot_id();
        self.agents
            .iter()
            .filter(|a| !here.is_empty() && a.hello.boot_id == here)
            .map(|a| a.hello.pid)
            .collect()
    }

    /// The server's URL as the agents reach it, password hidden.
    fn target_shown(&self) -> String {
        self.target
            .as_ref()
            .map(|(t, _)| t.redacted())
            .unwrap_or_default()
    }

    /// Wait for one answer from each of `agents` that `want` accepts (ticks are skipped).
    fn collect<T>(
        &mut self,
        agents: &[usize],
        timeout: Duration,
        doing: &str,
        want: impl Fn(&Reply) -> Option<T>,
    ) -> Result<Vec<T>> {
        let none = (0..self.agents.len()).map(|_| None).collect();
        self.collect_with(none, agents, timeout, doing, want)
    }

    /// `collect`, starting from the answers already `got` (early reports).
    fn collect_with<T>(
        &mut self,
        mut got: Vec<Option<T>>,
        agents: &[usize],
        timeout: Duration,
        doing: &str,
        want: impl Fn(&Reply) -> Option<T>,
    ) -> Result<Vec<T>> {
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
        reports: Vec<AgentReport>,
        (before, before_ns): (Snapshot, u64),
        (after, after_ns): (Snapshot, u64),
    ) -> Result<Trial> {
        let mut workers: Vec<WorkerReport> = Vec::with_capacity(reports.len());
        let mut agents = Vec::with_capacity(reports.len());
        let reports_other: Vec<Option<f64>> = reports.iter().map(|r| r.other_cpu_pct).collect();
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
        let mut trial = summarize(workers, &before, &after, plan.rate, cpu_us)?;
        // The client hosts are the agents': the busiest one's other processes.
        trial.client_host_other_cpu_pct = reports_other.iter().flatten().copied().reduce(f64::max);
        let worst = agents.iter().map(|a| a.skew_ms).fold(0.0, f64::max);
        trial.agent_skew_ms = Some(worst);
        trial.skewed = worst > SKEW_FLAG_SHARE * trial.duration_s * 1000.0;
        trial.agents = agents;
        Ok(trial)
    }
}

/// Progress from the agents' ticks.
struct Progress {
    /// The latest (events, lag µs) of each agent that ticked.
    ticks: std::collections::BTreeMap<usize, (u64, u64)>,
    rate: Option<f64>,
    measuring: bool,
    phase_start: Instant,
    planned: Duration,
    last: (Instant, u64),
    duration: Duration,
}

impl Progress {
    fn new(plan: &TrialPlan) -> Progress {
        Progress {
            ticks: Default::default(),
            rate: plan.rate.map(|r| r.per_second),
            measuring: false,
            phase_start: Instant::now(),
            planned: plan.warmup,
            last: (Instant::now(), 0),
            duration: plan.duration,
        }
    }

    /// The measured phase begins.
    fn measuring(&mut self) {
        self.measuring = true;
        self.phase_start = Instant::now();
        self.planned = self.duration;
    }

    /// A sample a second (agents tick once a second).
    fn sample(&mut self) -> Option<TrialProgress> {
        if self.last.0.elapsed() < Duration::from_secs(1) {
            return None;
        }
        let events: u64 = self.ticks.values().map(|t| t.0).sum();
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
                .map(|_| self.ticks.values().map(|t| t.1).max().unwrap_or(0) as f64 / 1000.0),
        })
    }
}
