//! B/A throughput of two servers (or two runs) with its 95% interval, as the ratio of
//! geometric means: paired by block when both ran interleaved (the t interval of the blocks'
//! log ratios), else unpaired (Welch's interval on the two samples' log throughputs, machine
//! drift between the runs inside it).

use crate::intervals::overhead::{mean_ci, welch_ci};
use crate::results::Estimate;

/// From (A, B) throughputs of the same blocks. None below 2 usable blocks.
pub fn paired(blocks: &[(f64, f64)]) -> Option<Estimate> {
    let logs: Vec<f64> = blocks
        .iter()
        .filter(|(a, b)| *a > 0.0 && *b > 0.0)
        .map(|(a, b)| (b / a).ln())
        .collect();
    mean_ci(&logs).map(exp_interval)
}

/// From the two runs' trial throughputs, unpaired. None below 2 usable trials in either.
pub fn unpaired(a: &[f64], b: &[f64]) -> Option<Estimate> {
    let logs =
        |xs: &[f64]| -> Vec<f64> { xs.iter().filter(|q| **q > 0.0).map(|q| q.ln()).collect() };
    welch_ci(&logs(a), &logs(b)).map(exp_interval)
}

/// A log-scale mean and half-width as a ratio and its interval.
fn exp_interval((mean, half): (f64, f64)) -> Estimate {
    Estimate {
        value: mean.exp(),
        ci95: [(mean - half).exp(), (mean + half).exp()],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_are_geometric_means_with_their_intervals() {
        let r = paired(&[(100.0, 90.0), (200.0, 180.0), (150.0, 135.0)]).unwrap();
        assert!((r.value - 0.9).abs() < 1e-12);
        assert!((r.ci95[0] - 0.9).abs() < 1e-9 && (r.ci95[1] - 0.9).abs() < 1e-9);
        let u = unpaired(&[100.0, 110.0, 90.0], &[50.0, 55.0, 45.0]).unwrap();
        assert!((u.value - 0.5).abs() < 1e-12, "{u:?}");
        assert!(u.ci95[0] < 0.5 && u.ci95[1] > 0.5);
        assert!(paired(&[(1.0, 1.0)]).is_none());
    }
}
