//! The simulated server: the only fake target, used to check the statistics against a known
//! truth. Each variant has a true overhead; each trial's throughput is the base throughput ×
//! (1 − overhead) × a slow multiplicative drift (a random walk, as a shared machine wanders)
//! × independent noise. Faults a real machine has can be switched on, so that a validation
//! can fail: heavy-tailed noise (t(2) included), noise that differs by variant, stalls in the
//! feature's trials or in any trial, a step change of the whole machine, a carry-over that
//! slows the next trial (by preceding variant) or the one after it, a transient at the start
//! of a trial after a switch, and an effect that drifts across the run (AR(1)). No time
//! passes: trials are instant.

pub mod production;
pub mod seeded;

use crate::results::{LatencyMs, Trial};
use crate::rng::Rng;
use crate::run::{Bench, LoadPoint, Observer};
use anyhow::Result;

/// A server with known overheads.
#[derive(Debug, Clone)]
pub struct SimulatedServer {
    rng: Rng,
    /// True overhead of each variant, as a fraction (0.10 = 10%).
    pub true_overhead: Vec<f64>,
    /// Throughput of the baseline with no drift or noise.
    pub base_qps: f64,
    /// Per-trial noise, sd of ln(qps).
    pub noise_sd: f64,
    /// Drift step per trial, sd of the random walk of ln(qps).
    pub drift_sd: f64,
    /// Heavy tails: the noise is Student's t with this many degrees of freedom instead of
    /// normal, scaled to sd `noise_sd` when it has one (df > 2), else to the normal's
    /// interquartile range (t(2) and t(1) have no variance).
    pub tail_df: Option<u32>,
    /// Per variant, a factor on `noise_sd` (empty: 1 for every variant).
    pub noise_of: Vec<f64>,
    /// Stalls: a trial is, with this probability, slowed by this factor (0.5: half the
    /// throughput): only non-baseline trials, or every trial with `stall_any`.
    pub stall: Option<(f64, f64)>,
    /// Stalls hit the baseline's trials too.
    pub stall_any: bool,
    /// A step change: from this trial on (counted over the run, warm-up included), every
    /// trial's throughput is multiplied by the factor.
    pub step: Option<(u32, f64)>,
    /// Carry-over by preceding variant: a trial right after a trial of variant j runs
    /// `carry_after[j]` slower (a fraction; empty: none).
    pub carry_after: Vec<f64>,
    /// Carry-over over two trials: a trial two after a trial of variant j runs
    /// `carry_lag2[j]` slower.
    pub carry_lag2: Vec<f64>,
    /// A transient: the first half of a trial right after a trial of variant j runs
    /// `transient[j]` slower (the trial's throughput is the mean of its halves, which it
    /// records).
    pub transient: Vec<f64>,
    /// A drifting effect: each variant's log effect wanders as AR(1) (phi, innovation sd)
    /// around its true value, one step per trial of that variant.
    pub effect_ar: Option<(f64, f64)>,
    /// Disturbances: another process takes the CPU for a while, whatever variant runs. Each
    /// trial starts one with this probability when none is on; it lasts a geometric number
    /// of trials (mean `disturbance_trials`), slows each trial it touches by a uniform
    /// fraction up to twice the second number, and shows as `host_other_cpu_pct` (30–100%
    /// of a core; a quiet trial shows 0–3%).
    pub disturbance: Option<(f64, f64)>,
    /// See `disturbance`.
    pub disturbance_trials: f64,
    /// A steady load of other processes, percent of a core, in every trial (a monitoring
    /// agent; on one machine, the "remote" server itself): it slows nothing here.
    pub background_other: f64,
    /// How much that steady load wavers: each trial's is drawn uniformly within ± this much
    /// (a build beside the server: 80-120% of a core).
    pub background_wobble: f64,
    /// Disturbed trials so far.
    pub disturbed: u32,
    disturbing: bool,
    /// Rate mode: the median latency each variant adds, ms (its p99 adds 3×).
    pub added_latency_ms: Vec<f64>,
    /// Rate mode: per-trial noise of the latency percentiles, sd in ms.
    pub latency_noise_ms: f64,
    /// Rate mode: a queueing server instead of fixed latencies (its capacity at an
    /// objective is known: `capacity_truth`).
    pub queue: Option<Queue>,
    /// What one trial would take on a real server (settle, measure, switch): the clock a
    /// time budget is spent on.
    pub trial_time: std::time::Duration,
    clock: std::time::Duration,
    drift: f64,
    wander: Vec<f64>,
    /// Per variant: the sum of its trials' wander and their count (the realized effect).
    wandered: Vec<(f64, u32)>,
    /// Per variant: stalls that happened.
    pub stalls: Vec<u32>,
    current: usize,
    previous: Option<usize>,
    before_previous: Option<usize>,
    trials: u32,
}

impl SimulatedServer {
    /// A simulator with `noise_sd` per-trial noise and `drift_sd` drift per trial.
    pub fn new(seed: u64, true_overhead: Vec<f64>, noise_sd: f64, drift_sd: f64) -> Self {
        let n = true_overhead.len();
        SimulatedServer {
            rng: Rng::new(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ 0xABCD),
            true_overhead,
            base_qps: 20_000.0,
            noise_sd,
            drift_sd,
            tail_df: None,
            noise_of: vec![],
            stall: None,
            stall_any: false,
            step: None,
            carry_after: vec![],
            carry_lag2: vec![],
            transient: vec![],
            effect_ar: None,
            disturbance: None,
            disturbance_trials: 3.0,
            background_other: 0.0,
            background_wobble: 0.0,
            disturbed: 0,
            disturbing: false,
            added_latency_ms: vec![0.0; n],
            latency_noise_ms: 0.02,
            queue: None,
            trial_time: std::time::Duration::from_millis(1550),
            clock: std::time::Duration::ZERO,
            drift: 0.0,
            wander: vec![0.0; n],
            wandered: vec![(0.0, 0); n],
            stalls: vec![0; n],
            current: 0,
            previous: None,
            before_previous: None,
            trials: 0,
        }
    }

    /// A trial right after any non-baseline trial runs `fraction` slower.
    pub fn carry_from_every_feature(&mut self, fraction: f64) {
        self.carry_after = (0..self.true_overhead.len())
            .map(|j| if j == 0 { 0.0 } else { fraction })
            .collect();
    }

    /// The true overhead of a variant against variant 0: the geometric mean ratio, stalls
    /// included (they are the feature's cost), in percent.
    pub fn truth_pct(&self, variant: usize) -> f64 {
        self.truth_against(variant, 0)
    }

    /// The true overhead of `variant` against `baseline`, in percent.
    pub fn truth_against(&self, variant: usize, baseline: usize) -> f64 {
        let mut log_ratio =
            (1.0 - self.true_overhead[variant]).ln() - (1.0 - self.true_overhead[baseline]).ln();
        if let Some((p, factor)) = self.stall {
            let any = self.stall_any;
            let stalls = |v: usize| if v != 0 || any { p * factor.ln() } else { 0.0 };
            log_ratio += stalls(variant) - stalls(baseline);
        }
        100.0 * (1.0 - log_ratio.exp())
    }

    /// The overhead a drifting effect actually had over this run's trials of the variant
    /// (its true overhead plus the average of its wander), in percent.
    pub fn realized_pct(&self, variant: usize) -> f64 {
        let (sum, n) = self.wandered[variant];
        let wander = if n > 0 { sum / n as f64 } else { 0.0 };
        let log_ratio =
            (1.0 - self.true_overhead[variant]).ln() + wander - (1.0 - self.true_overhead[0]).ln();
        100.0 * (1.0 - log_ratio.exp())
    }

    fn noise(&mut self) -> f64 {
        let z = self.rng.normal();
        match self.tail_df {
            None => z,
            Some(df) => {
                let chi2: f64 = (0..df).map(|_| self.rng.normal().powi(2)).sum();
                z / (chi2 / df as f64).sqrt() / t_scale(df)
            }
        }
    }

    /// A fraction of variant `j`'s in a per-variant list (0 when the list is empty).
    fn of(list: &[f64], j: Option<usize>) -> f64 {
        j.and_then(|j| list.get(j)).copied().unwrap_or(0.0)
    }
}

impl Bench for SimulatedServer {
    fn apply(&mut self, variant: usize, _: &mut dyn Observer) -> Result<()> {
        self.current = variant;
        Ok(())
    }

    fn elapsed(&self) -> Option<std::time::Duration> {
        Some(self.clock)
    }

    fn calibrate(&mut self, threads: u32, _: &mut dyn Observer) -> Result<Trial> {
        let mut qps = self.base_qps * (threads as f64).min(2.0);
        if let Some(q) = &self.queue {
            // Closed loop: every server busy, at this moment's speed.
            let speed = (self.drift + self.drift_sd * self.rng.normal()).exp();
            qps = 1000.0 * q.rate_per_ms(self.current, speed) * f64::from(q.servers);
        }
        Ok(Trial {
            qps,
            tps: qps,
            duration_s: 2.0,
            ..Default::default()
        })
    }

    fn trial(&mut self, variant: usize, load: &LoadPoint, _: &mut dyn Observer) -> Result<Trial> {
        let threads = load.threads;
        assert_eq!(
            variant, self.current,
            "the runner applies a variant before its trial"
        );
        self.drift += self.drift_sd * self.rng.normal();
        if let Some((phi, sd)) = self.effect_ar
            && variant != 0
        {
            self.wander[variant] = phi * self.wander[variant] + sd * self.rng.normal();
        }
        self.wandered[variant].0 += self.wander[variant];
        self.wandered[variant].1 += 1;
        let scale = (threads as f64).min(2.0);
        let sd = self.noise_sd * self.noise_of.get(variant).copied().unwrap_or(1.0);
        // The machine's speed this trial (drift, stalls, a step, disturbances, carry-over):
        // what a queueing server's service rate is multiplied by.
        let mut machine = self.drift;
        let mut log_qps = (self.base_qps * scale).ln()
            + (1.0 - self.true_overhead[variant]).ln()
            + self.wander[variant]
            + self.drift
            + sd * self.noise();
        if let Some((p, factor)) = self.stall
            && (variant != 0 || self.stall_any)
            && self.rng.unit() < p
        {
            log_qps += factor.ln();
            machine += factor.ln();
            self.stalls[variant] += 1;
        }
        if let Some((from, factor)) = self.step
            && self.trials >= from
        {
            log_qps += factor.ln();
            machine += factor.ln();
        }
        // (Drawn only in a disturbance scenario: the others keep their random streams.)
        let mut host_other = 1.0;
        if let Some((p, slow)) = self.disturbance {
            host_other = 3.0 * self.rng.unit();
            if self.disturbing {
                self.disturbing = self.rng.unit() > 1.0 / self.disturbance_trials;
            } else {
                self.disturbing = self.rng.unit() < p;
            }
            if self.disturbing {
                let hit = (1.0 - 2.0 * slow * self.rng.unit()).ln();
                log_qps += hit;
                machine += hit;
                host_other = 30.0 + 70.0 * self.rng.unit();
                self.disturbed += 1;
            }
        }
        // (Drawn only where it wavers: the other scenarios keep their random streams.)
        if self.background_wobble > 0.0 {
            host_other += self.background_wobble * (2.0 * self.rng.unit() - 1.0);
        }
        let carry = (1.0 - Self::of(&self.carry_after, self.previous)).ln()
            + (1.0 - Self::of(&self.carry_lag2, self.before_previous)).ln();
        log_qps += carry;
        machine += carry;
        // The first half pays the transient, the second does not; the trial is their mean.
        let transient = Self::of(&self.transient, self.previous);
        let second = log_qps.exp();
        let first = second * (1.0 - transient);
        self.before_previous = self.previous;
        self.previous = Some(variant);
        self.trials += 1;
        self.clock += self.trial_time;
        let mut qps = (first + second) / 2.0;
        let cpu = 20.0 / (1.0 - self.true_overhead[variant]) * (1.0 + 0.02 * self.rng.normal());
        // Closed loop: fixed percentiles. At a rate: the machine's drift slows every answer
        // alike, the variant adds its own latency, each percentile has its own noise.
        let mut latency_ms = LatencyMs {
            p50: 0.1,
            p95: 0.2,
            p99: 0.3,
            max: 1.0,
            ..Default::default()
        };
        let mut rate = None;
        if let (Some(r), Some(queue)) = (load.rate, self.queue.clone()) {
            let speed = machine.exp();
            let mu = queue.rate_per_ms(variant, speed);
            let lambda = r.per_second / 1000.0;
            let cap = mu * f64::from(queue.servers);
            let mut q = |p: f64| {
                let z = self.rng.normal();
                queue.quantile(lambda, mu, p, self.trial_time.as_secs_f64())
                    * (queue.noise * z).exp()
            };
            latency_ms = LatencyMs {
                p50: q(0.5),
                p95: q(0.95),
                p99: q(0.99),
                p999: Some(q(0.999)),
                max: q(0.9999),
            };
            qps = r.per_second.min(cap * 1000.0);
            rate = Some(crate::results::TrialRate {
                asked: r.per_second,
                achieved: qps,
                saturated: lambda >= cap,
                ..Default::default()
            });
        } else if let Some(r) = load.rate {
            qps = r.per_second * (1.0 + 0.001 * self.rng.normal());
            let slow = (-self.drift).exp();
            let add = self.added_latency_ms[variant];
            let sd = self.latency_noise_ms;
            latency_ms.p50 = 0.2 * slow + add + sd * self.noise();
            latency_ms.p99 = 0.6 * slow + 3.0 * add + 3.0 * sd * self.noise();
            rate = Some(crate::results::TrialRate {
                asked: r.per_second,
                achieved: qps,
                ..Default::default()
            });
        }
        Ok(Trial {
            qps,
            tps: qps,
            queries: (qps * 3.0) as u64,
            duration_s: 3.0,
            latency_ms,
            rate,
            client_cpu_us_per_query: 5.0,
            server_cpu_us_per_query: Some(cpu),
            log_bytes_per_query: Some(if variant == 0 { 0.0 } else { 120.0 }),
            halves_qps: Some([first, second]),
            host_other_cpu_pct: Some(host_other + self.background_other),
            ..Default::default()
        })
    }
}

/// What t(df) noise is divided by: its sd when it has one, else its upper quartile over the
/// normal's (so t(2) noise has the interquartile range of normal noise of the same sd).
fn t_scale(df: u32) -> f64 {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    if df > 2 {
        return (df as f64 / (df as f64 - 2.0)).sqrt();
    }
    let q75 = StudentsT::new(0.0, 1.0, df as f64)
        .map(|t| t.inverse_cdf(0.75))
        .unwrap_or(1.0);
    q75 / 0.674_489_750_196_081_7
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::Silent;

    #[test]
    fn t2_noise_is_noise() {
        // √(df/(df−2)) is infinite at df = 2: the noise was 0, and a t(2) scenario tested
        // nothing.
        let mut sim = SimulatedServer::new(1, vec![0.0], 0.06, 0.0);
        sim.tail_df = Some(2);
        let load = LoadPoint {
            threads: 1,
            rate: None,
        };
        let logs: Vec<f64> = (0..2000)
            .map(|_| sim.trial(0, &load, &mut Silent).unwrap().qps.ln())
            .collect();
        let mut sorted = logs.clone();
        sorted.sort_by(|a, b| a.total_cmp(b));
        let iqr = sorted[1500] - sorted[500];
        // The normal's IQR is 1.349 sd: 0.081 here.
        assert!((0.07..0.095).contains(&iqr), "iqr {iqr}");
        assert!(sorted[1999] - sorted[0] > 1.0, "heavy tails: {sorted:?}");
    }
}

/// A queueing server (M/M/c): `servers` servers each taking an exponential service time of
/// mean `service_ms` (plus the variant's `added_ms`), Poisson arrivals at the asked rate.
/// A trial's quantiles are the model's, times log-normal noise of sd `noise`; a rate at or
/// over the servers' capacity lets the queue grow through the trial.
#[derive(Debug, Clone)]
pub struct Queue {
    /// Servers (c).
    pub servers: u32,
    /// Mean service time of the baseline, ms.
    pub service_ms: f64,
    /// Per variant, service time added, ms.
    pub added_ms: Vec<f64>,
    /// Per-trial noise of each quantile, sd of its logarithm.
    pub noise: f64,
}

impl Queue {
    /// One server's service rate for `variant` at machine speed `speed`, per ms.
    pub fn rate_per_ms(&self, variant: usize, speed: f64) -> f64 {
        speed / (self.service_ms + self.added_ms.get(variant).copied().unwrap_or(0.0))
    }

    /// The `p` quantile of the response time (wait + service), ms, at `lambda` arrivals per
    /// ms; at or over capacity, what a queue growing for `trial_s` gives.
    pub fn quantile(&self, lambda: f64, mu: f64, p: f64, trial_s: f64) -> f64 {
        let c = f64::from(self.servers);
        if lambda >= c * mu * 0.999 {
            let at_edge = self.quantile(c * mu * 0.998, mu, p, trial_s);
            let growing = p * trial_s * 1000.0 * (1.0 - c * mu / lambda).max(0.0);
            return at_edge.max(growing);
        }
        let wait = erlang_c(self.servers, lambda / mu);
        let theta = c * mu - lambda;
        let tail = |t: f64| {
            let both = if (theta - mu).abs() < 1e-9 * mu {
                (1.0 + mu * t) * (-mu * t).exp()
            } else {
                (theta * (-mu * t).exp() - mu * (-theta * t).exp()) / (theta - mu)
            };
            (1.0 - wait) * (-mu * t).exp() + wait * both
        };
        let target = 1.0 - p;
        let mut hi = 1.0 / mu;
        while tail(hi) > target {
            hi *= 2.0;
        }
        let mut lo = 0.0;
        for _ in 0..80 {
            let mid = (lo + hi) / 2.0;
            if tail(mid) > target {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        (lo + hi) / 2.0
    }

    /// The true capacity of `variant` at `p` ≤ `ms`, events per second, at speed 1.
    pub fn capacity_truth(&self, variant: usize, p: f64, ms: f64) -> f64 {
        let mu = self.rate_per_ms(variant, 1.0);
        let cap = mu * f64::from(self.servers);
        let (mut lo, mut hi) = (0.0, cap * 0.999);
        if self.quantile(1e-9, mu, p, 1.0) > ms {
            return 0.0;
        }
        for _ in 0..80 {
            let mid = (lo + hi) / 2.0;
            if self.quantile(mid, mu, p, 1.0) <= ms {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        1000.0 * (lo + hi) / 2.0
    }
}

/// Erlang's C: the chance an arrival waits, with `c` servers and offered load `a` (< c).
fn erlang_c(c: u32, a: f64) -> f64 {
    let mut term = 1.0;
    let mut sum = 1.0;
    for k in 1..c {
        term *= a / f64::from(k);
        sum += term;
    }
    let last = term * a / f64::from(c) / (1.0 - a / f64::from(c));
    last / (sum + last)
}
