//! Open-loop load: when each event is meant to start. In rate mode every worker follows its
//! own schedule of intended starts, fixed in advance by the rate and the arrival process and
//! never by how fast the server answers, so a slow answer cannot hide the requests that would
//! have waited behind it (coordinated omission). Latency is measured from the intended start.
//!
//! R events per second over N workers: each worker runs R/N per second. Poisson arrivals:
//! exponential gaps, and N independent Poisson processes merge into one of rate R. Uniform
//! arrivals: a fixed gap N/R, the workers' phases staggered by 1/R so the merged stream is
//! evenly spaced too.

use crate::error::usage;
use crate::rng::Rng;
use anyhow::Result;
pub use dbtax_stats::design::{Arrival, Rate};

/// Parse an arrival process as flags and files write it: "poisson" or "uniform".
pub fn parse_arrival(s: &str) -> Result<Arrival> {
    match s.trim() {
        "poisson" => Ok(Arrival::Poisson),
        "uniform" => Ok(Arrival::Uniform),
        other => Err(usage(format!(
            "unknown arrival process '{other}': use poisson or uniform"
        ))),
    }
}

/// The intended starts of one worker, in nanoseconds from the trial's start.
#[derive(Debug, Clone)]
pub struct Schedule {
    rng: Rng,
    arrival: Arrival,
    /// Mean gap, ns.
    gap_ns: f64,
    /// The next intended start, ns.
    next_ns: f64,
    /// A replay at a recorded pace: the starts (ns), the period after which they repeat,
    /// the next one's index and the round.
    recorded: Option<(Vec<u64>, u64, usize, u64)>,
}

impl Schedule {
    /// Worker `index` of `workers`, sharing `per_second` events per second.
    pub fn new(per_second: f64, arrival: Arrival, index: usize, workers: usize, seed: u64) -> Self {
        let workers = workers.max(1) as f64;
        let gap_ns = 1e9 * workers / per_second.max(1e-9);
        let mut s = Schedule {
            rng: Rng::new(seed ^ (index as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
            arrival,
            gap_ns,
            next_ns: 0.0,
            recorded: None,
        };
        s.next_ns = match arrival {
            // Worker i's first start at i/R: the merged stream is evenly spaced.
            Arrival::Uniform => gap_ns * index as f64 / workers,
            Arrival::Poisson => s.gap(),
        };
        s
    }

    fn gap(&mut self) -> f64 {
        match self.arrival {
            Arrival::Uniform => self.gap_ns,
            // Inverse CDF of the exponential; 1 − U is in (0, 1], so the log is finite.
            Arrival::Poisson => -(1.0 - self.rng.unit()).ln() * self.gap_ns,
        }
    }

    /// A replay's starts as recorded (ns from the trial's start), again every `period`.
    pub fn recorded(starts: Vec<u64>, period: u64) -> Self {
        Schedule {
            rng: Rng::new(1),
            arrival: Arrival::Uniform,
            gap_ns: 0.0,
            next_ns: 0.0,
            recorded: Some((starts, period.max(1), 0, 0)),
        }
    }

    /// The next intended start (ns from the trial's start), and advance.
    pub fn next_start(&mut self) -> u64 {
        if let Some((starts, period, i, round)) = self.recorded.as_mut() {
            let Some(&at) = starts.get(*i) else {
                // Nothing to replay: never.
                return u64::MAX / 4;
            };
            *i += 1;
            let at = at + *round * *period;
            if *i == starts.len() {
                *i = 0;
                *round += 1;
            }
            return at;
        }
        let at = self.next_ns;
        self.next_ns += self.gap();
        at as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Starts of all workers merged and sorted, over `secs` seconds.
    fn merged(rate: f64, arrival: Arrival, workers: usize, secs: f64, seed: u64) -> Vec<f64> {
        let mut all = vec![];
        for i in 0..workers {
            let mut s = Schedule::new(rate, arrival, i, workers, seed);
            loop {
                let t = s.next_start() as f64 / 1e9;
                if t >= secs {
                    break;
                }
                all.push(t);
            }
        }
        all.sort_by(f64::total_cmp);
        all
    }

    /// Kolmogorov–Smirnov distance between the gaps and Exp(rate).
    fn ks_exponential(starts: &[f64], rate: f64) -> f64 {
        let mut gaps: Vec<f64> = starts.windows(2).map(|w| w[1] - w[0]).collect();
        gaps.sort_by(f64::total_cmp);
        let n = gaps.len() as f64;
        gaps.iter()
            .enumerate()
            .map(|(i, g)| {
                let f = 1.0 - (-rate * g).exp();
                (f - i as f64 / n).abs().max((f - (i + 1) as f64 / n).abs())
            })
            .fold(0.0, f64::max)
    }

    #[test]
    fn the_merged_schedule_has_the_asked_mean_rate_over_many_seeds() {
        // 1000/s over 8 workers for 20 s: 20,000 events expected; Poisson's sd is √20000 ≈
        // 141, so each seed is within 1.5% (5 sd) and the mean over 20 seeds within 0.5%.
        for arrival in [Arrival::Poisson, Arrival::Uniform] {
            let counts: Vec<f64> = (0..20)
                .map(|seed| merged(1000.0, arrival, 8, 20.0, seed).len() as f64)
                .collect();
            for c in &counts {
                assert!((c / 20_000.0 - 1.0).abs() < 0.015, "{arrival:?}: {c}");
            }
            let mean = counts.iter().sum::<f64>() / counts.len() as f64;
            assert!((mean / 20_000.0 - 1.0).abs() < 0.005, "{arrival:?}: {mean}");
        }
    }

    #[test]
    fn poisson_gaps_are_exponential_and_uniform_gaps_are_not() {
        // KS critical value at 1% for n ≈ 10,000 gaps: 1.63/√n ≈ 0.016. Evenly spaced gaps
        // (or gaps of one worker's process not merged right) are far from exponential.
        let mut rejected = 0;
        for seed in 0..40 {
            let starts = merged(500.0, Arrival::Poisson, 4, 20.0, seed);
            let crit = 1.63 / (starts.len() as f64).sqrt();
            if ks_exponential(&starts, 500.0) > crit {
                rejected += 1;
            }
        }
        // At a 1% level about 0.4 of 40 seeds are rejected by chance; 3 or more would mean
        // the gaps are not exponential.
        assert!(rejected <= 2, "{rejected} of 40 seeds rejected");
        let uniform = merged(500.0, Arrival::Uniform, 4, 20.0, 1);
        assert!(ks_exponential(&uniform, 500.0) > 0.3);
        let gaps: Vec<f64> = uniform.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(
            gaps.iter().all(|g| (g - 0.002).abs() < 1e-6),
            "evenly spaced"
        );
    }

    #[test]
    fn a_recorded_schedule_repeats_its_starts_every_period() {
        let mut s = Schedule::recorded(vec![0, 10, 25], 40);
        let got: Vec<u64> = (0..7).map(|_| s.next_start()).collect();
        assert_eq!(got, vec![0, 10, 25, 40, 50, 65, 80]);
        assert!(Schedule::recorded(vec![], 40).next_start() > 1 << 60);
    }

    #[test]
    fn arrival_names_parse_and_unknown_ones_are_refused() {
        assert_eq!(parse_arrival("uniform").unwrap(), Arrival::Uniform);
        assert_eq!(parse_arrival("poisson").unwrap().name(), "poisson");
        let e = parse_arrival("bursty").unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
    }
}
