//! Settle until steady. After a switch the server may need a moment (a log file opened, a
//! plugin's buffers filled, a cache refilled): the warm-up samples the throughput of
//! successive 100 ms windows and ends once the last few show no trend, no sooner than a
//! floor and no later than `--warmup`, its maximum. What the rule waited is recorded per
//! trial (`settle_s`); a transient that outlasts the maximum shows in the trial's halves.

use std::time::{Duration, Instant};

/// The throughput windows the rule looks at.
pub const WINDOW: Duration = Duration::from_millis(100);
/// The warm-up never ends before this.
pub const FLOOR: Duration = Duration::from_millis(300);
/// How many of the latest windows the trend is judged on.
const LAST: usize = 4;
/// A trend smaller than this share of the throughput over the windows judged is no trend.
const FLAT: f64 = 0.02;
/// A slope whose t statistic is under this is no trend either (noise, not a transient).
const T_NOISE: f64 = 2.0;

/// The rule's state: the event count at the start of every window so far.
#[derive(Debug, Clone)]
pub struct Settle {
    start: Instant,
    marks: Vec<(Instant, u64)>,
}

impl Settle {
    /// A warm-up starting now with `events` done so far.
    pub fn new(now: Instant, events: u64) -> Settle {
        Settle {
            start: now,
            marks: vec![(now, events)],
        }
    }

    /// Note the event count at `now`; a new window is closed when `WINDOW` has passed since
    /// the last.
    pub fn sample(&mut self, now: Instant, events: u64) {
        let last = self.marks.last().expect("a first mark").0;
        if now.duration_since(last) >= WINDOW {
            self.marks.push((now, events));
        }
    }

    /// The throughput of each closed window, events per second.
    fn rates(&self) -> Vec<f64> {
        self.marks
            .windows(2)
            .map(|w| {
                let dt = w[1].0.duration_since(w[0].0).as_secs_f64();
                w[1].1.saturating_sub(w[0].1) as f64 / dt.max(1e-9)
            })
            .collect()
    }

    /// Whether the warm-up may end at `now`: past the floor, and the last `LAST` windows
    /// show no trend (their least-squares line changes by less than `FLAT` of their mean
    /// over them, or its slope is within noise).
    pub fn steady(&self, now: Instant) -> bool {
        if now.duration_since(self.start) < FLOOR {
            return false;
        }
        let rates = self.rates();
        if rates.len() < LAST {
            return false;
        }
        flat(&rates[rates.len() - LAST..])
    }

    /// Seconds since the warm-up started.
    pub fn elapsed_s(&self, now: Instant) -> f64 {
        now.duration_since(self.start).as_secs_f64()
    }
}

/// No trend in `ys` (equally spaced): the fitted change over them is small, or the slope's t
/// statistic is.
pub fn flat(ys: &[f64]) -> bool {
    let n = ys.len() as f64;
    let mean = ys.iter().sum::<f64>() / n;
    if mean <= 0.0 {
        return false;
    }
    let xm = (n - 1.0) / 2.0;
    let sxx: f64 = (0..ys.len()).map(|i| (i as f64 - xm).powi(2)).sum();
    let slope = ys
        .iter()
        .enumerate()
        .map(|(i, y)| (i as f64 - xm) * (y - mean))
        .sum::<f64>()
        / sxx;
    let change = (slope * (n - 1.0)).abs();
    if change < FLAT * mean {
        return true;
    }
    let rss: f64 = ys
        .iter()
        .enumerate()
        .map(|(i, y)| (y - mean - slope * (i as f64 - xm)).powi(2))
        .sum();
    let se = (rss / (n - 2.0) / sxx).sqrt();
    se > 0.0 && (slope / se).abs() < T_NOISE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rising_throughput_is_not_steady_a_flat_or_noisy_one_is() {
        assert!(!flat(&[800.0, 900.0, 1000.0, 1100.0]), "a transient");
        assert!(flat(&[1000.0, 1005.0, 995.0, 1002.0]), "flat");
        assert!(flat(&[1000.0, 1100.0, 900.0, 1050.0]), "noise, no trend");
        assert!(!flat(&[0.0, 0.0, 0.0, 0.0]), "nothing ran");
    }

    #[test]
    fn the_rule_waits_for_the_floor_and_for_the_transient() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        // 100 events per window for ever: steady once four windows and the floor are in.
        let mut s = Settle::new(t0, 0);
        for w in 1..=3 {
            s.sample(at(100 * w), 100 * w);
        }
        assert!(!s.steady(at(300)), "three windows are too few");
        s.sample(at(400), 400);
        assert!(s.steady(at(400)));
        // A throughput climbing 20% a window is not steady until it levels off.
        let mut s = Settle::new(t0, 0);
        let mut events = 0;
        let mut steady_at = None;
        for w in 1..=20u64 {
            events += (100.0 * 1.2f64.powi(w.min(8) as i32)) as u64;
            s.sample(at(100 * w), events);
            if steady_at.is_none() && s.steady(at(100 * w)) {
                steady_at = Some(w);
            }
        }
        // The climb ends at window 8; by window 10 one rise in the last four is no trend.
        assert_eq!(steady_at, Some(10));
        assert!((s.elapsed_s(at(1100)) - 1.1).abs() < 1e-9);
    }
}
