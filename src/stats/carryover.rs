//! Carry-over: a trial may run slower right after a trial with a feature on (a log still being
//! flushed, a cache the feature evicted). With Williams-ordered blocks every variant follows
//! every other equally often, so the effect is estimable: for each paired block,
//! L = ln(qps_variant / qps_baseline) = δ_cell + γ·d, with d = a_variant − a_baseline ∈
//! {−1, 0, 1} and a = 1 when the trial came right after a non-baseline trial. γ is estimated
//! by least squares pooled over every cell (one intercept per cell), reported with its t
//! interval, and each L is corrected by γ̂·d before the cell's interval is made, its
//! variance carrying γ̂'s own: d̄²·se(γ̂)² is added to the variance of the cell's mean.

use super::overhead::t975;

/// A paired block of one cell: its log ratio and its carry-over contrast d.
#[derive(Debug, Clone, Copy)]
pub struct Pair {
    /// ln(qps_variant / qps_baseline).
    pub log_ratio: f64,
    /// a_variant − a_baseline.
    pub d: f64,
}

/// The pooled carry-over estimate.
#[derive(Debug, Clone, Copy)]
pub struct CarryOver {
    /// γ̂, log units (negative: slower after a feature trial).
    pub gamma: f64,
    /// Its standard error.
    pub se: f64,
    /// Its 95% half-width.
    pub half: f64,
}

/// γ̂ pooled over cells; None when no cell has variation in d or there are too few pairs.
pub fn estimate(cells: &[Vec<Pair>]) -> Option<CarryOver> {
    let (mut sxy, mut sxx, mut pairs, mut groups) = (0.0, 0.0, 0usize, 0usize);
    for c in cells.iter().filter(|c| c.len() >= 2) {
        let n = c.len() as f64;
        let dm = c.iter().map(|p| p.d).sum::<f64>() / n;
        let lm = c.iter().map(|p| p.log_ratio).sum::<f64>() / n;
        for p in c {
            sxy += (p.d - dm) * (p.log_ratio - lm);
            sxx += (p.d - dm).powi(2);
        }
        pairs += c.len();
        groups += 1;
    }
    let df = pairs.checked_sub(groups + 1)?;
    if sxx <= 0.0 || df == 0 {
        return None;
    }
    let gamma = sxy / sxx;
    let mut rss = 0.0;
    for c in cells.iter().filter(|c| c.len() >= 2) {
        let n = c.len() as f64;
        let dm = c.iter().map(|p| p.d).sum::<f64>() / n;
        let lm = c.iter().map(|p| p.log_ratio).sum::<f64>() / n;
        for p in c {
            rss += (p.log_ratio - lm - gamma * (p.d - dm)).powi(2);
        }
    }
    let se = (rss / df as f64 / sxx).sqrt();
    Some(CarryOver {
        gamma,
        se,
        half: t975(df) * se,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_planted_carry_over_is_recovered() {
        // L = δ + γ d exactly, γ = −0.05, two cells with different δ.
        let cell = |delta: f64| -> Vec<Pair> {
            [1.0, 0.0, -1.0, 0.0, 1.0, -1.0]
                .iter()
                .map(|&d| Pair {
                    log_ratio: delta - 0.05 * d,
                    d,
                })
                .collect()
        };
        let c = estimate(&[cell(-0.1), cell(-0.3)]).unwrap();
        assert!((c.gamma + 0.05).abs() < 1e-12 && c.half < 1e-9, "{c:?}");
        let flat: Vec<Pair> = (0..5)
            .map(|i| Pair {
                log_ratio: i as f64,
                d: 0.0,
            })
            .collect();
        assert!(
            estimate(&[flat]).is_none(),
            "no variation in d: nothing to tell"
        );
    }
}
