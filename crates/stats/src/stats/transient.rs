//! A residual transient: after a switch the warm-up waits until the throughput is steady,
//! but a slowdown that outlasts it shows as a first half slower than the second. For each
//! preceding variant, ln(first half / second half) of the trials right after it is compared
//! (Welch) with the same after the baseline; a slower first half is a warning naming the
//! variant.

use super::cells::CellTrials;
use crate::intervals::overhead::{pct, welch_ci};
use crate::results::Transient;

/// One entry per preceding variant other than the baseline, where both groups have
/// enough trials.
pub(super) fn transients(cells: &[CellTrials], names: &[String]) -> Vec<Transient> {
    let group = |after: &str| -> Vec<f64> {
        cells
            .iter()
            .filter(|c| c.rate.is_none())
            .flat_map(|c| &c.trials)
            .filter(|t| t.after.as_deref() == Some(after))
            .filter_map(|t| {
                let [first, second] = t.halves_qps?;
                (first > 0.0 && second > 0.0).then(|| (first / second).ln())
            })
            .collect()
    };
    let Some(first) = names.first() else {
        return vec![];
    };
    let base = group(first);
    names
        .iter()
        .skip(1)
        .filter_map(|after| {
            let (diff, half) = welch_ci(&base, &group(after))?;
            let ci95_pct = [pct(diff + half), pct(diff - half)];
            Some(Transient {
                after: after.clone(),
                pct: pct(diff),
                significant: ci95_pct[0] > 0.0 || ci95_pct[1] < 0.0,
                ci95_pct,
            })
        })
        .collect()
}
