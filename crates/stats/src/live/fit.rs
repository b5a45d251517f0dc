//! The pairs' differences regressed on their covariates (ordinary least squares, a handful
//! of terms): the intercept, the difference at no difference in covariates, with Student's
//! t interval on the residuals' degrees of freedom. Covariates the pairs do not vary (or
//! too many for the pairs) are dropped, never extrapolated from.

use super::{Interval, t_interval};

/// The intercept of `y ~ 1 + x` over `(y, x)` rows (every row's `x` the same length), with
/// its 95% interval; `None` below 3 rows. Covariates are dropped from the last while fewer
/// than 4 residual degrees of freedom per term would be left, or while the fit is singular.
pub fn intercept(rows: &[(f64, Vec<f64>)]) -> Option<Interval> {
    let n = rows.len();
    if n < 3 {
        return None;
    }
    let mut k = rows[0].1.len();
    while k > 0 && n < 4 * (k + 1) + 2 {
        k -= 1;
    }
    loop {
        if let Some(i) = ols_intercept(rows, k) {
            return Some(i);
        }
        if k == 0 {
            return None;
        }
        k -= 1;
    }
}

/// The fit with the first `k` covariates; `None` when singular.
fn ols_intercept(rows: &[(f64, Vec<f64>)], k: usize) -> Option<Interval> {
    let n = rows.len();
    let p = k + 1;
    let x = |r: &(f64, Vec<f64>), j: usize| if j == 0 { 1.0 } else { r.1[j - 1] };
    // X'X and X'y.
    let mut xtx = vec![vec![0.0; p]; p];
    let mut xty = vec![0.0; p];
    for r in rows {
        for (a, (row, ty)) in xtx.iter_mut().zip(xty.iter_mut()).enumerate() {
            *ty += x(r, a) * r.0;
            for (b, cell) in row.iter_mut().enumerate() {
                *cell += x(r, a) * x(r, b);
            }
        }
    }
    let inv = invert(xtx)?;
    let beta: Vec<f64> = (0..p)
        .map(|a| (0..p).map(|b| inv[a][b] * xty[b]).sum())
        .collect();
    let rss: f64 = rows
        .iter()
        .map(|r| {
            let fit: f64 = (0..p).map(|j| beta[j] * x(r, j)).sum();
            (r.0 - fit).powi(2)
        })
        .sum();
    let df = n.checked_sub(p).filter(|d| *d > 0)?;
    let sigma2 = rss / df as f64;
    let se = (sigma2 * inv[0][0]).sqrt();
    se.is_finite().then(|| t_interval(beta[0], se, df))
}

/// The inverse of a small symmetric matrix by Gauss–Jordan with partial pivoting; `None`
/// when singular.
fn invert(mut m: Vec<Vec<f64>>) -> Option<Vec<Vec<f64>>> {
    let p = m.len();
    let scale = m
        .iter()
        .flatten()
        .fold(0.0f64, |a, v| a.max(v.abs()))
        .max(1e-300);
    let mut inv: Vec<Vec<f64>> = (0..p)
        .map(|i| (0..p).map(|j| if i == j { 1.0 } else { 0.0 }).collect())
        .collect();
    for c in 0..p {
        let pivot = (c..p).max_by(|&a, &b| m[a][c].abs().total_cmp(&m[b][c].abs()))?;
        if m[pivot][c].abs() < 1e-12 * scale {
            return None;
        }
        m.swap(c, pivot);
        inv.swap(c, pivot);
        let d = m[c][c];
        for j in 0..p {
            m[c][j] /= d;
            inv[c][j] /= d;
        }
        for r in 0..p {
            if r != c {
                let f = m[r][c];
                for j in 0..p {
                    m[r][j] -= f * m[c][j];
                    inv[r][j] -= f * inv[c][j];
                }
            }
        }
    }
    Some(inv)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_intercept_of_an_exact_line_is_found_and_a_flat_covariate_dropped() {
        let rows: Vec<(f64, Vec<f64>)> = (0..12)
            .map(|i| {
                let x = i as f64 - 5.0;
                (3.0 + 2.0 * x + if i % 2 == 0 { 0.1 } else { -0.1 }, vec![x])
            })
            .collect();
        let i = intercept(&rows).unwrap();
        assert!((i.value - 3.0).abs() < 0.1, "{i:?}");
        assert!(i.covers(3.0) && i.df == 10);
        // A covariate that never varies is the intercept's twin: dropped, not a panic.
        let flat: Vec<(f64, Vec<f64>)> = rows.iter().map(|r| (r.0, vec![1.0])).collect();
        let j = intercept(&flat).unwrap();
        assert_eq!(j.df, 11);
    }

    #[test]
    fn few_pairs_give_no_interval() {
        assert!(intercept(&[(1.0, vec![]), (2.0, vec![])]).is_none());
    }
}
