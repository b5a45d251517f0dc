//! Overhead from block-paired ratios.
//!
//! Each block runs every variant once at one thread count, in random order, within a few
//! seconds, so slow drift of a shared machine hits the variant and its baseline alike. Per
//! block b we take L_b = ln(qps_variant,b / qps_baseline,b); the overhead is
//! 100 × (1 − exp(mean L)), and its 95% interval maps the t interval of mean L
//! (Student's t with n−1 degrees of freedom: the blocks are independent, the ratios within
//! them paired). Working on log ratios keeps the interval asymmetric in the right way and
//! makes the estimate the geometric mean ratio, which one outlier block moves less.
//!
//! Student's t and the median are `sample`'s.

use crate::intervals::sample::{Extra, t_quantile, t975, t975_real, two_sided_p};
use crate::results::{Estimate, Overhead, Robust};

/// Welch's comparison of two independent samples: mean(b) − mean(a), its standard error
/// and the Welch–Satterthwaite degrees of freedom. None below 2 values in either.
pub fn welch(a: &[f64], b: &[f64]) -> Option<(f64, f64, f64)> {
    let (ma, va) = mean_and_variance_of_mean(a)?;
    let (mb, vb) = mean_and_variance_of_mean(b)?;
    let se2 = va + vb;
    let df = se2.powi(2) / (va.powi(2) / (a.len() - 1) as f64 + vb.powi(2) / (b.len() - 1) as f64);
    Some((mb - ma, se2.sqrt(), df))
}

/// mean(b) − mean(a) with Welch's 95% half-width (unpaired samples, unequal variances).
pub fn welch_ci(a: &[f64], b: &[f64]) -> Option<(f64, f64)> {
    let (diff, se, df) = welch(a, b)?;
    Some((diff, t975_real(df) * se))
}

/// Mean and 95% half-width of a sample with the quantile `q(df)` (the t quantile for the
/// real thing; the validation passes a wrong one to show it would be caught).
pub fn mean_ci_with(xs: &[f64], q: fn(usize) -> f64) -> Option<(f64, f64)> {
    let (mean, var_of_mean) = mean_and_variance_of_mean(xs)?;
    Some((mean, q(xs.len() - 1) * var_of_mean.sqrt()))
}

/// Fewer paired blocks (or trials) than this give no interval: with 2, t(1)'s quantile is
/// 12.7 and an interval like −112% [−262911, +100] says nothing; the words say "too few
/// blocks" instead.
pub const MIN_BLOCKS: usize = 3;

/// The sample mean and the estimated variance of that mean (s² / n). None below
/// `MIN_BLOCKS` values.
pub fn mean_and_variance_of_mean(xs: &[f64]) -> Option<(f64, f64)> {
    let n = xs.len();
    if n < MIN_BLOCKS {
        return None;
    }
    let mean = xs.iter().sum::<f64>() / n as f64;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    Some((mean, var / n as f64))
}

/// Mean and 95% half-width of a sample (t interval). None for fewer than 2 values.
pub fn mean_ci(xs: &[f64]) -> Option<(f64, f64)> {
    mean_ci_with(xs, t975)
}

/// A log ratio as an overhead in percent: 100 × (1 − e^L).
pub fn pct(log_ratio: f64) -> f64 {
    100.0 * (1.0 - log_ratio.exp())
}

/// The overhead from per-block log ratios ln(qps_variant / qps_baseline): the t interval of
/// their mean, its p-value, the robust companion and the outlier blocks (indices into
/// `logs`). The ratios may be corrected by an estimate shared with other cells (carry-over):
/// `extra` is what that estimate adds to the variance of their mean (none: 0).
/// `significant` is per interval here; `summary` replaces it with Holm's decision.
pub fn overhead_of_corrected(logs: &[f64], extra: Extra) -> Option<Overhead> {
    let n = logs.len();
    let (mean, var_of_mean) = mean_and_variance_of_mean(logs)?;
    let (se, df) = extra.combine(var_of_mean, n - 1);
    Some(overhead_from((mean, se, df), logs, extra))
}

/// The overhead of a mean log ratio `mean` with standard error `se` on `df` degrees of
/// freedom; `logs` (the corrected pairs, with the correction's `extra`) give the robust
/// figure and the outliers.
pub fn overhead_from((mean, se, df): (f64, f64, f64), logs: &[f64], extra: Extra) -> Overhead {
    let n = logs.len();
    let half = t975_real(df) * se;
    let p_value = two_sided_p(mean, se, df);
    let (lo, hi) = (pct(mean + half), pct(mean - half));
    let robust = crate::intervals::robust::trimmed_mean(logs, extra).map(|r| Robust {
        value: pct(r.est),
        ci95: [pct(r.hi), pct(r.lo)],
        p_value: r.p_value,
        significant: r.p_value < 0.05,
    });
    Overhead {
        pct: pct(mean),
        ci95_pct: [lo, hi],
        significant: p_value < 0.05,
        blocks: n as u32,
        p_value,
        robust,
        outlier_blocks: crate::intervals::robust::outliers(logs)
            .into_iter()
            .map(|i| i as u32)
            .collect(),
        mde_pct: mde(se, df),
        verdict: None,
    }
}

/// An overhead's minimum detectable effect: the one results.json holds, or for results
/// written before it, the same figure from the interval (its half-width in log units over
/// t₀.₉₇₅ with one degree of freedom fewer than its blocks).
pub fn mde_of(o: &Overhead) -> Option<f64> {
    o.mde_pct.or_else(|| {
        let [lo, hi] = o.ci95_pct;
        let half = ((1.0 - lo / 100.0).ln() - (1.0 - hi / 100.0).ln()) / 2.0;
        let df = f64::from(o.blocks.max(1) - 1);
        mde(half / t975_real(df), df)
    })
}

/// The minimum detectable effect of a mean log ratio with standard error `se` on `df`
/// degrees of freedom: the cost, in percent, a two-sided 5% test detects 80% of the time,
/// (t₀.₉₇₅ + t₀.₈₀)·se below zero in log units. None when it cannot be told (no spread, or
/// no degrees of freedom).
pub fn mde(se: f64, df: f64) -> Option<f64> {
    let reach = (t975_real(df) + t_quantile(0.80, df)) * se;
    (reach.is_finite() && reach > 0.0).then(|| pct(-reach))
}

/// The robust estimate, when it tells a different story from the mean and may be told: it
/// passed Holm's adjustment in the same family as the means (`Robust::significant`), and
/// either the mean did not, or the robust estimate lies outside the mean's interval. A
/// robust estimate that did not pass is never used in words, whatever the mean says.
pub fn robust_to_tell(o: &Overhead) -> Option<&Robust> {
    let r = o.robust.as_ref().filter(|r| r.significant)?;
    let outside = r.value < o.ci95_pct[0] || r.value > o.ci95_pct[1];
    (!o.significant || outside).then_some(r)
}

/// Paired difference variant − baseline (e.g. server CPU µs per query), with its 95% CI.
pub fn paired_difference(baseline: &[f64], variant: &[f64]) -> Option<Estimate> {
    paired_test(baseline, variant).map(|(e, _)| e)
}

/// The paired difference with its two-sided p-value (paired t).
pub fn paired_test(baseline: &[f64], variant: &[f64]) -> Option<(Estimate, f64)> {
    let diffs: Vec<f64> = baseline.iter().zip(variant).map(|(b, v)| v - b).collect();
    let (mean, var_of_mean) = mean_and_variance_of_mean(&diffs)?;
    let df = diffs.len() - 1;
    let half = t975(df) * var_of_mean.sqrt();
    let estimate = Estimate {
        value: mean,
        ci95: [mean - half, mean + half],
    };
    Some((estimate, two_sided_p(mean, var_of_mean.sqrt(), df as f64)))
}

/// Half-width of an overhead interval, in percentage points.
pub fn half_width(o: &Overhead) -> f64 {
    (o.ci95_pct[1] - o.ci95_pct[0]) / 2.0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Throughput overhead of `variant` against `baseline`, paired by block index (the two
    /// slices hold one qps per block; extra values in the longer one are ignored).
    fn paired_overhead(baseline: &[f64], variant: &[f64]) -> Option<Overhead> {
        let logs: Vec<f64> = baseline
            .iter()
            .zip(variant)
            .filter(|(b, v)| **b > 0.0 && **v > 0.0)
            .map(|(b, v)| (v / b).ln())
            .collect();
        overhead_of_corrected(&logs, Extra::default())
    }

    #[test]
    fn constant_ratio_gives_exact_overhead_and_zero_width_but_no_claim() {
        let base = [100.0, 200.0, 150.0];
        let var = [80.0, 160.0, 120.0];
        let o = paired_overhead(&base, &var).unwrap();
        assert!((o.pct - 20.0).abs() < 1e-9);
        assert!(half_width(&o) < 1e-9);
        // No spread is no evidence: never significant, whatever the point estimate.
        assert!(!o.significant, "{o:?}");
        assert_eq!(o.p_value, 1.0);
        assert_eq!(o.blocks, 3);
    }

    /// The minimum detectable effect means what it says: a true cost of that size is found
    /// (interval clear of zero, above it) about 80% of the time. With z quantiles instead of
    /// t's (1.96 + 0.84) in `mde`, the same check finds it 67% of the time at 8 blocks, and
    /// fails.
    #[test]
    fn a_cost_the_size_of_the_mde_is_found_four_times_in_five() {
        let (n, sigma, runs) = (8usize, 0.05, 4000);
        let df = (n - 1) as f64;
        // The cost `mde` gives for the true standard error, in log units.
        let truth = mde(sigma / (n as f64).sqrt(), df).unwrap();
        let reach = -(1.0 - truth / 100.0).ln();
        let mut rng = crate::rng::Rng::new(36);
        let (mut found, mut mde_sum) = (0, 0.0);
        for _ in 0..runs {
            let logs: Vec<f64> = (0..n).map(|_| -reach + sigma * rng.normal()).collect();
            let o = overhead_of_corrected(&logs, Extra::default()).unwrap();
            found += usize::from(o.ci95_pct[0] > 0.0);
            mde_sum += o.mde_pct.unwrap();
        }
        let power = found as f64 / runs as f64;
        assert!((0.76..=0.84).contains(&power), "found {power}");
        // The reported MDE is the run's own estimate of that cost (its s, not σ): on
        // average within a few percent of it.
        let mean_mde = mde_sum / runs as f64;
        assert!(
            (mean_mde / truth - 1.0).abs() < 0.06,
            "{mean_mde} against {truth}"
        );
    }

    #[test]
    fn two_blocks_give_no_interval() {
        // With t(1) the interval would be −112% [−262911, +100]: not a number worth printing.
        assert!(paired_overhead(&[100.0, 90.0], &[50.0, 95.0]).is_none());
        assert!(paired_difference(&[1.0, 2.0], &[3.0, 5.0]).is_none());
        assert!(paired_overhead(&[100.0, 90.0, 80.0], &[50.0, 95.0, 70.0]).is_some());
    }

    #[test]
    fn noisy_equal_variants_are_within_noise() {
        let base = [100.0, 104.0, 97.0, 101.0];
        let var = [101.0, 103.0, 98.0, 100.0];
        let o = paired_overhead(&base, &var).unwrap();
        assert!(!o.significant, "{o:?}");
        assert!(o.ci95_pct[0] < 0.0 && o.ci95_pct[1] > 0.0);
    }

    #[test]
    fn p_values_agree_with_the_interval() {
        let p = |xs: &[f64]| overhead_of_corrected(xs, Extra::default()).unwrap().p_value;
        let xs = [0.1, 0.12, 0.09, 0.11, 0.13];
        assert!(p(&xs) < 0.001);
        let ys = [0.1, -0.1, 0.05, -0.04];
        assert!(p(&ys) > 0.5);
        // At the interval's edge the p-value is 0.05.
        let (m, h) = mean_ci(&ys).unwrap();
        let shifted: Vec<f64> = ys.iter().map(|y| y - (m - h)).collect();
        assert!((p(&shifted) - 0.05).abs() < 1e-6);
    }

    #[test]
    fn one_block_gives_no_interval() {
        assert!(paired_overhead(&[1.0], &[2.0]).is_none());
    }

    #[test]
    fn paired_difference_of_cpu() {
        let e = paired_difference(&[10.0, 11.0, 12.0], &[12.0, 13.1, 13.9]).unwrap();
        assert!((e.value - 2.0).abs() < 0.01);
        assert!(e.ci95[0] < 2.0 && e.ci95[1] > 2.0);
    }

    #[test]
    fn welch_matches_the_textbook_example() {
        // Wikipedia's "Welch's t-test" example 1: t = -2.46, df = 24.99, p = 0.021.
        let a1 = [
            27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7,
            21.4,
        ];
        let a2 = [
            27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5,
            24.4,
        ];
        let (diff, se, df) = welch(&a2, &a1).unwrap();
        assert!((diff / se - -2.46).abs() < 0.01, "t = {}", diff / se);
        assert!((df - 24.99).abs() < 0.01, "df = {df}");
        assert!((two_sided_p(diff, se, df.floor()) - 0.021).abs() < 0.002);
        let (_, half) = welch_ci(&a2, &a1).unwrap();
        // Wider than the z interval, a little narrower than t with floor(df).
        assert!(half > 1.96 * se && half < t975(24) * se, "{half}");
    }
}
