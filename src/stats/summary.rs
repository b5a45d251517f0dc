//! Cells from trials: medians, and the overhead of every cell against the baseline cell of
//! the same thread count (and the same levels of other factors), corrected for carry-over,
//! with `significant` decided by Holm over every interval. Pure: trials in, cells out.

use super::carryover::CarryOver;
use super::carryover::{self, Pair};
use super::holm::holm;
use super::overhead::{median, overhead_of_corrected, paired_difference, pct};
use crate::results::{Cell, CellRate, Estimate, FactorEffect, LatencyDelta, Overhead, Trial};

/// A cell's identity and its trials in block order (block k of every variant is element k).
#[derive(Debug, Clone)]
pub struct CellTrials {
    /// Variant name.
    pub variant: String,
    /// Index of the variant this one is compared with (itself for a baseline).
    pub baseline: usize,
    /// Variant index.
    pub variant_index: usize,
    /// Client threads.
    pub threads: u32,
    /// The load point (the runner's key): cells of one point are compared with each other.
    pub point: usize,
    /// Rate mode: the level's label and the events per second asked.
    pub rate: Option<(String, f64)>,
    /// Trials, one per completed block.
    pub trials: Vec<Trial>,
    /// Multi-factor: (factor, variant index differing only in that factor).
    pub effects: Vec<(String, usize)>,
}

/// Every cell, and what was estimated over all of them.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// One per (variant, threads).
    pub cells: Vec<Cell>,
    /// How much slower a trial runs right after a non-baseline trial (percent, 95% CI).
    pub carry_over_pct: Option<Estimate>,
    /// The intervals Holm's adjustment was made over.
    pub intervals: u32,
}

/// Whether a trial came right after a trial of a variant other than `first` (the all-off
/// baseline): what a carry-over would come from.
fn after_feature(t: &Trial, first: &str) -> f64 {
    match &t.after {
        Some(prev) if prev != first => 1.0,
        _ => 0.0,
    }
}

/// Paired blocks of `variant` against `baseline`, in block order.
fn pairs(baseline: &[Trial], variant: &[Trial], first: &str) -> Vec<Pair> {
    baseline
        .iter()
        .zip(variant)
        .filter(|(b, v)| b.qps > 0.0 && v.qps > 0.0)
        .map(|(b, v)| Pair {
            log_ratio: (v.qps / b.qps).ln(),
            d: after_feature(v, first) - after_feature(b, first),
        })
        .collect()
}

/// The overhead from paired blocks, corrected for carry-over; outlier indices become block
/// numbers.
fn corrected(pairs: &[Pair], carry: Option<CarryOver>, blocks: &[Trial]) -> Option<Overhead> {
    let (gamma, se) = carry.map(|c| (c.gamma, c.se)).unwrap_or((0.0, 0.0));
    let logs: Vec<f64> = pairs.iter().map(|p| p.log_ratio - gamma * p.d).collect();
    let d_mean = pairs.iter().map(|p| p.d).sum::<f64>() / pairs.len().max(1) as f64;
    let mut o = overhead_of_corrected(&logs, (d_mean * se).powi(2))?;
    for b in o.outlier_blocks.iter_mut() {
        *b = blocks.get(*b as usize).map(|t| t.block).unwrap_or(*b);
    }
    Some(o)
}

/// Summarize every cell; overhead against its baseline cell at the same threads.
pub fn summarize(cells: &[CellTrials]) -> Summary {
    let first = cells
        .iter()
        .find(|c| c.variant_index == 0)
        .map(|c| c.variant.clone())
        .unwrap_or_default();
    let at = |variant: usize, point: usize| {
        cells
            .iter()
            .find(|b| b.variant_index == variant && b.point == point)
    };
    let base_of = |c: &CellTrials| {
        (c.baseline != c.variant_index)
            .then(|| at(c.baseline, c.point))
            .flatten()
    };
    // At a fixed rate throughput is what was asked: rate cells have no throughput overhead
    // (their cost is latency and CPU) and tell nothing about a carry-over.
    let main_pairs: Vec<Vec<Pair>> = cells
        .iter()
        .filter(|c| c.rate.is_none())
        .filter_map(|c| Some(pairs(&base_of(c)?.trials, &c.trials, &first)))
        .collect();
    let carry = carryover::estimate(&main_pairs);
    let mut out: Vec<Cell> = cells
        .iter()
        .map(|c| {
            let base = base_of(c);
            let closed = c.rate.is_none();
            let overhead = base
                .filter(|_| closed)
                .and_then(|b| corrected(&pairs(&b.trials, &c.trials, &first), carry, &c.trials));
            let effects = c
                .effects
                .iter()
                .filter(|_| closed)
                .filter_map(|(factor, other)| {
                    let b = at(*other, c.point)?;
                    Some(FactorEffect {
                        factor: factor.clone(),
                        against: b.variant.clone(),
                        overhead: corrected(&pairs(&b.trials, &c.trials, &first), carry, &c.trials),
                    })
                })
                .collect();
            let server_cpu_delta_us =
                base.and_then(|b| by_block(&b.trials, &c.trials, |t| t.server_cpu_us_per_query));
            let latency_delta_ms = base.filter(|_| !closed).and_then(|b| {
                Some(LatencyDelta {
                    p50: by_block(&b.trials, &c.trials, |t| Some(t.latency_ms.p50))?,
                    p99: by_block(&b.trials, &c.trials, |t| Some(t.latency_ms.p99))?,
                })
            });
            let opt_median = |f: fn(&Trial) -> Option<f64>| -> Option<f64> {
                let v: Option<Vec<f64>> = c.trials.iter().map(f).collect();
                median(&v?)
            };
            let of = |f: fn(&Trial) -> f64| {
                median(&c.trials.iter().map(f).collect::<Vec<_>>()).unwrap_or(0.0)
            };
            Cell {
                variant: c.variant.clone(),
                threads: c.threads,
                qps_median: of(|t| t.qps),
                p95_ms_median: of(|t| t.latency_ms.p95),
                server_cpu_us_per_query_median: opt_median(|t| t.server_cpu_us_per_query),
                log_bytes_per_query_median: opt_median(|t| t.log_bytes_per_query),
                wal_bytes_per_query_median: opt_median(|t| t.wal_bytes_per_query),
                duration_s_median: of(|t| t.duration_s),
                trials: c.trials.clone(),
                overhead,
                server_cpu_delta_us,
                effects,
                rate: c
                    .rate
                    .as_ref()
                    .map(|(level, asked)| cell_rate(level, *asked, &c.trials)),
                latency_delta_ms,
            }
        })
        .collect();
    let intervals = adjust(&mut out);
    Summary {
        cells: out,
        carry_over_pct: carry.map(|c| Estimate {
            // Slower after a feature trial: γ < 0 in log units is a positive slowdown.
            value: pct(c.gamma),
            ci95: [pct(c.gamma + c.half), pct(c.gamma - c.half)],
        }),
        intervals,
    }
}

/// The variant minus its baseline in each block both ran, with a t interval over those
/// blocks. None when a trial lacks the value or fewer than two blocks pair up.
fn by_block(
    baseline: &[Trial],
    variant: &[Trial],
    f: impl Fn(&Trial) -> Option<f64>,
) -> Option<Estimate> {
    let mut b = vec![];
    let mut v = vec![];
    for t in variant {
        if let Some(base) = baseline.iter().find(|x| x.block == t.block) {
            b.push(f(base)?);
            v.push(f(t)?);
        }
    }
    paired_difference(&b, &v)
}

/// Rate mode: what a cell's trials achieved against the asked rate.
fn cell_rate(level: &str, asked: f64, trials: &[Trial]) -> CellRate {
    let of = |f: &dyn Fn(&Trial) -> Option<f64>| {
        let v: Option<Vec<f64>> = trials.iter().map(f).collect();
        v.and_then(|v| median(&v))
    };
    let saturated_trials = trials
        .iter()
        .filter(|t| t.rate.as_ref().is_some_and(|r| r.saturated))
        .count() as u32;
    CellRate {
        level: level.to_string(),
        asked,
        achieved_median: of(&|t| t.rate.as_ref().map(|r| r.achieved)).unwrap_or(0.0),
        saturated_trials,
        saturated: !trials.is_empty() && 2 * saturated_trials as usize > trials.len(),
        p50_ms_median: of(&|t| Some(t.latency_ms.p50)).unwrap_or(0.0),
        p99_ms_median: of(&|t| Some(t.latency_ms.p99)).unwrap_or(0.0),
        server_cores_median: of(&|t| Some(t.server_cpu_us_per_query? * t.qps / 1e6)),
    }
}

/// Holm over every overhead the cells report (each cell's and each factor effect's); returns
/// how many there were.
fn adjust(cells: &mut [Cell]) -> u32 {
    let mut all: Vec<&mut Overhead> = vec![];
    for c in cells.iter_mut() {
        let Cell {
            overhead, effects, ..
        } = c;
        all.extend(overhead.as_mut());
        all.extend(effects.iter_mut().filter_map(|e| e.overhead.as_mut()));
    }
    let p: Vec<f64> = all.iter().map(|o| o.p_value).collect();
    for (o, sig) in all.iter_mut().zip(holm(&p, 0.05)) {
        o.significant = sig;
    }
    p.len() as u32
}
