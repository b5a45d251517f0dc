//! The stop rules' choices between rounds: which variants the next round runs at each load
//! point in precision mode (Stein's two-stage rule, the focus on the headline), and the
//! warning when the goal was not reached.

use crate::design::warnings::Warning;
use crate::design::{Design, Focus};
use crate::intervals::overhead::half_width;
use crate::results::Cell;
use std::collections::BTreeMap;

pub(crate) fn all(nv: usize) -> Vec<usize> {
    (0..nv).collect()
}

/// Precision mode: which variants the next round runs at each thread count. Every variant
/// until a thread count's planned blocks are done (the minimum, or the focus's fixed count
/// at the others); then, at the thread counts the goal is for, only the variants still
/// short of it, with the variants they are compared with.
///
/// A variant is short of the goal while its half-width is over `points`, and in any case
/// until the number of blocks its first stage asks for (Stein's two-stage rule: the
/// first-stage width h after n₀ blocks asks for n₀·(h/points)² blocks in all). Stopping at
/// the first block whose interval happens to look narrow would favour samples that
/// understate the noise; the first stage fixes most of the run's length before that can
/// happen (tests/statistics.rs measures the coverage both ways).
pub(crate) fn still_needed(
    exp: &Design,
    cells: &[Cell],
    (points, focus): (f64, Option<Focus>),
    counted: &[u32],
    stage: &mut BTreeMap<(u32, usize), f64>,
) -> Vec<(u32, Vec<usize>)> {
    let nv = exp.variants.len();
    exp.points()
        .iter()
        .enumerate()
        .filter_map(|(key, p)| {
            let (t, key) = (p.threads, key as u32);
            let first = exp.planned_blocks_at(t);
            if counted[key as usize] < first {
                return Some((key, all(nv)));
            }
            if focus.is_some_and(|f| f.threads != t) {
                return None;
            }
            let short = |i: usize, stage: &mut BTreeMap<(u32, usize), f64>| {
                let Some(o) = cells
                    .iter()
                    .find(|c| c.threads == t && c.variant == exp.variants[i].name)
                    .and_then(|c| c.overhead.as_ref())
                else {
                    return false;
                };
                let h0 = *stage.entry((t, i)).or_insert_with(|| half_width(o));
                let stein = (f64::from(first) * (h0 / points).powi(2)).ceil();
                f64::from(o.blocks) < stein || half_width(o) > points
            };
            let mut keep: Vec<usize> = vec![];
            for i in (0..nv).filter(|&i| short(i, stage)) {
                let v = &exp.variants[i];
                let partners = v.effects.iter().map(|(_, j)| *j);
                for j in std::iter::once(i).chain([v.baseline]).chain(partners) {
                    if !keep.contains(&j) {
                        keep.push(j);
                    }
                }
            }
            if keep.is_empty() {
                return None;
            }
            // A block of one each of two variants (a Williams row cut down) tells nothing of
            // a carry-over lasting two trials (it is the same in every such block): the model has
            // that term, and blocks keep three variants so that it goes on being learned
            // and the intervals it widens can narrow. The one added is the widest of the
            // others.
            while keep.len() < nv.min(3) {
                let width = |i: usize| {
                    cells
                        .iter()
                        .find(|c| c.threads == t && c.variant == exp.variants[i].name)
                        .and_then(|c| c.overhead.as_ref())
                        .map_or(f64::INFINITY, half_width)
                };
                let Some(widest) = (0..nv)
                    .filter(|i| !keep.contains(i))
                    .max_by(|a, b| width(*a).total_cmp(&width(*b)))
                else {
                    break;
                };
                keep.push(widest);
            }
            Some((key, keep))
        })
        .collect()
}

pub(crate) fn shortfall(cells: &[Cell], threads: &[u32], points: f64, rounds: u32) -> Warning {
    let wide = cells
        .iter()
        .filter(|c| threads.contains(&c.threads))
        .filter_map(|c| {
            let h = half_width(c.overhead.as_ref()?);
            (h > points).then(|| (c.variant.clone(), c.threads, h))
        })
        .collect();
    Warning::PrecisionShortfall {
        rounds,
        points,
        wide,
    }
}
