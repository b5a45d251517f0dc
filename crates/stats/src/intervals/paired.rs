//! Values of a variant's trials against its baseline's, paired by block: the pairs, and
//! their difference with a t interval. A block runs each variant once, or with two variants
//! twice (the extra-period design, `experiment::order`): a variant's k-th trial in a block
//! pairs with its baseline's k-th there.

use crate::intervals::overhead::paired_difference;
use crate::results::Trial;

/// Each trial of `variant` with its partner among `baseline`'s: the same block, and the same
/// place among its variant's trials in that block. Trials without one are left out.
pub fn partners<'a>(baseline: &'a [Trial], variant: &'a [Trial]) -> Vec<(&'a Trial, &'a Trial)> {
    let rank = |trials: &[Trial], i: usize| {
        trials[..i]
            .iter()
            .filter(|t| t.block == trials[i].block)
            .count()
    };
    (0..variant.len())
        .filter_map(|i| {
            let k = rank(variant, i);
            let b = baseline
                .iter()
                .filter(|b| b.block == variant[i].block)
                .nth(k)?;
            Some((b, &variant[i]))
        })
        .collect()
}

/// The values of the blocks both ran and both have the value for: (baseline's, variant's).
pub fn paired_values(
    baseline: &[Trial],
    variant: &[Trial],
    f: impl Fn(&Trial) -> Option<f64>,
) -> (Vec<f64>, Vec<f64>) {
    let mut b = vec![];
    let mut v = vec![];
    for (base, t) in partners(baseline, variant) {
        if let (Some(x), Some(y)) = (f(base), f(t)) {
            b.push(x);
            v.push(y);
        }
    }
    (b, v)
}

/// The variant minus its baseline in each block both ran and both have the value for, with
/// a t interval over those blocks.
pub fn by_block(
    baseline: &[Trial],
    variant: &[Trial],
    f: impl Fn(&Trial) -> Option<f64>,
) -> Option<crate::results::Estimate> {
    let (b, v) = paired_values(baseline, variant, f);
    paired_difference(&b, &v)
}
