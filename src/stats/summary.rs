//! Cells from trials: medians, and the overhead of every cell against the baseline cell of
//! the same thread count (and the same levels of other factors). Pure: results in, cells out.

use super::overhead::{median, paired_difference, paired_overhead};
use crate::results::{Cell, FactorEffect, Trial};

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
    /// Trials, one per completed block.
    pub trials: Vec<Trial>,
    /// Multi-factor: (factor, variant index differing only in that factor).
    pub effects: Vec<(String, usize)>,
}

/// Summarize every cell; overhead against its baseline cell at the same threads.
pub fn summarize(cells: &[CellTrials]) -> Vec<Cell> {
    cells
        .iter()
        .map(|c| {
            let qps: Vec<f64> = c.trials.iter().map(|t| t.qps).collect();
            let at = |variant: usize| {
                cells
                    .iter()
                    .find(|b| b.variant_index == variant && b.threads == c.threads)
            };
            let base = (c.baseline != c.variant_index)
                .then(|| at(c.baseline))
                .flatten();
            let qps_of = |b: &CellTrials| b.trials.iter().map(|t| t.qps).collect::<Vec<f64>>();
            let overhead = base.and_then(|b| paired_overhead(&qps_of(b), &qps));
            let effects = c
                .effects
                .iter()
                .filter_map(|(factor, other)| {
                    let b = at(*other)?;
                    Some(FactorEffect {
                        factor: factor.clone(),
                        against: b.variant.clone(),
                        overhead: paired_overhead(&qps_of(b), &qps),
                    })
                })
                .collect();
            let cpu = |ts: &[Trial]| -> Option<Vec<f64>> {
                ts.iter().map(|t| t.server_cpu_us_per_query).collect()
            };
            let server_cpu_delta_us = base.and_then(|b| {
                let n = b.trials.len().min(c.trials.len());
                paired_difference(&cpu(&b.trials[..n])?, &cpu(&c.trials[..n])?)
            });
            let opt_median = |f: fn(&Trial) -> Option<f64>| -> Option<f64> {
                let v: Option<Vec<f64>> = c.trials.iter().map(f).collect();
                median(&v?)
            };
            Cell {
                variant: c.variant.clone(),
                threads: c.threads,
                qps_median: median(&qps).unwrap_or(0.0),
                p95_ms_median: median(
                    &c.trials
                        .iter()
                        .map(|t| t.latency_ms.p95)
                        .collect::<Vec<_>>(),
                )
                .unwrap_or(0.0),
                server_cpu_us_per_query_median: opt_median(|t| t.server_cpu_us_per_query),
                log_bytes_per_query_median: opt_median(|t| t.log_bytes_per_query),
                duration_s_median: median(
                    &c.trials.iter().map(|t| t.duration_s).collect::<Vec<_>>(),
                )
                .unwrap_or(0.0),
                trials: c.trials.clone(),
                overhead,
                server_cpu_delta_us,
                effects,
            }
        })
        .collect()
}
