//! The simulated server: the only fake target, used to check the statistics against a known
//! truth. Each variant has a true overhead; each trial's throughput is the base throughput ×
//! (1 − overhead) × a slow multiplicative drift (a random walk, as a shared machine wanders)
//! × independent log-normal noise. No time passes: trials are instant.

use super::runner::{Bench, Observer};
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
    drift: f64,
    current: usize,
}

impl SimulatedServer {
    /// A simulator with `noise_sd` per-trial noise and `drift_sd` drift per trial.
    pub fn new(seed: u64, true_overhead: Vec<f64>, noise_sd: f64, drift_sd: f64) -> Self {
        SimulatedServer {
            rng: Rng::new(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ 0xABCD),
            true_overhead,
            base_qps: 20_000.0,
            noise_sd,
            drift_sd,
            drift: 0.0,
            current: 0,
        }
    }
}

impl Bench for SimulatedServer {
    fn apply(&mut self, variant: usize, _: &mut dyn Observer) -> Result<()> {
        self.current = variant;
        Ok(())
    }

    fn trial(&mut self, variant: usize, threads: u32, _: &mut dyn Observer) -> Result<Trial> {
        assert_eq!(
            variant, self.current,
            "the runner applies a variant before its trial"
        );
        self.drift += self.drift_sd * self.rng.normal();
        let scale = (threads as f64).min(2.0);
        let qps = self.base_qps
            * scale
            * (1.0 - self.true_overhead[variant])
            * (self.drift + self.noise_sd * self.rng.normal()).exp();
        let cpu = 20.0 / (1.0 - self.true_overhead[variant]) * (1.0 + 0.02 * self.rng.normal());
        Ok(Trial {
            qps,
            tps: qps,
            queries: (qps * 3.0) as u64,
            duration_s: 3.0,
            latency_ms: LatencyMs {
                p50: 0.1,
                p95: 0.2,
                p99: 0.3,
                max: 1.0,
            },
            client_cpu_us_per_query: 5.0,
            server_cpu_us_per_query: Some(cpu),
            log_bytes_per_query: Some(if variant == 0 { 0.0 } else { 120.0 }),
            ..Default::default()
        })
    }
}
