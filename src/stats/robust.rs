//! A robust companion to the mean of the paired log ratios: the Hodges–Lehmann estimate (the
//! median of the Walsh averages (x_i + x_j)/2, i ≤ j) with its distribution-free interval
//! from the Wilcoxon signed-rank statistic (Hollander & Wolfe, Nonparametric Statistical
//! Methods, §3.2), and outlier blocks by the modified z-score of Iglewicz & Hoaglin (|0.6745
//! (x − median) / MAD| > 3.5). The exact null distribution of the signed-rank statistic is
//! computed here, not taken from statrs.

use super::overhead::median;

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
    // counts[w] = number of sign patterns with rank sum w.
    let max = n * (n + 1) / 2;
    let mut counts = vec![0f64; max + 1];
    counts[0] = 1.0;
    for r in 1..=n {
        for w in (r..=max).rev() {
            counts[w] += counts[w - r];
        }
    }
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
}
