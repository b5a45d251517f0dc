//! Interactions in a factorial experiment: how much one factor's cost changes with another
//! factor's level. For a cell v with factors f and g both away from their first level, a the
//! cell with f at its first level, b the one with g at its first level and c the one with
//! both: in every block all four ran, f's cost at g's level minus its cost at g's first
//! level, in percentage points, 100·(q_b/q_c − q_v/q_a), each ratio corrected for carry-over
//! as the overheads are. A t interval over the blocks, its variance carrying the
//! correction's; the p-value joins the overheads' Holm family.

use super::carryover::Fit;
use super::cells::CellTrials;
use super::correction::{Terms, mean_d, pairs};
use crate::intervals::overhead::mean_and_variance_of_mean;
use crate::intervals::sample::{Extra, t975_real, two_sided_p};
use crate::results::Interaction;
use std::collections::BTreeMap;

/// Every interaction of two factors the experiment's cells allow.
pub(super) fn interactions(
    cells: &[CellTrials],
    terms: &Terms,
    fit: Option<&Fit>,
) -> Vec<Interaction> {
    let at = |variant: usize, point: usize| {
        cells
            .iter()
            .find(|x| x.variant_index == variant && x.point == point)
    };
    let mut out = vec![];
    for v in cells.iter().filter(|c| c.rate.is_none()) {
        for (i, (f, a)) in v.effects.iter().enumerate() {
            for (g, b) in v.effects.iter().skip(i + 1) {
                let (Some(a), Some(b)) = (at(*a, v.point), at(*b, v.point)) else {
                    continue;
                };
                let Some(c) = b
                    .effects
                    .iter()
                    .find(|(name, _)| name == f)
                    .and_then(|(_, c)| at(*c, v.point))
                else {
                    continue;
                };
                let level = |factor: &str| {
                    v.levels
                        .iter()
                        .find(|(name, _)| name == factor)
                        .map(|(_, l)| l.clone())
                        .unwrap_or_default()
                };
                if let Some((pct, ci95_pct, p_value, blocks)) =
                    difference(terms, fit, (&v.trials, &a.trials), (&b.trials, &c.trials))
                {
                    out.push(Interaction {
                        factors: [f.clone(), g.clone()],
                        levels: [level(f), level(g)],
                        against: c
                            .levels
                            .iter()
                            .find(|(name, _)| name == g)
                            .map(|(_, l)| l.clone())
                            .unwrap_or_default(),
                        variant: v.variant.clone(),
                        threads: v.threads,
                        pct,
                        ci95_pct,
                        significant: false,
                        p_value,
                        blocks,
                    });
                }
            }
        }
    }
    out
}

type Trials<'a> = (&'a [crate::results::Trial], &'a [crate::results::Trial]);

/// 100·(r₂ − r₁) per block, r₁ = q_v/q_a and r₂ = q_b/q_c corrected for carry-over: the
/// mean, its 95% interval, the p-value and the blocks. None below 3 blocks.
fn difference(
    terms: &Terms,
    fit: Option<&Fit>,
    (v, a): Trials,
    (b, c): Trials,
) -> Option<(f64, [f64; 2], f64, u32)> {
    let (p1, blocks1) = pairs(a, v, terms);
    let (p2, blocks2) = pairs(c, b, terms);
    // A block's pairs in their order (two of each with two variants' extra-period blocks).
    let keyed = |blocks: &[u32]| -> Vec<(u32, usize)> {
        (0..blocks.len())
            .map(|i| {
                (
                    blocks[i],
                    blocks[..i].iter().filter(|&&b| b == blocks[i]).count(),
                )
            })
            .collect()
    };
    let second: BTreeMap<(u32, usize), usize> = keyed(&blocks2)
        .into_iter()
        .enumerate()
        .map(|(i, k)| (k, i))
        .collect();
    let correction = |p: &super::carryover::Pair| fit.map_or(0.0, |f| f.correction(&p.d));
    let (mut diffs, mut used1, mut used2, mut r1s, mut r2s) = (vec![], vec![], vec![], 0.0, 0.0);
    for (i, key) in keyed(&blocks1).iter().enumerate() {
        let Some(&j) = second.get(key) else {
            continue;
        };
        let r1 = (p1[i].log_ratio - correction(&p1[i])).exp();
        let r2 = (p2[j].log_ratio - correction(&p2[j])).exp();
        diffs.push(100.0 * (r2 - r1));
        used1.push(p1[i].clone());
        used2.push(p2[j].clone());
        r1s += r1;
        r2s += r2;
    }
    let n = diffs.len();
    let (mean, var_of_mean) = mean_and_variance_of_mean(&diffs)?;
    // The correction's own error moves r₁ by −r₁·d₁·δγ and r₂ by −r₂·d₂·δγ.
    let extra = fit.map_or(0.0, |f| {
        let (d1, d2) = (mean_d(&used1), mean_d(&used2));
        let w: Vec<f64> = d1
            .iter()
            .zip(&d2)
            .map(|(x1, x2)| 100.0 * (r2s * x2 - r1s * x1) / n as f64)
            .collect();
        f.extra_variance(&w)
    });
    let extra = Extra {
        var: extra,
        df: fit.map_or(0, |f| f.df),
        used: 0.0,
    };
    let (se, df) = extra.combine(var_of_mean, n - 1);
    let half = t975_real(df) * se;
    Some((
        mean,
        [mean - half, mean + half],
        two_sided_p(mean, se, df),
        n as u32,
    ))
}
