//! The simulated server: the only fake target, used to check the statistics against a known
//! truth. Each variant has a true overhead; each trial's throughput is the base throughput ×
//! (1 − overhead) × a slow multiplicative drift (a random walk, as a shared machine wanders)
//! × independent noise. Faults a real machine has can be switched on, so that a validation
//! can fail: heavy-tailed noise, stalls that only the feature's trials suffer, a carry-over
//! that slows the trial after a feature trial, and an effect that drifts across the run
//! (AR(1)). No time passes: trials are instant.

use super::runner::{Bench, LoadPoint, Observer};
use crate::results::{LatencyMs, Trial};
use crate::rng::Rng;
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
    /// Heavy tails: the noise is Student's t with this many degrees of freedom (scaled to
    /// `noise_sd`) instead of normal.
    pub tail_df: Option<u32>,
    /// Feature-only stalls: a non-baseline trial is, with this probability, slowed by this
    /// factor (0.5: half the throughput).
    pub stall: Option<(f64, f64)>,
    /// Carry-over: a trial right after a non-baseline trial runs this fraction slower.
    pub carry_over: f64,
    /// A drifting effect: each variant's log effect wanders as AR(1) (phi, innovation sd)
    /// around its true value, one step per trial of that variant.
    pub effect_ar: Option<(f64, f64)>,
    /// Rate mode: the median latency each variant adds, ms (its p99 adds 3×).
    pub added_latency_ms: Vec<f64>,
    /// Rate mode: per-trial noise of the latency percentiles, sd in ms.
    pub latency_noise_ms: f64,
    drift: f64,
    wander: Vec<f64>,
    /// Per variant: the sum of its trials' wander and their count (the realized effect).
    wandered: Vec<(f64, u32)>,
    /// Per variant: stalls that happened.
    pub stalls: Vec<u32>,
    current: usize,
    previous: Option<usize>,
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
            stall: None,
            carry_over: 0.0,
            effect_ar: None,
            added_latency_ms: vec![0.0; n],
            latency_noise_ms: 0.02,
            drift: 0.0,
            wander: vec![0.0; n],
            wandered: vec![(0.0, 0); n],
            stalls: vec![0; n],
            current: 0,
            previous: None,
        }
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
            let stalls = |v: usize| if v != 0 { p * factor.ln() } else { 0.0 };
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
                // Scaled so the sd is 1: Var(t_df) = df / (df − 2).
                z / (chi2 / df as f64).sqrt() / (df as f64 / (df as f64 - 2.0)).sqrt()
            }
        }
    }
}

impl Bench for SimulatedServer {
    fn apply(&mut self, variant: usize, _: &mut dyn Observer) -> Result<()> {
        self.current = variant;
        Ok(())
    }

    fn calibrate(&mut self, threads: u32, _: &mut dyn Observer) -> Result<Trial> {
        let qps = self.base_qps * (threads as f64).min(2.0);
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
        let mut log_qps = (self.base_qps * scale).ln()
            + (1.0 - self.true_overhead[variant]).ln()
            + self.wander[variant]
            + self.drift
            + self.noise_sd * self.noise();
        if let Some((p, factor)) = self.stall
            && variant != 0
            && self.rng.unit() < p
        {
            log_qps += factor.ln();
            self.stalls[variant] += 1;
        }
        if self.previous.is_some_and(|v| v != 0) {
            log_qps += (1.0 - self.carry_over).ln();
        }
        self.previous = Some(variant);
        let mut qps = log_qps.exp();
        let cpu = 20.0 / (1.0 - self.true_overhead[variant]) * (1.0 + 0.02 * self.rng.normal());
        // Closed loop: fixed percentiles. At a rate: the machine's drift slows every answer
        // alike, the variant adds its own latency, each percentile has its own noise.
        let mut latency_ms = LatencyMs {
            p50: 0.1,
            p95: 0.2,
            p99: 0.3,
            max: 1.0,
        };
        let mut rate = None;
        if let Some(r) = load.rate {
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
            ..Default::default()
        })
    }
}
