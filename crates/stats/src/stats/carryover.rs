//! Carry-over: a trial may run slower right after a trial with a feature on (a log still being
//! flushed, a cache the feature evicted), and sometimes the trial after that too. With
//! Williams-ordered blocks every variant follows every other equally often, so the effects
//! are estimable. For each paired block of a cell,
//! L = ln(qps_variant / qps_baseline) = δ_cell + Σ_k γ_k·d_k, with one term per preceding
//! variant j ≠ baseline (x = 1 when the trial came right after a trial of j) and, when the
//! design can tell it apart, one term for a feature trial two before (lag 2); d_k is the
//! variant's x_k minus its baseline's. The γ are estimated by least squares pooled over every
//! cell (one intercept per cell), and each L is corrected by Σ γ̂_k·d_k before the cell's
//! interval is made, its variance carrying the estimate's own: d̄ᵀ·Cov(γ̂)·d̄ is added to the
//! variance of the cell's mean.
//!
//! With two variants a lag-2 term is the same column as the intercept and lag 1 in every
//! block, whatever the order: no model can estimate it, and only a warm-up long enough to
//! let the transient pass removes it (the runner's settle rule).

use crate::intervals::sample::t975;

/// A paired block of one cell: its log ratio and its carry-over contrasts, one per term.
#[derive(Debug, Clone, PartialEq)]
pub struct Pair {
    /// ln(qps_variant / qps_baseline).
    pub log_ratio: f64,
    /// x_variant − x_baseline for each term of the model.
    pub d: Vec<f64>,
}

/// The pooled carry-over estimate over the terms that were kept.
#[derive(Debug, Clone, PartialEq)]
pub struct Fit {
    /// Which of the terms asked for were estimated (indices into `Pair::d`).
    pub terms: Vec<usize>,
    /// γ̂ per kept term, log units (negative: slower after).
    pub gamma: Vec<f64>,
    /// Their covariance.
    pub cov: Vec<Vec<f64>>,
    /// Residual degrees of freedom.
    pub df: usize,
    /// Each cell column's coefficient (its difference from its point's reference); None
    /// for a column no block let the fit see.
    pub cells: Vec<Option<CellFit>>,
}

/// A cell's coefficient in the fit: the cost, with the carry-overs taken out, in log units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CellFit {
    /// ln(qps_cell / qps_reference).
    pub delta: f64,
    /// Its variance, each load point's trials weighted by their own residual variance (the
    /// noise at 1 thread is not the noise at 64): a sandwich over the points.
    pub var: f64,
    /// The residual degrees of freedom of the cell's own point (its share of the terms'
    /// taken off): what its interval's quantile uses.
    pub df: f64,
}

impl Fit {
    /// Σ γ̂_k·d_k over the kept terms: what is taken off a pair's log ratio.
    pub fn correction(&self, d: &[f64]) -> f64 {
        self.terms
            .iter()
            .zip(&self.gamma)
            .map(|(&k, g)| g * d.get(k).copied().unwrap_or(0.0))
            .sum()
    }

    /// d̄ᵀ·Cov·d̄ with the fit's degrees of freedom: what the correction adds to the
    /// variance of a cell's mean, d̄ its mean contrasts.
    pub fn extra(&self, d_mean: &[f64]) -> crate::intervals::sample::Extra {
        crate::intervals::sample::Extra {
            var: self.extra_variance(d_mean),
            df: self.df,
            used: 0.0,
        }
    }

    /// The share of the fit's information on its terms that one cell's pairs hold,
    /// trace(S_cell · S_all⁻¹), S the sums of squares and products of the pairs' centred
    /// contrasts (`spread`), `inv` = S_all⁻¹: the degrees of freedom the correction takes
    /// from that cell.
    pub fn leverage(&self, cell: &[Pair], inv: &[Vec<f64>]) -> f64 {
        let s = spread(cell, &self.terms);
        let k = self.terms.len();
        (0..k)
            .map(|i| (0..k).map(|j| s[i][j] * inv[j][i]).sum::<f64>())
            .sum::<f64>()
            .max(0.0)
    }

    /// d̄ᵀ·Cov·d̄. A term `d_mean` lacks (no pair was kept: no contrast) counts as 0: a cell
    /// with no kept block has nothing to correct.
    pub fn extra_variance(&self, d_mean: &[f64]) -> f64 {
        let v: Vec<f64> = self
            .terms
            .iter()
            .map(|&k| d_mean.get(k).copied().unwrap_or(0.0))
            .collect();
        let mut s = 0.0;
        for (i, vi) in v.iter().enumerate() {
            for (j, vj) in v.iter().enumerate() {
                s += vi * self.cov[i][j] * vj;
            }
        }
        s.max(0.0)
    }

    /// γ̂ of term `k` (an index into `Pair::d`) and its 95% half-width; None when dropped.
    pub fn term(&self, k: usize) -> Option<(f64, f64)> {
        let i = self.terms.iter().position(|&t| t == k)?;
        Some((self.gamma[i], t975(self.df) * self.cov[i][i].sqrt()))
    }
}

/// One measured trial, for the fit: its block (`group`, unique over load points), its cell's
/// column (None: the reference cell of its load point, the baseline), ln(qps), and its value
/// of each term.
#[derive(Debug, Clone, PartialEq)]
pub struct Obs {
    /// The block it ran in (a number unique over load points).
    pub group: usize,
    /// Its load point (whose trials share a residual variance).
    pub point: usize,
    /// Its cell's column among the non-reference cells; None for the reference.
    pub cell: Option<usize>,
    /// ln(qps).
    pub y: f64,
    /// Its value of each term of the model.
    pub x: Vec<f64>,
}

/// The least-squares fit of the terms in `keep` (indices into `Obs::x`) at the level of
/// trials: ln(qps) = block + cell + Σ γ_k·x_k + ε, the blocks absorbed by centring within
/// each block, one column per non-reference cell (`cells` of them). Fitting trials rather
/// than paired ratios keeps the variance right: the pairs of one block share their
/// baseline's trial, and with it its noise and its carry-over. None when the design cannot
/// tell the terms apart, or leaves fewer than 2 degrees of freedom.
pub fn estimate(obs: &[Obs], cells: usize, keep: &[usize]) -> Option<Fit> {
    let k = keep.len();
    if k == 0 {
        return None;
    }
    let width = cells + k;
    // Column j of a trial's row: its cell's indicator, then its value of each kept term.
    let value = |o: &Obs, j: usize| -> f64 {
        if j < cells {
            f64::from(u8::from(o.cell == Some(j)))
        } else {
            o.x[keep[j - cells]]
        }
    };
    let mut groups: std::collections::BTreeMap<usize, Vec<&Obs>> = Default::default();
    for o in obs {
        groups.entry(o.group).or_default().push(o);
    }
    let mut xtx = vec![vec![0.0; width]; width];
    let mut xty = vec![0.0; width];
    // Each centred row keeps only the columns its block touches (its cells and the terms):
    // the others are zero after centring, and a sweep has many cells.
    let mut rows: Vec<(f64, Vec<(usize, f64)>)> = vec![];
    let mut row_points: Vec<usize> = vec![];
    let mut groups_used = 0;
    let mut groups_at: std::collections::BTreeMap<usize, usize> = Default::default();
    for members in groups.values().filter(|m| m.len() >= 2) {
        groups_used += 1;
        *groups_at.entry(members[0].point).or_default() += 1;
        let n = members.len() as f64;
        let mut touched: Vec<usize> = members.iter().filter_map(|o| o.cell).collect();
        touched.extend(cells..width);
        touched.sort_unstable();
        touched.dedup();
        let ym = members.iter().map(|o| o.y).sum::<f64>() / n;
        let xm: Vec<f64> = touched
            .iter()
            .map(|&j| members.iter().map(|o| value(o, j)).sum::<f64>() / n)
            .collect();
        for o in members {
            let x: Vec<(usize, f64)> = touched
                .iter()
                .zip(&xm)
                .map(|(&j, m)| (j, value(o, j) - m))
                .collect();
            let y = o.y - ym;
            for &(i, xi) in &x {
                xty[i] += xi * y;
                for &(j, xj) in &x {
                    xtx[i][j] += xi * xj;
                }
            }
            rows.push((y, x));
            row_points.push(o.point);
        }
    }
    // Cells that never ran beside another trial have no column to speak of.
    let live: Vec<usize> = (0..width).filter(|&j| xtx[j][j] > 0.0).collect();
    if live.iter().filter(|&&j| j >= cells).count() < k {
        return None;
    }
    let sub: Vec<Vec<f64>> = live
        .iter()
        .map(|&i| live.iter().map(|&j| xtx[i][j]).collect())
        .collect();
    let inv = invert(&sub)?;
    let beta: Vec<f64> = (0..live.len())
        .map(|i| (0..live.len()).map(|j| inv[i][j] * xty[live[j]]).sum())
        .collect();
    let df = rows.len().checked_sub(groups_used + live.len())?;
    if df < 2 {
        return None;
    }
    let mut beta_at = vec![0.0; width];
    for (&j, &b) in live.iter().zip(&beta) {
        beta_at[j] = b;
    }
    let residual = |(y, x): &(f64, Vec<(usize, f64)>)| {
        let fit: f64 = x.iter().map(|&(j, v)| v * beta_at[j]).sum();
        y - fit
    };
    let rss: f64 = rows.iter().map(|r| residual(r).powi(2)).sum();
    let s2 = rss / df as f64;
    let at = live.len() - k;
    // Each point's residual variance, on its rows less its blocks, its own cell columns
    // and its share of the terms.
    let mut by_point: std::collections::BTreeMap<usize, (f64, usize)> = Default::default();
    for (r, &p) in rows.iter().zip(&row_points) {
        let e = by_point.entry(p).or_default();
        e.0 += residual(r).powi(2);
        e.1 += 1;
    }
    let cells_at = |p: usize| {
        let mut seen: Vec<usize> = obs
            .iter()
            .filter(|o| o.point == p)
            .filter_map(|o| o.cell)
            .collect();
        seen.sort_unstable();
        seen.dedup();
        seen.len()
    };
    let point_df: std::collections::BTreeMap<usize, f64> = by_point
        .iter()
        .map(|(&p, &(_, n))| {
            let share = k as f64 * n as f64 / rows.len() as f64;
            let used = groups_at.get(&p).copied().unwrap_or(0) + cells_at(p);
            (p, (n as f64 - used as f64 - share).max(1.0))
        })
        .collect();
    let point_s2 = |p: usize| by_point.get(&p).map_or(s2, |&(rss, _)| rss / point_df[&p]);
    // The sandwich: inv · (Σ_p s²_p · X_pᵀX_p) · inv, for the cells' coefficients.
    let cell_of = |c: usize| {
        let i = live.iter().position(|&j| j == c)?;
        let mut w = vec![0.0; width];
        for (l, &j) in live.iter().enumerate() {
            w[j] = inv[i][l];
        }
        let mut var = 0.0;
        for ((_, x), &p) in rows.iter().zip(&row_points) {
            let a: f64 = x.iter().map(|&(j, v)| v * w[j]).sum();
            var += a * a * point_s2(p);
        }
        let p = obs.iter().find(|o| o.cell == Some(c))?.point;
        Some(CellFit {
            delta: beta[i],
            var,
            df: *point_df.get(&p)?,
        })
    };
    Some(Fit {
        cells: (0..cells).map(cell_of).collect(),
        terms: keep.to_vec(),
        gamma: beta[at..].to_vec(),
        cov: (at..live.len())
            .map(|i| (at..live.len()).map(|j| inv[i][j] * s2).collect())
            .collect(),
        df,
    })
}

/// Σ (d − d̄)(d − d̄)ᵀ over `pairs`, for the terms `keep`.
pub fn spread(pairs: &[Pair], keep: &[usize]) -> Vec<Vec<f64>> {
    let k = keep.len();
    let mut s = vec![vec![0.0; k]; k];
    if pairs.is_empty() {
        return s;
    }
    let n = pairs.len() as f64;
    let mean: Vec<f64> = keep
        .iter()
        .map(|&t| pairs.iter().map(|p| p.d[t]).sum::<f64>() / n)
        .collect();
    for p in pairs {
        for i in 0..k {
            for j in 0..k {
                s[i][j] += (p.d[keep[i]] - mean[i]) * (p.d[keep[j]] - mean[j]);
            }
        }
    }
    s
}

/// The inverse of a small symmetric matrix (Gauss–Jordan, partial pivoting); None when it
/// is singular to working precision (a column the others determine).
pub fn invert(a: &[Vec<f64>]) -> Option<Vec<Vec<f64>>> {
    let n = a.len();
    let scale = (0..n).map(|i| a[i][i].abs()).fold(0.0, f64::max);
    if scale <= 0.0 {
        return None;
    }
    let mut m: Vec<Vec<f64>> = a
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut row = r.clone();
            row.extend((0..n).map(|j| if i == j { 1.0 } else { 0.0 }));
            row
        })
        .collect();
    for col in 0..n {
        let pivot = (col..n).max_by(|&x, &y| m[x][col].abs().total_cmp(&m[y][col].abs()))?;
        if m[pivot][col].abs() <= 1e-9 * scale {
            return None;
        }
        m.swap(col, pivot);
        let p = m[col][col];
        for v in m[col].iter_mut() {
            *v /= p;
        }
        for r in 0..n {
            if r != col {
                let f = m[r][col];
                if f != 0.0 {
                    let pivot_row = m[col].clone();
                    for (v, pv) in m[r].iter_mut().zip(pivot_row) {
                        *v -= f * pv;
                    }
                }
            }
        }
    }
    Some(m.into_iter().map(|r| r[n..].to_vec()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks of two cells (reference and cell 0) whose trials follow `x`, with
    /// y = block + δ·[cell] + Σ γ·x exactly.
    fn planted(xs: &[[[f64; 2]; 2]], gamma: [f64; 2]) -> Vec<Obs> {
        let mut out = vec![];
        for (b, block) in xs.iter().enumerate() {
            for (i, x) in block.iter().enumerate() {
                let cell = (i == 1).then_some(0);
                out.push(Obs {
                    group: b,
                    point: 0,
                    cell,
                    y: 0.3 * b as f64 - 0.1 * i as f64 + gamma[0] * x[0] + gamma[1] * x[1],
                    x: x.to_vec(),
                });
            }
        }
        out
    }

    #[test]
    fn planted_carry_overs_are_recovered_term_by_term() {
        let xs = [
            [[1.0, 0.0], [0.0, 1.0]],
            [[0.0, 0.0], [1.0, 0.0]],
            [[0.0, 1.0], [0.0, 0.0]],
            [[1.0, 1.0], [0.0, 0.0]],
            [[0.0, 0.0], [1.0, 1.0]],
            [[1.0, 0.0], [1.0, 1.0]],
            [[0.0, 1.0], [1.0, 0.0]],
        ];
        let f = estimate(&planted(&xs, [-0.05, -0.02]), 1, &[0, 1]).unwrap();
        assert!((f.gamma[0] + 0.05).abs() < 1e-12, "{f:?}");
        assert!((f.gamma[1] + 0.02).abs() < 1e-12, "{f:?}");
        let (g, half) = f.term(1).unwrap();
        assert!((g + 0.02).abs() < 1e-12 && half < 1e-9);
        assert!((f.correction(&[1.0, -1.0]) + 0.03).abs() < 1e-12);
    }

    #[test]
    fn a_term_the_design_determines_is_refused() {
        // Two variants: in each block the contrasts of lag 2 are −1 − 2·(those of lag 1), so
        // lag 2 is the intercept and lag 1 again.
        let xs = [
            [[1.0, 0.0], [0.0, 1.0]],
            [[0.0, 1.0], [1.0, 0.0]],
            [[1.0, 0.0], [0.0, 1.0]],
            [[0.0, 1.0], [1.0, 0.0]],
            [[1.0, 0.0], [0.0, 1.0]],
        ];
        let obs = planted(&xs, [-0.05, 0.0]);
        assert!(estimate(&obs, 1, &[0, 1]).is_none());
        let lag1 = estimate(&obs, 1, &[0]).unwrap();
        assert!((lag1.gamma[0] + 0.05).abs() < 1e-12, "{lag1:?}");
        let flat: Vec<Obs> = obs
            .iter()
            .map(|o| Obs {
                x: vec![0.0, 0.0],
                ..o.clone()
            })
            .collect();
        assert!(estimate(&flat, 1, &[0]).is_none(), "no variation in x");
    }
}
