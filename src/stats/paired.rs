//! Values of a variant's trials against its baseline's, paired by block: the pairs, and
//! their difference with a t interval.

use super::overhead::paired_difference;
use crate::results::Trial;

/// The values of the blocks both ran and both have the value for: (baseline's, variant's).
pub fn paired_values(
    baseline: &[Trial],
    variant: &[Trial],
    f: impl Fn(&Trial) -> Option<f64>,
) -> (Vec<f64>, Vec<f64>) {
    let mut b = vec![];
    let mut v = vec![];
    for t in variant {
        if let Some(base) = baseline.iter().find(|x| x.block == t.block)
            && let (Some(x), Some(y)) = (f(base), f(t))
        {
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
