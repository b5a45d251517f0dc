//! The carry-over correction as the summaries use it: which terms the model has (one per
//! preceding variant, a lag-2 term when the design can tell it and it shows, or one pooled
//! term when there are too few trials for more), the trials it is fitted on, each pair's
//! contrasts, and what correcting a cell's pairs does to its interval.

use super::carryover::{self, Fit, Obs, Pair};
use super::cells::CellTrials;
use crate::intervals::overhead::pct;
use crate::intervals::sample::Extra;
use crate::results::Trial;

/// The carry-over model's terms: one per preceding variant other than the first (the
/// all-off baseline), with two variants or more one for a feature trial two before, and
/// last one pooled term (right after any feature's trial) for when there are too few trials
/// for one per variant.
pub(super) struct Terms {
    pub(super) names: Vec<String>,
    lag2: bool,
}

impl Terms {
    pub(super) fn new(names: Vec<String>) -> Terms {
        let lag2 = names.len() >= 2;
        Terms { names, lag2 }
    }

    pub(super) fn count(&self) -> usize {
        self.names.len().saturating_sub(1) + usize::from(self.lag2)
    }

    /// The index of the pooled term: right after any variant but the first.
    fn pooled(&self) -> usize {
        self.count()
    }

    /// A trial's value of each term, the pooled one last.
    pub(super) fn x(&self, t: &Trial) -> Vec<f64> {
        let one = |b: bool| f64::from(u8::from(b));
        let after = |j: usize| one(t.after.as_deref() == Some(&self.names[j]));
        let mut x: Vec<f64> = (1..self.names.len()).map(after).collect();
        let feature = |a: &Option<String>| a.as_deref().is_some_and(|a| a != self.names[0]);
        if self.lag2 {
            x.push(one(feature(&t.after2)));
        }
        x.push(one(feature(&t.after)));
        x
    }

    /// The terms as results.json names them.
    pub(super) fn describe(&self, k: usize) -> (String, u32) {
        if k + 1 < self.names.len() {
            (self.names[k + 1].clone(), 1)
        } else if k == self.pooled() {
            ("any feature".to_string(), 1)
        } else {
            ("any feature".to_string(), 2)
        }
    }
}

/// Paired trials of `variant` against `baseline` (`paired::partners`: the blocks both ran,
/// the k-th of each in a block), in the variant's order, with their block numbers.
pub(super) fn pairs(baseline: &[Trial], variant: &[Trial], terms: &Terms) -> (Vec<Pair>, Vec<u32>) {
    let mut out = (vec![], vec![]);
    for (b, v) in crate::intervals::paired::partners(baseline, variant) {
        if v.qps <= 0.0 || b.qps <= 0.0 {
            continue;
        }
        let (xv, xb) = (terms.x(v), terms.x(b));
        out.0.push(Pair {
            log_ratio: (v.qps / b.qps).ln(),
            d: xv.iter().zip(&xb).map(|(a, b)| a - b).collect(),
        });
        out.1.push(v.block);
    }
    out
}

/// The carry-over fit, and the inverse of the spread of every cell's contrasts it was
/// fitted on (what a cell's share of it is measured against; None: singular, no share).
pub(super) struct Correction {
    fit: Fit,
    spread_inv: Option<Vec<Vec<f64>>>,
}

impl Correction {
    pub(super) fn new(fit: Fit, cells: &[Vec<Pair>]) -> Correction {
        let k = fit.terms.len();
        let mut spread = vec![vec![0.0; k]; k];
        for c in cells {
            let s = carryover::spread(c, &fit.terms);
            for i in 0..k {
                for j in 0..k {
                    spread[i][j] += s[i][j];
                }
            }
        }
        Correction {
            fit,
            spread_inv: carryover::invert(&spread),
        }
    }

    /// The fit itself.
    pub(super) fn fit(&self) -> &Fit {
        &self.fit
    }
}

/// Each pair's log ratio less its carry-over correction, and what the correction adds to
/// the variance of their mean (and takes from their own degrees of freedom).
pub(super) fn correct(pairs: &[Pair], c: Option<&Correction>) -> (Vec<f64>, Extra) {
    let Some(c) = c else {
        return (
            pairs.iter().map(|p| p.log_ratio).collect(),
            Extra::default(),
        );
    };
    let logs = pairs
        .iter()
        .map(|p| p.log_ratio - c.fit.correction(&p.d))
        .collect();
    let mut extra = c.fit.extra(&mean_d(pairs));
    extra.used = c
        .spread_inv
        .as_ref()
        .map_or(0.0, |inv| c.fit.leverage(pairs, inv));
    (logs, extra)
}

/// The mean contrast of each term over `pairs`.
pub(super) fn mean_d(pairs: &[Pair]) -> Vec<f64> {
    let k = pairs.first().map_or(0, |p| p.d.len());
    let n = pairs.len().max(1) as f64;
    (0..k)
        .map(|i| pairs.iter().map(|p| p.d[i]).sum::<f64>() / n)
        .collect()
}

/// Every closed-loop trial as the carry-over fit sees it: its block (per load point), its
/// cell's column (the first variant's cell at each point is the reference), ln(qps) and its
/// terms. At a fixed rate throughput is what was asked: rate cells tell nothing about a
/// carry-over.
pub(super) fn observations(cells: &[CellTrials], terms: &Terms) -> (Vec<Obs>, usize) {
    let mut out = vec![];
    for (i, c) in cells.iter().enumerate().filter(|(_, c)| c.rate.is_none()) {
        let column = column(cells, i);
        for t in c.trials.iter().filter(|t| t.qps > 0.0) {
            out.push(Obs {
                group: c.point * 1_000_000 + t.block as usize,
                point: c.point,
                cell: column,
                y: t.qps.ln(),
                x: terms.x(t),
            });
        }
    }
    let columns = (0..cells.len()).filter_map(|i| column(cells, i)).count();
    (out, columns)
}

/// Cell `i`'s column in the fit: the closed-loop cells that are not their point's first
/// variant, in order.
pub(super) fn column(cells: &[CellTrials], i: usize) -> Option<usize> {
    let is_column = |c: &CellTrials| c.rate.is_none() && c.variant_index != 0;
    is_column(&cells[i]).then(|| cells[..i].iter().filter(|c| is_column(c)).count())
}

/// Below this many residual degrees of freedom a term per preceding variant costs the
/// intervals more than it can correct (each cell's own spread pays for the fit): one term
/// for a trial after any feature's instead. A property of the design, not of the data.
const PER_VARIANT_DF: usize = 30;

/// The carry-over fit: a term per preceding variant (and lag 2, when it is there to see),
/// or with too few trials for that one pooled term; what was left out is said.
pub(super) fn fit_carry_over(
    observed: &(Vec<Obs>, usize),
    terms: &Terms,
    notes: &mut Vec<String>,
) -> Option<Fit> {
    let mut said = vec![];
    let per_variant = fit_per_variant(observed, terms, &mut said);
    if per_variant.as_ref().is_some_and(|f| f.df >= PER_VARIANT_DF) || terms.names.len() <= 2 {
        notes.extend(said);
        return per_variant;
    }
    notes.push(format!(
        "too few trials yet for a carry-over term per preceding variant (fewer than \
         {PER_VARIANT_DF} degrees of freedom): one term for a trial right after any feature's"
    ));
    carryover::estimate(&observed.0, observed.1, &[terms.pooled()])
}

/// A term per preceding variant, and lag 2 when the design can tell it and it is there to
/// see.
fn fit_per_variant(
    (obs, columns): &(Vec<Obs>, usize),
    terms: &Terms,
    notes: &mut Vec<String>,
) -> Option<Fit> {
    let main = obs.as_slice();
    let estimate = |keep: &[usize]| carryover::estimate(main, *columns, keep);
    let lag1: Vec<usize> = (0..terms.names.len().saturating_sub(1)).collect();
    if !terms.lag2 {
        return estimate(&lag1);
    }
    let two = terms.names.len() == 2;
    // Whether some block ran a cell twice (the extra-period blocks), or every block one each.
    let repeated = {
        let mut seen = std::collections::HashSet::new();
        obs.iter().any(|o| !seen.insert((o.group, o.cell)))
    };
    let all: Vec<usize> = (0..terms.count()).collect();
    let Some(f) = estimate(&all) else {
        notes.push(if two && !repeated {
            "blocks of one each cannot tell a carry-over lasting two trials from the cost (it \
             is the same in every such block): only the trial right after is corrected for, \
             and the warm-up's settle rule is what removes the rest"
                .into()
        } else {
            "too few blocks yet to tell a carry-over lasting two trials from the others: only \
             the trial right after is corrected for"
                .into()
        });
        return estimate(&lag1);
    };
    // Two variants in extra-period blocks: both lags always (each cell's cost is the fit's
    // own coefficient, `extra_period`).
    if two {
        return Some(f);
    }
    // The Williams order balances the trial right after, not the one after that: correcting
    // for a lag-2 term costs every interval some width (15% with three variants), so it is
    // corrected for only when it is there to see.
    let (g, half) = f.term(terms.count() - 1).expect("the lag-2 term");
    if g - half > 0.0 || g + half < 0.0 {
        return Some(f);
    }
    notes.push(format!(
        "a carry-over lasting two trials was looked for and not found ({:+.1}% [{:+.1}, {:+.1}]): \
         only the trial right after is corrected for",
        pct(g),
        pct(g + half),
        pct(g - half)
    ));
    estimate(&lag1)
}

/// Whether a cell ran in extra-period blocks (two variants, each twice in a block,
/// `experiment::order`): then its cost is the fit's own coefficient for it (`CellFit`), the
/// carry-overs of both lags in the model with no test deciding whether they are there (a
/// test that lets a real one through now and then costs coverage).
pub(super) fn extra_period(variant: &[Trial], terms: &Terms) -> bool {
    terms.names.len() == 2
        && variant
            .iter()
            .enumerate()
            .any(|(i, t)| variant[..i].iter().any(|u| u.block == t.block))
}
