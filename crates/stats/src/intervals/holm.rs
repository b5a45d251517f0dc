//! Multiplicity: an experiment reports many intervals (every variant at every thread count,
//! every factor within every level), and some would exclude 0 by chance. The `significant`
//! flag is decided by Holm's step-down procedure over all of them (Holm 1979): sort the
//! p-values, compare the i-th smallest with α / (m − i), stop at the first that fails.

/// Which of these p-values are significant at family-wise level `alpha`.
pub fn holm(p_values: &[f64], alpha: f64) -> Vec<bool> {
    let m = p_values.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|a, b| p_values[*a].total_cmp(&p_values[*b]));
    let mut out = vec![false; m];
    for (i, &k) in order.iter().enumerate() {
        if p_values[k] <= alpha / (m - i) as f64 {
            out[k] = true;
        } else {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holm_steps_down_and_stops() {
        // m = 4: thresholds 0.0125, 0.0167, 0.025, 0.05.
        assert_eq!(
            holm(&[0.01, 0.04, 0.03, 0.005], 0.05),
            [true, false, false, true]
        );
        assert_eq!(holm(&[0.01, 0.016, 0.024, 0.049], 0.05), [true; 4]);
        assert_eq!(holm(&[0.2], 0.05), [false]);
        assert!(holm(&[], 0.05).is_empty());
    }
}
