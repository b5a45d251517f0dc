//! A run on production's own traffic: no load of ours, a feature switched on and off in
//! windows, and what it costs read from the server's own counters. This module is the
//! design and the estimates, pure: [`schedule`] lays out the windows (pairs of an off and an
//! on window in random order, pairs in blocks, extra off windows where the share of time on
//! is capped), and [`estimate`] turns the windows' signals into intervals.
//!
//! The traffic is not ours to hold still: its rate and its mix drift between windows. The
//! estimates stay honest under that by pairing adjacent windows (a trend hits both sides of
//! a pair alike), by taking the differences in rate and in mix between a pair's two windows
//! as covariates (the CPU a statement costs depends on how busy the server is and on which
//! statements run; the estimate is the cost at no difference, the baseline's mix), and by
//! setting aside a pair whose traffic differs too much to be compared (said, never
//! silently). The interval is Student's t on the pairs' regression residuals.

pub mod fit;

use crate::intervals::sample::t975;
pub use crate::results::live::{Interval, LiveEstimate, LiveResults, SetAside, Slot, Window};
use crate::rng::Rng;

/// The schedule of a live run: `blocks` blocks, each holding one pair per feature (its two
/// windows adjacent, their order random), the pairs in random order, and extra off windows
/// placed at random between pairs when `max_on` (the share of windows a feature may be on,
/// summed over features) is below what the pairs give alone.
pub fn schedule(seed: u64, features: usize, blocks: usize, max_on: f64) -> Vec<Slot> {
    let mut rng = Rng::new(seed ^ 0x11FE_5EED);
    let per_block_on = features;
    // Windows a block needs for its on share to stay at or below the cap.
    let need = (per_block_on as f64 / max_on.clamp(0.01, 0.5)).ceil() as usize;
    let extra = need.saturating_sub(2 * features);
    let mut out = Vec::new();
    let mut pair = 0;
    for block in 0..blocks {
        let mut units: Vec<Vec<Slot>> = Vec::new();
        for f in 0..features {
            let off = Slot {
                block,
                feature: None,
                pair: Some(pair + f),
            };
            let on = Slot {
                block,
                feature: Some(f),
                pair: Some(pair + f),
            };
            units.push(if rng.unit() < 0.5 {
                vec![off, on]
            } else {
                vec![on, off]
            });
        }
        for _ in 0..extra {
            units.push(vec![Slot {
                block,
                feature: None,
                pair: None,
            }]);
        }
        rng.shuffle(&mut units);
        out.extend(units.into_iter().flatten());
        pair += features;
    }
    out
}

/// How the estimates may read the windows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    /// Take the difference in rate as a covariate.
    pub rate_covariate: bool,
    /// Take the differences in mix as covariates (and weigh latencies by the baseline's
    /// mix).
    pub mix: bool,
    /// A pair whose windows' rates differ by more than this factor is set aside.
    pub max_rate_ratio: f64,
}

impl Default for Reading {
    fn default() -> Self {
        Reading {
            rate_covariate: true,
            mix: true,
            max_rate_ratio: 1.5,
        }
    }
}

/// The estimates of `feature` from the windows of a run laid out by `slots`.
pub fn estimate(slots: &[Slot], windows: &[Window], feature: usize, how: Reading) -> LiveEstimate {
    let mut out = LiveEstimate {
        feature,
        ..Default::default()
    };
    let pairs = pairs_of(slots, windows, feature);
    let mut used = Vec::new();
    for (pair, off, on) in pairs {
        let ratio = on.rate() / off.rate().max(1e-9);
        if !(1.0 / how.max_rate_ratio..=how.max_rate_ratio).contains(&ratio) {
            out.set_aside.push(SetAside {
                pair,
                why: format!(
                    "its windows' traffic differs too much to compare ({:.0} and {:.0} \
                     statements/s)",
                    off.rate(),
                    on.rate()
                ),
            });
            continue;
        }
        used.push((off, on));
    }
    out.pairs = used.len();
    let offs: Vec<&Window> = slots
        .iter()
        .zip(windows)
        .filter(|(s, _)| s.feature.is_none())
        .map(|(_, w)| w)
        .collect();
    out.rate = offs.iter().map(|w| w.statements).sum::<f64>()
        / offs.iter().map(|w| w.seconds).sum::<f64>().max(1e-9);
    if used.len() < 3 {
        return out;
    }
    let baseline_cpu = used
        .iter()
        .map(|(o, _)| o.cpu_us_per_statement())
        .sum::<f64>()
        / used.len() as f64;
    let covariates = |off: &Window, on: &Window| {
        let mut x = Vec::new();
        if how.rate_covariate {
            x.push((on.rate() - off.rate()) / out.rate.max(1e-9));
        }
        if how.mix && off.shapes.len() > 1 && off.shapes.len() == on.shapes.len() {
            let (a, b) = (off.shares(), on.shares());
            // One share less than the shapes: they sum to one.
            x.extend((1..a.len()).map(|s| b[s] - a[s]));
        }
        x
    };
    let cpu: Vec<(f64, Vec<f64>)> = used
        .iter()
        .map(|(off, on)| {
            (
                on.cpu_us_per_statement() - off.cpu_us_per_statement(),
                covariates(off, on),
            )
        })
        .collect();
    out.cpu_us_per_statement = fit::intercept(&cpu);
    out.cpu_pct = out.cpu_us_per_statement.map(|i| Interval {
        value: 100.0 * i.value / baseline_cpu,
        ci95: (
            100.0 * i.ci95.0 / baseline_cpu,
            100.0 * i.ci95.1 / baseline_cpu,
        ),
        df: i.df,
    });
    let log: Vec<(f64, Vec<f64>)> = used
        .iter()
        .map(|(off, on)| {
            (
                on.log_bytes / on.statements.max(1.0) - off.log_bytes / off.statements.max(1.0),
                vec![],
            )
        })
        .collect();
    out.log_bytes_per_statement = fit::intercept(&log);
    out.latency_us = latency(&used, &offs, how, out.rate);
    let scale = |i: Interval, k: f64| Interval {
        value: i.value * k,
        ci95: (i.ci95.0 * k, i.ci95.1 * k),
        df: i.df,
    };
    out.cores = out.cpu_us_per_statement.map(|i| scale(i, out.rate / 1e6));
    out.log_gb_per_day = out
        .log_bytes_per_statement
        .map(|i| scale(i, out.rate * 86_400.0 / 1e9));
    out
}

/// The latency added per statement: each pair's per-shape differences in mean latency,
/// weighed by the off windows' mix (with `how.mix`), or the windows' overall means
/// compared (without: a window with other statements then reads as slower); the difference
/// in rate a covariate (a busier window is slower).
fn latency(
    used: &[(&Window, &Window)],
    offs: &[&Window],
    how: Reading,
    rate: f64,
) -> Option<Interval> {
    let shapes = used.first()?.0.shape_time_us.len();
    if shapes == 0 {
        return None;
    }
    let mut weight = vec![0.0; shapes];
    for w in offs {
        for (s, c) in w.shapes.iter().enumerate().take(shapes) {
            weight[s] += c;
        }
    }
    let total: f64 = weight.iter().sum();
    let mean = |w: &Window, s: usize| w.shape_time_us[s] / w.shapes[s].max(1.0);
    let ds: Vec<(f64, Vec<f64>)> = used
        .iter()
        .map(|(off, on)| {
            let d = if how.mix {
                (0..shapes)
                    .map(|s| weight[s] / total * (mean(on, s) - mean(off, s)))
                    .sum()
            } else {
                let all = |w: &Window| {
                    w.shape_time_us.iter().sum::<f64>() / w.shapes.iter().sum::<f64>().max(1.0)
                };
                all(on) - all(off)
            };
            let x = if how.rate_covariate {
                vec![(on.rate() - off.rate()) / rate.max(1e-9)]
            } else {
                vec![]
            };
            (d, x)
        })
        .collect();
    fit::intercept(&ds)
}

/// The run's pairs for `feature`: (pair, off window, on window), both measured.
fn pairs_of<'a>(
    slots: &[Slot],
    windows: &'a [Window],
    feature: usize,
) -> Vec<(usize, &'a Window, &'a Window)> {
    let mut by_pair: std::collections::BTreeMap<usize, (Option<&Window>, Option<&Window>)> =
        Default::default();
    for w in windows {
        let Some(slot) = slots.get(w.slot) else {
            continue;
        };
        let Some(pair) = slot.pair else { continue };
        match slot.feature {
            None => by_pair.entry(pair).or_default().0 = Some(w),
            Some(f) if f == feature => by_pair.entry(pair).or_default().1 = Some(w),
            Some(_) => {}
        }
    }
    by_pair
        .into_iter()
        .filter_map(|(p, (off, on))| {
            let on = on?;
            Some((p, off?, on))
        })
        .collect()
}

/// The all-on-against-all-off comparison (Welch's interval for the difference in CPU per
/// statement), pairing and covariates ignored: what `estimate` must not be. Kept for the
/// simulation suite, which shows it covers the truth far from 95% of the time.
pub fn unpaired_cpu(slots: &[Slot], windows: &[Window], feature: usize) -> Option<Interval> {
    let side = |f: Option<usize>| -> Vec<f64> {
        windows
            .iter()
            .filter(|w| slots.get(w.slot).is_some_and(|s| s.feature == f))
            .map(Window::cpu_us_per_statement)
            .collect()
    };
    let (off, on) = (side(None), side(Some(feature)));
    let (d, se, df) = crate::intervals::overhead::welch(&off, &on)?;
    let q = crate::intervals::sample::t975_real(df);
    Some(Interval {
        value: d,
        ci95: (d - q * se, d + q * se),
        df: df as usize,
    })
}

/// Student's t interval of a mean (for the fits' callers).
pub(crate) fn t_interval(mean: f64, se: f64, df: usize) -> Interval {
    let q = t975(df);
    Interval {
        value: mean,
        ci95: (mean - q * se, mean + q * se),
        df,
    }
}
