//! A robust companion to the mean of the paired log ratios, and outlier blocks.
//!
//! The companion dbtax reports is the 20% trimmed mean with Yuen's interval (the mean of the
//! middle 60% of the blocks; its standard error from the winsorized variance, t with h − 1
//! degrees of freedom, h the blocks kept; Wilcox, Introduction to Robust Estimation, §4.3).
//! The Hodges–Lehmann estimate (the median of the Walsh averages (x_i + x_j)/2, i ≤ j, with
//! the signed-rank interval of Hollander & Wolfe, §3.2) is kept to compare with: on the
//! simulated server both cover as claimed, and the trimmed mean's interval is the narrower
//! under heavy tails and stalls (`cargo test --test statistics robust -- --nocapture`
//! prints the widths), so it is the one reported (`robust_method`). Both give a p-value, so
//! the companion can go through the same Holm family as the mean.
//!
//! Outliers: the modified z-score of Iglewicz & Hoaglin (|0.6745 (x − median) / MAD| > 3.5).
//! The exact null distribution of the signed-rank statistic is computed here, not taken from
//! statrs.

use crate::intervals::sample::{Extra, median, t975_real, two_sided_p};

/// The name results.json gives the robust companion.
pub const METHOD: &str = "trimmed-mean-20";

/// A robust location estimate with its 95% interval and the p-value of "0", log units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Located {
    /// The estimate.
    pub est: f64,
    /// Lower end of the 95% interval.
    pub lo: f64,
    /// Upper end.
    pub hi: f64,
    /// Two-sided p-value of a location of 0.
    pub p_value: f64,
}

/// The 20% trimmed mean with Yuen's interval; `extra` is added to the square of its
/// standard error (a correction estimated elsewhere, as for the mean). None below 5 values:
/// with fewer nothing is trimmed and it is the mean itself.
pub fn trimmed_mean(xs: &[f64], extra: Extra) -> Option<Located> {
    let n = xs.len();
    let g = n / 5;
    if g == 0 {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let h = n - 2 * g;
    let est = v[g..n - g].iter().sum::<f64>() / h as f64;
    let wins: Vec<f64> = v.iter().map(|x| x.clamp(v[g], v[n - g - 1])).collect();
    let wm = wins.iter().sum::<f64>() / n as f64;
    let sw2 = wins.iter().map(|x| (x - wm).powi(2)).sum::<f64>() / (n - 1) as f64;
    let (se, df) = extra.combine((n - 1) as f64 * sw2 / (h * (h - 1)) as f64, h - 1);
    let half = t975_real(df) * se;
    Some(Located {
        est,
        lo: est - half,
        hi: est + half,
        p_value: two_sided_p(est, se, df),
    })
}

/// The Hodges–Lehmann estimate with its signed-rank interval and p-value.
pub fn hodges_lehmann_test(xs: &[f64]) -> Option<Located> {
    let (est, lo, hi) = hodges_lehmann(xs)?;
    Some(Located {
        est,
        lo,
        hi,
        p_value: signed_rank_p(xs),
    })
}

/// The exact two-sided p-value of Wilcoxon's signed-rank test of a location of 0 (zeros
/// dropped; the values are continuous, ties are ranked in the order they sort).
fn signed_rank_p(xs: &[f64]) -> f64 {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| *x != 0.0).collect();
    let n = v.len();
    if n == 0 {
        return 1.0;
    }
    v.sort_by(|a, b| a.abs().total_cmp(&b.abs()));
    let w: usize = v
        .iter()
        .enumerate()
        .filter(|(_, x)| **x > 0.0)
        .map(|(i, _)| i + 1)
        .sum();
    let counts = rank_sum_counts(n);
    let total: f64 = counts.iter().sum();
    let below: f64 = counts[..=w].iter().sum::<f64>() / total;
    let above: f64 = counts[w..].iter().sum::<f64>() / total;
    (2.0 * below.min(above)).min(1.0)
}

/// counts[w] = the number of the 2ⁿ sign patterns of ranks 1..=n whose positive ranks sum
/// to w.
fn rank_sum_counts(n: usize) -> Vec<f64> {
    let max = n * (n + 1) / 2;
    let mut counts = vec![0f64; max + 1];
    counts[0] = 1.0;
    for r in 1..=n {
        for w in (r..=max).rev() {
            counts[w] += counts[w - r];
        }
    }
    counts
}

/// The Hodges–Lehmann estimate and its interval of at least 95% coverage. None below 6
/// values: fewer cannot give a two-sided 95% signed-rank interval.
pub fn hodges_lehmann(xs: &[f64]) -> Option<(f64, f64, f64)> {
    let n = xs.len();
    if n < 6 {
        return None;
    }
    let mut walsh = Vec::with_capacity(n * (n + 1) / 2);
    for i in 0..n {
        for j in i..n {
            walsh.push((xs[i] + xs[j]) / 2.0);
        }
    }
    walsh.sort_by(|a, b| a.total_cmp(b));
    let k = signed_rank_critical(n);
    let est = median(&walsh)?;
    Some((est, walsh[k], walsh[walsh.len() - 1 - k]))
}

/// With d the largest integer such that P(W ≤ d − 1) ≤ 0.025 under the null (W the
/// signed-rank statistic of n values), the interval from the d-th smallest to the d-th
/// largest Walsh average has coverage ≥ 95%. Returns d − 1, the 0-based index.
fn signed_rank_critical(n: usize) -> usize {
    let counts = rank_sum_counts(n);
    let total = 2f64.powi(n as i32);
    let mut cum = 0.0;
    for (j, c) in counts.iter().enumerate() {
        if (cum + c) / total > 0.025 {
            // P(W ≤ j − 1) ≤ 0.025 < P(W ≤ j): d = j.
            return j.saturating_sub(1);
        }
        cum += c;
    }
    0
}

/// Indices of the values whose modified z-score exceeds 3.5 (none when the MAD is 0).
pub fn outliers(xs: &[f64]) -> Vec<usize> {
    let Some(m) = median(xs) else {
        return vec![];
    };
    let deviations: Vec<f64> = xs.iter().map(|x| (x - m).abs()).collect();
    let Some(mad) = median(&deviations) else {
        return vec![];
    };
    if mad <= 0.0 {
        return vec![];
    }
    xs.iter()
        .enumerate()
        .filter(|(_, x)| (0.6745 * (*x - m) / mad).abs() > 3.5)
        .map(|(i, _)| i)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn critical_values_match_the_tables() {
        // Two-sided 95% signed-rank intervals for n = 6..10 run from the d-th smallest to the
        // d-th largest Walsh average with d = 1, 3, 4, 6, 9 (Hollander & Wolfe, table A.4).
        for (n, d) in [(6, 1), (7, 3), (8, 4), (9, 6), (10, 9)] {
            assert_eq!(signed_rank_critical(n), d - 1, "n = {n}");
        }
    }

    #[test]
    fn hodges_lehmann_is_the_center_and_ignores_one_wild_value() {
        let xs = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 100.0];
        let (est, lo, hi) = hodges_lehmann(&xs).unwrap();
        assert!((4.0..=5.5).contains(&est), "{est}");
        assert!(lo < est && est < hi);
        assert_eq!(outliers(&xs), vec![7]);
        assert!(hodges_lehmann(&xs[..5]).is_none());
    }

    #[test]
    fn the_trimmed_mean_matches_yuens_example_and_drops_the_wild_value() {
        // n = 10, g = 2: the mean of the middle six; winsorized values 3,3,3,4,5,6,7,8,8,8.
        let xs = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 100.0];
        let t = trimmed_mean(&xs, Extra::default()).unwrap();
        assert!((t.est - 5.5).abs() < 1e-12, "{t:?}");
        let w = [3.0, 3.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 8.0, 8.0];
        let wm = w.iter().sum::<f64>() / 10.0;
        let sw2 = w.iter().map(|x| (x - wm).powi(2)).sum::<f64>() / 9.0;
        let se = (9.0 * sw2 / (6.0 * 5.0)).sqrt();
        assert!((t.hi - t.est - crate::intervals::sample::t975(5) * se).abs() < 1e-12);
        // t = 5.5 / 1.19 = 4.6 on 5 degrees of freedom.
        assert!((0.004..0.008).contains(&t.p_value), "{t:?}");
        assert!(
            trimmed_mean(&xs[..4], Extra::default()).is_none(),
            "nothing to trim"
        );
    }

    #[test]
    fn signed_rank_p_values_match_the_tables() {
        // n = 8, all positive: W = 36, p = 2/256.
        let xs = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0];
        assert!((signed_rank_p(&xs) - 2.0 / 256.0).abs() < 1e-12);
        // W = 1 + 4 = 5, the centre of its distribution: p = 1.
        assert_eq!(signed_rank_p(&[1.0, -2.0, -3.0, 4.0]), 1.0);
    }
}
