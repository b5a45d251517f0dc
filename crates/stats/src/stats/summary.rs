//! Cells from trials: medians, and the overhead of every cell against the baseline cell of
//! the same thread count (and the same levels of other factors), paired by block number,
//! corrected for carry-over, with `significant` decided by Holm over every test the
//! experiment reports. Pure: trials in, cells out.

use super::carryover::CellFit;
use super::carryover::Pair;
use super::correction::{
    Correction, Terms, column, correct, extra_period, fit_carry_over, observations, pairs,
};
use crate::intervals::holm::holm;
use crate::intervals::overhead::{overhead_from, overhead_of_corrected, paired_test, pct};
use crate::intervals::paired::{by_block, paired_values};
use crate::intervals::sample::median;
use crate::results::{
    Analysis, CarryOverTerm, Cell, CellRate, CpuDelta, FactorEffect, LatencyDelta, Overhead, Trial,
};

pub use super::cells::CellTrials;

/// Every cell, and what was estimated over all of them.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// One per (variant, threads).
    pub cells: Vec<Cell>,
    /// Carry-over, interactions, transients, the Holm family's size.
    pub analysis: Analysis,
}

/// The overhead from paired blocks, corrected for carry-over; outlier indices become block
/// numbers.
fn corrected((pairs, blocks): &(Vec<Pair>, Vec<u32>), c: Option<&Correction>) -> Option<Overhead> {
    let (logs, extra) = correct(pairs, c);
    let mut o = overhead_of_corrected(&logs, extra)?;
    for b in o.outlier_blocks.iter_mut() {
        *b = blocks[*b as usize];
    }
    Some(o)
}

/// The overhead of a two-variant cell in extra-period blocks (`extra_period`): the fit's own
/// coefficient and its standard error make the interval, the pairs corrected by the fit the
/// robust figure and the outliers.
fn from_fit(
    own: CellFit,
    (pairs, blocks): &(Vec<Pair>, Vec<u32>),
    c: Option<&Correction>,
) -> Option<Overhead> {
    let (logs, extra) = correct(pairs, c);
    if logs.len() < crate::intervals::overhead::MIN_BLOCKS {
        return None;
    }
    let mut o = overhead_from((own.delta, own.var.sqrt(), own.df), &logs, extra);
    // A stalled trial pulls the fit's carry-over terms and with them every corrected pair:
    // the pairs as measured show it where it was.
    let raw: Vec<f64> = pairs.iter().map(|p| p.log_ratio).collect();
    o.outlier_blocks = crate::intervals::robust::outliers(&raw)
        .into_iter()
        .map(|i| blocks[i])
        .collect();
    Some(o)
}

/// Summarize every cell; overhead against its baseline cell at the same threads.
pub fn summarize(cells: &[CellTrials]) -> Summary {
    let mut names: Vec<(usize, String)> = cells
        .iter()
        .map(|c| (c.variant_index, c.variant.clone()))
        .collect();
    names.sort();
    names.dedup();
    let terms = Terms::new(names.into_iter().map(|(_, n)| n).collect());
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
    let mut analysis = Analysis {
        robust_method: crate::intervals::robust::METHOD.into(),
        ..Default::default()
    };
    let fit = fit_carry_over(
        &observations(cells, &terms),
        &terms,
        &mut analysis.carry_over_notes,
    );
    // At a fixed rate throughput is what was asked: rate cells have no throughput overhead.
    let main_pairs: Vec<Vec<Pair>> = cells
        .iter()
        .filter(|c| c.rate.is_none())
        .filter_map(|c| Some(pairs(&base_of(c)?.trials, &c.trials, &terms).0))
        .collect();
    let correction = fit.map(|f| Correction::new(f, &main_pairs));
    let fit = correction.as_ref();
    // Per cell, which of its effects are against its own baseline: its overhead itself, one
    // test (computed once, and counted once in Holm's family).
    let (mut out, same): (Vec<Cell>, Vec<Vec<bool>>) = cells
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let base = base_of(c);
            let closed = c.rate.is_none();
            let overhead = base.filter(|_| closed).and_then(|b| {
                let pairs = pairs(&b.trials, &c.trials, &terms);
                let own = fit
                    .filter(|_| extra_period(&c.trials, &terms))
                    .and_then(|f| *f.fit().cells.get(column(cells, i)?)?);
                match own {
                    Some(cell_fit) => from_fit(cell_fit, &pairs, fit),
                    None => corrected(&pairs, fit),
                }
            });
            let (effects, same): (Vec<FactorEffect>, Vec<bool>) = c
                .effects
                .iter()
                .filter(|_| closed)
                .filter_map(|(factor, other)| {
                    let b = at(*other, c.point)?;
                    let same = *other == c.baseline;
                    let effect = FactorEffect {
                        factor: factor.clone(),
                        against: b.variant.clone(),
                        overhead: if same {
                            overhead.clone()
                        } else {
                            corrected(&pairs(&b.trials, &c.trials, &terms), fit)
                        },
                    };
                    Some((effect, same))
                })
                .unzip();
            let server_cpu_delta_us = base.and_then(|b| cpu_delta(&b.trials, &c.trials));
            let latency_delta_ms = base.filter(|_| !closed).and_then(|b| {
                Some(LatencyDelta {
                    p50: by_block(&b.trials, &c.trials, |t| Some(t.latency_ms.p50))?,
                    p99: by_block(&b.trials, &c.trials, |t| Some(t.latency_ms.p99))?,
                })
            });
            // A value some trials lack (withheld, not measured): the median of those that
            // have it.
            let opt_median = |f: fn(&Trial) -> Option<f64>| -> Option<f64> {
                median(&c.trials.iter().filter_map(f).collect::<Vec<_>>())
            };
            let of = |f: fn(&Trial) -> f64| {
                median(&c.trials.iter().map(f).collect::<Vec<_>>()).unwrap_or(0.0)
            };
            let cell = Cell {
                variant: c.variant.clone(),
                threads: c.threads,
                qps_median: of(|t| t.qps),
                p95_ms_median: of(|t| t.latency_ms.p95),
                server_cpu_us_per_query_median: opt_median(|t| t.server_cpu_us_per_query),
                log_bytes_per_query_median: opt_median(|t| t.log_bytes_per_query),
                wal_bytes_per_query_median: opt_median(|t| t.wal_bytes_per_query),
                duration_s_median: of(|t| t.duration_s),
                trials: c.trials.clone(),
                disturbed_trials: vec![],
                no_interval: None,
                overhead,
                server_cpu_delta_us,
                server_cpu_withheld_trials: c
                    .trials
                    .iter()
                    .filter(|t| t.other_clients_pct.is_some() || t.other_sessions.is_some())
                    .count() as u32,
                effects,
                rate: c
                    .rate
                    .as_ref()
                    .map(|(level, asked)| cell_rate(level, *asked, &c.trials)),
                latency_delta_ms,
                fingerprints: super::fingerprints::costs(
                    base.map(|b| b.trials.as_slice()),
                    &c.trials,
                ),
            };
            (cell, same)
        })
        .unzip();
    if let Some(f) = fit.map(Correction::fit) {
        analysis.carry_over = f
            .terms
            .iter()
            .map(|&k| {
                let (g, half) = f.term(k).expect("a kept term");
                let (after, lag) = terms.describe(k);
                // Slower after: γ < 0 in log units is a positive slowdown.
                let ci95_pct = [pct(g + half), pct(g - half)];
                CarryOverTerm {
                    after,
                    lag,
                    pct: pct(g),
                    significant: ci95_pct[0] > 0.0 || ci95_pct[1] < 0.0,
                    ci95_pct,
                }
            })
            .collect();
    }
    analysis.interactions =
        super::interaction::interactions(cells, &terms, fit.map(Correction::fit));
    analysis.transients = super::transient::transients(cells, &terms.names);
    analysis.intervals = adjust(&mut out, &same, &mut analysis);
    Summary {
        cells: out,
        analysis,
    }
}

/// The server CPU per statement the variant adds, paired by block (a trial whose figure was
/// withheld drops its own block only), with its p-value and its share of the baseline's.
fn cpu_delta(baseline: &[Trial], variant: &[Trial]) -> Option<CpuDelta> {
    let (b, v) = paired_values(baseline, variant, |t| t.server_cpu_us_per_query);
    let (estimate, p) = paired_test(&b, &v)?;
    let base_mean = b.iter().sum::<f64>() / b.len() as f64;
    Some(CpuDelta {
        pct_of_baseline: (base_mean > 0.0).then(|| 100.0 * estimate.value / base_mean),
        p_value: Some(p),
        significant: None,
        blocks: b.len() as u32,
        estimate,
    })
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

/// Holm over every test the experiment reports: each cell's overhead and its robust
/// companion, each factor effect and its companion, each server-CPU difference, each
/// interaction. An effect that is
/// the cell's overhead itself (`same`, per cell and effect) is one test, not two: it takes
/// the overhead's decision. Returns how many.
fn adjust(cells: &mut [Cell], same: &[Vec<bool>], analysis: &mut Analysis) -> u32 {
    let mut p = vec![];
    let mut flags: Vec<&mut bool> = vec![];
    for (c, same) in cells.iter_mut().zip(same) {
        let Cell {
            overhead,
            effects,
            server_cpu_delta_us,
            ..
        } = c;
        if let Some(d) = server_cpu_delta_us.as_mut()
            && let Some(pv) = d.p_value
        {
            p.push(pv);
            d.significant = Some(false);
            flags.push(d.significant.as_mut().expect("just set"));
        }
        let distinct = effects
            .iter_mut()
            .zip(same)
            .filter(|(_, s)| !**s)
            .filter_map(|(e, _)| e.overhead.as_mut());
        for o in overhead.as_mut().into_iter().chain(distinct) {
            p.push(o.p_value);
            flags.push(&mut o.significant);
            if let Some(r) = o.robust.as_mut() {
                p.push(r.p_value);
                flags.push(&mut r.significant);
            }
        }
    }
    for i in analysis.interactions.iter_mut() {
        p.push(i.p_value);
        flags.push(&mut i.significant);
    }
    for (flag, sig) in flags.into_iter().zip(holm(&p, 0.05)) {
        *flag = sig;
    }
    for (c, same) in cells.iter_mut().zip(same) {
        let Some(o) = c.overhead.clone() else {
            continue;
        };
        for (e, _) in c.effects.iter_mut().zip(same).filter(|(_, s)| **s) {
            e.overhead = Some(o.clone());
        }
    }
    p.len() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Variant `i` at 8 threads, against variant 0.
    fn cell_of(
        name: &str,
        i: usize,
        trials: Vec<Trial>,
        effects: Vec<(String, usize)>,
    ) -> CellTrials {
        CellTrials {
            variant: name.into(),
            baseline: 0,
            variant_index: i,
            threads: 8,
            point: 0,
            rate: None,
            trials,
            effects,
            levels: vec![],
        }
    }

    fn trial(block: u32, qps: f64) -> Trial {
        Trial {
            block,
            qps,
            ..Default::default()
        }
    }

    #[test]
    fn blocks_pair_by_number_not_position() {
        // The variant skipped blocks 2 and 3 (it had met its goal) and ran again in block 4:
        // its third trial goes with the baseline's block 4, not block 2.
        let terms = Terms::new(vec!["off".into(), "on".into()]);
        let base: Vec<Trial> = (0..5).map(|b| trial(b, 100.0 + 10.0 * b as f64)).collect();
        let var = vec![trial(0, 90.0), trial(1, 99.0), trial(4, 126.0)];
        let (p, blocks) = pairs(&base, &var, &terms);
        assert_eq!(blocks, [0, 1, 4]);
        for x in &p {
            assert!((x.log_ratio - 0.9f64.ln()).abs() < 1e-12, "{p:?}");
        }
    }

    #[test]
    fn a_withheld_value_drops_its_block_not_the_estimate() {
        let mut base: Vec<Trial> = (0..4).map(|b| trial(b, 100.0)).collect();
        let mut var: Vec<Trial> = (0..4).map(|b| trial(b, 90.0)).collect();
        for (i, t) in base.iter_mut().enumerate() {
            t.server_cpu_us_per_query = Some(20.0 + i as f64 * 0.1);
        }
        for (i, t) in var.iter_mut().enumerate() {
            t.server_cpu_us_per_query = Some(25.0 + i as f64 * 0.12);
        }
        base[2].server_cpu_us_per_query = None;
        let e = by_block(&base, &var, |t| t.server_cpu_us_per_query).unwrap();
        assert!((e.value - 5.0).abs() < 0.1, "{e:?}");
    }

    /// The server-CPU differences are tests of the experiment like the overheads: each has
    /// a p-value, counts in Holm's family, and takes its decision from it. A difference
    /// that passes alone (p < 0.05) fails once the family is large enough.
    #[test]
    fn server_cpu_differences_are_in_holms_family() {
        let cell = |name: &str, i: usize, qps: f64, cpu: &dyn Fn(u32) -> f64| {
            let trials = (0..6)
                .map(|b| Trial {
                    server_cpu_us_per_query: Some(cpu(b)),
                    ..trial(b, qps * (1.0 + 0.02 * ((b * 7 % 5) as f64)))
                })
                .collect();
            cell_of(name, i, trials, vec![])
        };
        let base = |b: u32| 20.0 + (b % 3) as f64;
        // +8 µs, steady; and +0.6 µs whose paired t alone gives p ≈ 0.02.
        let wobble = [0.0, 1.2, 0.3, 0.9, 0.1, 1.1];
        let cells = [
            cell("off", 0, 100.0, &base),
            cell("big", 1, 90.0, &|b| base(b) + 8.0 + 0.1 * (b % 2) as f64),
            cell("small", 2, 100.0, &|b| base(b) + wobble[b as usize]),
        ];
        let s = summarize(&cells);
        let big = s.cells[1].server_cpu_delta_us.clone().unwrap();
        let small = s.cells[2].server_cpu_delta_us.clone().unwrap();
        assert_eq!(big.blocks, 6);
        assert!((big.estimate.value - 8.05).abs() < 1e-9, "{big:?}");
        let base_mean = (0..6).map(base).sum::<f64>() / 6.0;
        assert!((big.pct_of_baseline.unwrap() - 100.0 * 8.05 / base_mean).abs() < 1e-9);
        assert_eq!(big.significant, Some(true));
        let p = small.p_value.unwrap();
        assert!(p < 0.05 && p > 0.05 / 6.0, "p = {p}");
        // Two overheads (each with a robust companion when it has one) and two CPU
        // differences. The small variant's throughput is the baseline's (p = 1, not
        // rejected), so Holm's step-down compares the small CPU difference's p with 0.05/2.
        assert!(s.analysis.intervals >= 4, "{}", s.analysis.intervals);
        assert_eq!(small.significant, Some(false), "{small:?}");
    }

    #[test]
    fn an_effect_that_is_the_overhead_is_one_test() {
        // a0 is the baseline; a1's factor effect is against a0 (its overhead again), b1's
        // against a1 (another comparison).
        let noisy = |b: u32, level: f64| trial(b, level * (1.0 + 0.01 * ((b * 7 % 5) as f64)));
        let cell = |name: &str, i: usize, level: f64, effects: Vec<(String, usize)>| {
            cell_of(name, i, (0..8).map(|b| noisy(b, level)).collect(), effects)
        };
        let cells = [
            cell("a0", 0, 100.0, vec![]),
            cell("a1", 1, 80.0, vec![("f".into(), 0)]),
            cell("b1", 2, 70.0, vec![("f".into(), 1)]),
        ];
        let s = summarize(&cells);
        let robust = s.cells[1].overhead.as_ref().unwrap().robust.is_some();
        // Two overheads and one distinct effect, each with its robust companion.
        assert_eq!(s.analysis.intervals, if robust { 6 } else { 3 });
        let a1 = &s.cells[1];
        assert_eq!(
            a1.effects[0].overhead, a1.overhead,
            "the same test, the same decision"
        );
    }
}
