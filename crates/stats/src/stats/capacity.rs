//! Capacity at a latency objective, from measured blocks at two fixed rates that bracket it.
//!
//! The reciprocal of a queue's latency quantile falls nearly linearly with the rate as the
//! queue nears saturation (M/M/c's waiting tail is exponential with rate cμ − λ), so the
//! capacity is where the parabola through the mean reciprocals at three rates meets
//! 1/objective (a line through two was 0.5% low on an M/M/4 queue at ±6%: its curvature). Its
//! interval is a t interval over blocks of each block's jackknife contribution (a block's
//! trials ran together, so they leave together). A feature's cost is ln(capacity with it / without) the same way, each block's
//! two contributions taken together: a drift that slows the whole machine moves both alike.

use crate::intervals::sample::{t975, two_sided_p};

/// Measured blocks: each block's number and its quantile (ms) at each of the bracket's rates.
pub type Blocks = Vec<(u32, Vec<f64>)>;

/// One variant's measured blocks: in each, the quantile (ms) at each of the bracket's rates.
#[derive(Debug, Clone, PartialEq)]
pub struct Bracket {
    /// The rates, events per second, increasing: two (a line) or three (a parabola).
    pub rates: Vec<f64>,
    /// Per block (its number), the quantile at each rate, ms.
    pub blocks: Blocks,
}

/// The crossing and each block's linearized contribution to it.
#[derive(Debug, Clone, PartialEq)]
pub struct Crossing {
    /// The capacity, events per second.
    pub rate: f64,
    /// Per block (its number): its contribution (the influence on `rate`).
    pub influence: Vec<(u32, f64)>,
}

/// Where the curve through `(rates[k], u[k])` (a line through two points, a parabola
/// through three) meets `s`, falling: the root nearest the middle rate, within one bracket
/// width of either end. None when the curve does not fall there.
fn root(rates: &[f64], u: &[f64], s: f64) -> Option<f64> {
    match (rates, u) {
        ([a, b], [ua, ub]) => {
            let d = ua - ub;
            let w = b - a;
            let at = a + (ua - s) / d * w;
            (d > 0.0 && at > a - w && at < b + w).then_some(at)
        }
        ([a, m, b], [ua, um, ub]) => {
            // Newton's form around m: u(x) = um + p·(x − m) + q·(x − m)².
            let (l, r) = (m - a, b - m);
            let p = ((ub - um) / r * l + (um - ua) / l * r) / (l + r);
            let q = ((ub - um) / r - (um - ua) / l) / (l + r);
            if p >= 0.0 {
                return root(&[*a, *b], &[*ua, *ub], s);
            }
            let c = um - s;
            let x = if q.abs() < 1e-12 * p.abs() / (l + r) {
                -c / p
            } else {
                let disc = p * p - 4.0 * q * c;
                if disc < 0.0 {
                    return root(&[*a, *b], &[*ua, *ub], s);
                }
                // The root on the falling side nearest m (the stable form of the formula).
                let sq = disc.sqrt();
                let t = -0.5 * (p - sq);
                let cands = [t / q, c / t];
                *cands
                    .iter()
                    .filter(|x| x.is_finite())
                    .min_by(|x, y| x.abs().total_cmp(&y.abs()))?
            };
            let w = b - a;
            let at = m + x;
            (at > a - w && at < b + w).then_some(at)
        }
        _ => None,
    }
}

/// The rate at which the curve through the mean reciprocal quantiles meets
/// `1/objective_ms`, with each block's influence (the jackknife's); None with no blocks, or when the latency did not rise
/// across the bracket (no curve to follow).
pub fn crossing(b: &Bracket, objective_ms: f64) -> Option<Crossing> {
    let n = b.blocks.len();
    let k = b.rates.len();
    if n == 0 || !(2..=3).contains(&k) {
        return None;
    }
    let s = 1.0 / objective_ms;
    let u: Vec<Vec<f64>> = b
        .blocks
        .iter()
        .map(|(_, q)| q.iter().map(|x| 1.0 / x.max(1e-6)).collect())
        .collect();
    let mean: Vec<f64> = (0..k)
        .map(|j| u.iter().map(|x| x[j]).sum::<f64>() / n as f64)
        .collect();
    let rate = root(&b.rates, &mean, s)?;
    // Each block's influence, by the jackknife: (n − 1)·(estimate − estimate without it).
    // A parabola's root is not linear in the means, and the delta method's variance came
    // out low (z sd 1.18 for t(19)'s 1.06 over 400 simulated runs); the jackknife's follows
    // the curvature.
    let influence = if n < 2 {
        vec![(b.blocks[0].0, 0.0)]
    } else {
        b.blocks
            .iter()
            .zip(&u)
            .map(|((block, _), x)| {
                let without: Vec<f64> = (0..k)
                    .map(|j| (mean[j] * n as f64 - x[j]) / (n - 1) as f64)
                    .collect();
                let r = root(&b.rates, &without, s).unwrap_or(rate);
                (*block, (n - 1) as f64 * (rate - r))
            })
            .collect()
    };
    Some(Crossing { rate, influence })
}

/// The mean, its standard error and the count of a block's values.
fn spread(values: &[f64]) -> (f64, f64, usize) {
    let n = values.len();
    let mean = values.iter().sum::<f64>() / n.max(1) as f64;
    if n < 2 {
        return (mean, f64::NAN, n);
    }
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    (mean, (var / n as f64).sqrt(), n)
}

/// The fewest measured blocks an interval is given for.
pub const MIN_BLOCKS: usize = 3;

/// How an interval's half-width is taken from its standard error: Student's t over the
/// blocks (dbtax), or the normal's 1.96 (kept so that the statistics suite can show what it
/// gets wrong with few blocks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Width {
    /// t with n − 1 degrees of freedom.
    #[default]
    T,
    /// 1.96 whatever the count.
    Z,
}

fn multiplier(width: Width, n: usize) -> f64 {
    match width {
        Width::T => t975(n - 1),
        Width::Z => 1.96,
    }
}

/// The capacity's 95% interval: None with fewer than `MIN_BLOCKS` blocks.
pub fn interval(c: &Crossing, width: Width) -> Option<[f64; 2]> {
    let values: Vec<f64> = c.influence.iter().map(|(_, v)| *v).collect();
    let (_, se, n) = spread(&values);
    if n < MIN_BLOCKS || !se.is_finite() {
        return None;
    }
    let h = multiplier(width, n) * se;
    Some([c.rate - h, c.rate + h])
}

/// A feature's cost of capacity against its baseline, over the blocks both measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Cost {
    /// The change of the capacity, %: negative when the feature lowers it.
    pub pct: f64,
    /// Its 95% interval, %.
    pub ci95: [f64; 2],
    /// Two-sided p-value of no change.
    pub p: f64,
    /// Blocks paired.
    pub blocks: usize,
}

/// ln(feature / baseline) with each shared block's contributions taken together; None with
/// fewer than `MIN_BLOCKS` shared blocks.
pub fn cost(feature: &Crossing, baseline: &Crossing, width: Width) -> Option<Cost> {
    if feature.rate <= 0.0 || baseline.rate <= 0.0 {
        return None;
    }
    let l = (feature.rate / baseline.rate).ln();
    let values: Vec<f64> = feature
        .influence
        .iter()
        .filter_map(|(b, f)| {
            let (_, z0) = baseline.influence.iter().find(|(b0, _)| b0 == b)?;
            Some(f / feature.rate - z0 / baseline.rate)
        })
        .collect();
    let (_, se, n) = spread(&values);
    if n < MIN_BLOCKS || !se.is_finite() {
        return None;
    }
    let h = multiplier(width, n) * se;
    let pct = |x: f64| 100.0 * (x.exp() - 1.0);
    Some(Cost {
        pct: pct(l),
        ci95: [pct(l - h), pct(l + h)],
        p: two_sided_p(l, se, (n - 1) as f64),
        blocks: n,
    })
}

/// A trial that stalled: its quantile far above the same variant's at the same rate in the
/// other blocks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stall {
    /// The block it ran in.
    pub block: u32,
    /// Its variant (the index given).
    pub variant: usize,
    /// Which of the bracket's rates.
    pub rate: usize,
    /// Its quantile over the median of the other blocks' at that rate.
    pub times: f64,
}

/// The fewest blocks a stall is looked for in (the trial and two others at its rate).
pub const STALL_BLOCKS: usize = 3;
/// A residual over this many scales is a stall. Iglewicz and Hoaglin's 3.5 flags normal noise in 14% of
/// six-block runs (the check is made after every block, from the third on); 6 in 0.5%,
/// and a stall that matters (a trial's server slowed past its rate) is ten or more.
pub const STALL_SCALES: f64 = 6.0;

/// Trials that stalled, among each variant's measured blocks (`(variant, blocks)`): a trial's
/// ln quantile over the median of its variant's other blocks at the same rate is its
/// residual; the scale is 1.4826 × the median |residual| over every trial given (pooled: a
/// cell of three blocks has no spread of its own to speak of), at least 1%; a residual over
/// `STALL_SCALES` scales is a stall. Only upwards: a stall slows.
/// A variant with fewer than `STALL_BLOCKS` blocks is neither judged nor counted in the scale.
pub fn stalls(variants: &[(usize, &Blocks)]) -> Vec<Stall> {
    let mut residuals: Vec<(u32, usize, usize, f64)> = vec![];
    for (v, blocks) in variants {
        if blocks.len() < STALL_BLOCKS {
            continue;
        }
        let k = blocks.iter().map(|(_, q)| q.len()).min().unwrap_or(0);
        for j in 0..k {
            let logs: Vec<f64> = blocks.iter().map(|(_, q)| q[j].max(1e-9).ln()).collect();
            for (i, (b, _)) in blocks.iter().enumerate() {
                let others: Vec<f64> = logs
                    .iter()
                    .enumerate()
                    .filter(|(o, _)| *o != i)
                    .map(|(_, x)| *x)
                    .collect();
                if let Some(m) = crate::intervals::sample::median(&others) {
                    residuals.push((*b, *v, j, logs[i] - m));
                }
            }
        }
    }
    let abs: Vec<f64> = residuals.iter().map(|r| r.3.abs()).collect();
    let Some(mad) = crate::intervals::sample::median(&abs) else {
        return vec![];
    };
    let scale = (1.4826 * mad).max(0.01);
    residuals
        .into_iter()
        .filter(|r| r.3 > STALL_SCALES * scale)
        .map(|(block, variant, rate, r)| Stall {
            block,
            variant,
            rate,
            times: r.exp(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An M/M/1-like quantile: ln(100)/(μ − λ) in ms for μ events/ms.
    fn q(mu: f64, rate: f64) -> f64 {
        100f64.ln() / (mu - rate / 1000.0)
    }

    #[test]
    fn a_queue_s_crossing_is_found_exactly_between_and_beyond_the_bracket() {
        // μ = 10/ms: p99 ≤ 2 ms is met up to λ = 10 − ln100/2 = 7.697/ms.
        let truth = 1000.0 * (10.0 - 100f64.ln() / 2.0);
        for rates in [
            vec![7000.0, 8000.0],
            vec![7000.0, 7500.0],
            vec![7800.0, 8200.0],
            vec![7000.0, 7500.0, 8000.0],
        ] {
            let b = Bracket {
                blocks: (0..4)
                    .map(|i| (i, rates.iter().map(|&r| q(10.0, r)).collect()))
                    .collect(),
                rates,
            };
            let c = crossing(&b, 2.0).unwrap();
            assert!((c.rate - truth).abs() < 1e-6, "{} vs {truth}", c.rate);
            // No noise: every block says the same, the interval is a point.
            let ci = interval(&c, Width::T).unwrap();
            assert!((ci[1] - ci[0]).abs() < 1e-6, "{ci:?}");
        }
    }

    #[test]
    fn flat_latency_has_no_crossing_and_few_blocks_no_interval() {
        let flat = Bracket {
            rates: vec![100.0, 200.0],
            blocks: vec![(0, vec![1.0, 0.9]), (1, vec![1.0, 1.0])],
        };
        assert!(crossing(&flat, 2.0).is_none());
        let two = Bracket {
            rates: vec![7000.0, 8000.0],
            blocks: vec![(0, vec![1.5, 2.5]), (1, vec![1.6, 2.4])],
        };
        let c = crossing(&two, 2.0).unwrap();
        assert!(interval(&c, Width::T).is_none());
    }

    #[test]
    fn a_cost_is_the_ratio_of_the_crossings_and_a_shared_slowdown_cancels() {
        // Each block's machine speed moves both variants' μ alike; the feature adds service.
        let speeds = [1.0, 0.97, 1.03, 0.99, 1.01];
        let off = Bracket {
            rates: vec![7000.0, 8000.0],
            blocks: speeds
                .iter()
                .enumerate()
                .map(|(i, s)| (i as u32, vec![q(10.0 * s, 7000.0), q(10.0 * s, 8000.0)]))
                .collect(),
        };
        let on = Bracket {
            rates: vec![6000.0, 7000.0],
            blocks: speeds
                .iter()
                .enumerate()
                .map(|(i, s)| (i as u32, vec![q(9.0 * s, 6000.0), q(9.0 * s, 7000.0)]))
                .collect(),
        };
        let c0 = crossing(&off, 2.0).unwrap();
        let c1 = crossing(&on, 2.0).unwrap();
        let cost = cost(&c1, &c0, Width::T).unwrap();
        let truth = 100.0 * ((9.0 - 100f64.ln() / 2.0) / (10.0 - 100f64.ln() / 2.0) - 1.0);
        assert!((cost.pct - truth).abs() < 0.5, "{cost:?} vs {truth}");
        assert!(cost.ci95[0] < cost.pct && cost.pct < cost.ci95[1]);
        assert!(cost.p < 0.01, "{cost:?}");
    }

    #[test]
    fn a_stalled_trial_is_found_and_ordinary_noise_is_not() {
        // Five blocks of three rates, 3% noise; block 12's middle rate stalled (6× its p99).
        let noise = [1.0, 1.03, 0.97, 1.02, 0.98, 1.01];
        let blocks = |stall: Option<u32>| -> Vec<(u32, Vec<f64>)> {
            (10..15)
                .map(|b| {
                    let q = (0..3)
                        .map(|j| {
                            let base = [3.0, 4.0, 5.5][j] * noise[(b as usize + j) % 6];
                            if stall == Some(b) && j == 1 {
                                base * 6.0
                            } else {
                                base
                            }
                        })
                        .collect();
                    (b, q)
                })
                .collect()
        };
        let quiet = blocks(None);
        let stalled = blocks(Some(12));
        let two = stalled[..2].to_vec();
        assert!(stalls(&[(0, &quiet), (1, &quiet)]).is_empty());
        let got = stalls(&[(0, &quiet), (1, &stalled)]);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!((got[0].block, got[0].variant, got[0].rate), (12, 1, 1));
        assert!((got[0].times - 6.0).abs() < 0.5, "{got:?}");
        // Two blocks say nothing; a faster trial is not a stall.
        assert!(stalls(&[(1, &two)]).is_empty());
        let mut fast = quiet.clone();
        fast[2].1[1] /= 6.0;
        assert!(stalls(&[(0, &fast)]).is_empty());
    }
}
