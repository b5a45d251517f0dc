//! What every estimator here rests on: Student's t (its 95% quantile, its two-sided p-value),
//! the median, and the variance a correction estimated elsewhere adds to a mean (`Extra`).
//! The overhead, its robust companion, the carry-over fit and the interactions all take
//! these from here, so none of them imports another for its arithmetic.
//!
//! statrs is used for the t distribution only (its exact Mann-Whitney p-value is wrong for
//! small samples; we do not use it).

use statrs::distribution::{ContinuousCDF, StudentsT};

/// The two-sided 95% quantile of Student's t with `df` degrees of freedom.
pub fn t975(df: usize) -> f64 {
    t975_real(df as f64)
}

/// `t975` for a fractional number of degrees of freedom (Welch's, Satterthwaite's).
pub fn t975_real(df: f64) -> f64 {
    t_quantile(0.975, df)
}

/// The `p` quantile of Student's t with `df` degrees of freedom (infinite without any).
pub fn t_quantile(p: f64, df: f64) -> f64 {
    if df.is_nan() || df <= 0.0 {
        return f64::INFINITY;
    }
    StudentsT::new(0.0, 1.0, df)
        .map(|t| t.inverse_cdf(p))
        .unwrap_or(f64::INFINITY)
}

/// Two-sided p-value of an estimate `mean` with standard error `se` against 0, Student's t
/// with `df` degrees of freedom. No spread, no evidence: a zero-variance sample (a
/// sleep-bound query, a counter that cannot move) is never significant.
pub fn two_sided_p(mean: f64, se: f64, df: f64) -> f64 {
    if se == 0.0 || !se.is_finite() {
        return 1.0;
    }
    StudentsT::new(0.0, 1.0, df)
        .map(|t| 2.0 * (1.0 - t.cdf((mean / se).abs())))
        .unwrap_or(1.0)
}

/// A variance added to a mean's (a correction estimated elsewhere), with the degrees of
/// freedom it was estimated on.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Extra {
    /// The variance.
    pub var: f64,
    /// Its degrees of freedom.
    pub df: usize,
    /// The degrees of freedom the correction took from the sample's own spread (its
    /// leverage there): the corrected values were fitted, and vary less than they would.
    pub used: f64,
}

impl Extra {
    /// The standard error of a mean whose own variance is `var` on `df` degrees of freedom
    /// with this added, and the degrees of freedom of the sum: Welch–Satterthwaite's, never
    /// more than the mean's own (with few blocks the correction's variance is itself
    /// uncertain, and the quantile says so; with many it changes nothing).
    pub fn combine(&self, var: f64, df: usize) -> (f64, f64) {
        let own = (df as f64 - self.used).max(1.0);
        let var = var * df as f64 / own;
        let total = var + self.var;
        if self.var <= 0.0 || self.df == 0 {
            return (total.sqrt(), own);
        }
        let denom = var.powi(2) / own + self.var.powi(2) / self.df as f64;
        let dfe = if denom > 0.0 {
            total.powi(2) / denom
        } else {
            own
        };
        (total.sqrt(), dfe.min(own))
    }
}

/// Median (mean of the middle two for even lengths); None when empty.
pub fn median(xs: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_match_tables() {
        assert!((t975(1) - 12.706).abs() < 1e-3);
        assert!((t975(9) - 2.262).abs() < 1e-3);
        assert!((t975(1000) - 1.962).abs() < 1e-3);
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }
}
