//! The guards of `dbtax live`: what the off windows showed so far, and the judgements that
//! switch a feature off at once (sessions running, statement time, errors).

use super::{GUARD_MIN_CALLS, GUARD_MIN_WORK, LiveSpec};
use anyhow::Result;
use dbtax_stats::live::{LiveResults, Window};

/// What the off windows showed so far, for the guards: sessions running (each poll), the
/// calls and time per shape, the errors per unit of work.
#[derive(Default)]
pub(super) struct OffLevel {
    pub(super) running: Vec<f64>,
    pub(super) calls: Vec<f64>,
    pub(super) time_us: Vec<f64>,
    pub(super) errors: f64,
    pub(super) work: f64,
}

impl OffLevel {
    pub(super) fn add(&mut self, w: &Window) {
        if self.calls.len() < w.shapes.len() {
            self.calls.resize(w.shapes.len(), 0.0);
            self.time_us.resize(w.shapes.len(), 0.0);
        }
        for (s, (c, t)) in w.shapes.iter().zip(&w.shape_time_us).enumerate() {
            self.calls[s] += c;
            self.time_us[s] += t;
        }
        if let Some(e) = w.errors {
            self.errors += e;
            self.work += w.statements;
        }
    }

    /// The statement time of a stretch of an on window against what the same calls took
    /// in the off windows, shape by shape: None until enough calls of shapes the off
    /// windows ran.
    pub(super) fn time_ratio(&self, calls: &[f64], time_us: &[f64]) -> Option<f64> {
        let (mut seen, mut expected, mut took) = (0.0, 0.0, 0.0);
        for (s, (&c, &t)) in calls.iter().zip(time_us).enumerate() {
            let (oc, ot) = (
                self.calls.get(s).copied().unwrap_or(0.0),
                self.time_us.get(s).copied().unwrap_or(0.0),
            );
            if c > 0.0 && oc > 0.0 {
                seen += c;
                expected += c * ot / oc;
                took += t;
            }
        }
        (seen >= GUARD_MIN_CALLS && expected > 0.0).then(|| took / expected)
    }

    /// The off windows' errors per unit of work (0 before any was read).
    pub(super) fn error_rate(&self) -> f64 {
        self.errors / self.work.max(1.0)
    }
}

/// A guard tripped: its words kept in the run's record, and the error that ends the run.
pub(super) fn tripped(out: &mut LiveResults, why: String) -> Result<()> {
    out.guard_tripped = Some(why.clone());
    anyhow::bail!("the guard tripped: {why}")
}

/// The latency guard's judgement of one read of an on window (the statement time since the
/// window's start against the off windows' for the same shapes, `ratio`): Err (the words)
/// at the second read in a row above the guard. One read above it is a stretch of seconds in
/// which statements of microseconds met a busy CPU; two in a row are production slowing
/// down.
pub(super) fn latency_guard(
    strikes: &mut u32,
    ratio: Option<f64>,
    spec: &LiveSpec,
    name: &str,
) -> std::result::Result<(), String> {
    let Some(r) = ratio else { return Ok(()) };
    if r <= spec.latency_guard {
        *strikes = 0;
        return Ok(());
    }
    *strikes += 1;
    if *strikes < 2 {
        return Ok(());
    }
    Err(format!(
        "statements took {}x what the same statements took in the off windows with {name} on \
         (the guard: {}x, twice in a row): switched off at once",
        fmt1(r),
        spec.latency_guard
    ))
}

/// The error guard's judgement of a stretch of an on window (`errors` in `work` statements
/// or transactions since the window's start) against the off windows' error rate: Err (the
/// words) past it by more than `--error-guard`, once the stretch holds enough work to say.
pub(super) fn error_guard(
    errors: f64,
    work: f64,
    off_rate: f64,
    spec: &LiveSpec,
    name: &str,
    what: &str,
) -> std::result::Result<(), String> {
    let rate = errors / work.max(1.0);
    if work < GUARD_MIN_WORK || rate <= off_rate + spec.error_guard {
        return Ok(());
    }
    Err(format!(
        "{}% of the {what} in error with {name} on, against {}% in the off windows (the \
         guard: {} points more): switched off at once",
        fmt1(100.0 * rate),
        fmt1(100.0 * off_rate),
        fmt1(100.0 * spec.error_guard)
    ))
}

/// The off windows' level of sessions running that the guard multiplies: their 95th
/// percentile, at least one session.
pub(super) fn guard_level(off: &[f64]) -> f64 {
    let mut v = off.to_vec();
    v.sort_by(f64::total_cmp);
    let p95 = v
        .get(((v.len() as f64 * 0.95) as usize).min(v.len().saturating_sub(1)))
        .copied()
        .unwrap_or(0.0);
    p95.max(1.0)
}

pub(super) fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len().max(1) as f64
}

pub(super) fn fmt1(x: f64) -> String {
    format!("{x:.1}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn spec() -> LiveSpec {
        LiveSpec {
            features: vec!["general-log".into()],
            duration: Duration::from_secs(60),
            window: Duration::from_secs(10),
            settle: Duration::from_secs(1),
            max_on: 0.5,
            guard: 2.0,
            latency_guard: 2.0,
            error_guard: 0.01,
            seed: 1,
            max_log_bytes: None,
            server_host: None,
        }
    }

    #[test]
    fn the_latency_guard_trips_at_the_second_read_in_a_row_above_it() {
        let spec = spec();
        let mut strikes = 0;
        // Not enough calls yet, then one read above, one below (reset), two above.
        for (ratio, trips) in [
            (None, false),
            (Some(3.0), false),
            (Some(1.1), false),
            (Some(2.5), false),
            (Some(2.2), true),
        ] {
            let r = latency_guard(&mut strikes, ratio, &spec, "general-log");
            assert_eq!(r.is_err(), trips, "{ratio:?}: {r:?}");
        }
        assert!(
            latency_guard(&mut strikes, Some(9.0), &spec, "general-log")
                .unwrap_err()
                .contains("twice in a row")
        );
    }

    #[test]
    fn statement_time_is_judged_shape_by_shape_so_a_change_of_mix_is_not_a_slowdown() {
        let mut off = OffLevel::default();
        // Off: a light shape of 10 µs and a heavy one of 1,000 µs, mostly light.
        off.add(&Window {
            shapes: vec![900.0, 100.0],
            shape_time_us: vec![9_000.0, 100_000.0],
            ..Default::default()
        });
        // On: the same times per shape, the mix turned to mostly heavy. The mean per
        // statement rose ninefold; the guard's ratio stays 1.
        let r = off
            .time_ratio(&[100.0, 900.0], &[1_000.0, 900_000.0])
            .unwrap();
        assert!((r - 1.0).abs() < 1e-9, "{r}");
        // Each shape twice as slow: 2.
        let r = off
            .time_ratio(&[100.0, 900.0], &[2_000.0, 1_800_000.0])
            .unwrap();
        assert!((r - 2.0).abs() < 1e-9, "{r}");
        // Too few calls of shapes the off windows ran: no judgement.
        assert_eq!(off.time_ratio(&[10.0, 0.0], &[100.0, 0.0]), None);
    }

    #[test]
    fn the_error_guard_trips_past_the_off_windows_rate_by_its_margin() {
        let spec = spec();
        // 0.5% in the off windows, the guard 1 point above.
        assert!(error_guard(10.0, 1_000.0, 0.005, &spec, "f", "statements").is_ok());
        assert!(error_guard(20.0, 1_000.0, 0.005, &spec, "f", "statements").is_err());
        // Too little work to say.
        assert!(error_guard(50.0, 50.0, 0.005, &spec, "f", "statements").is_ok());
        let why = error_guard(100.0, 1_000.0, 0.0, &spec, "f", "transactions").unwrap_err();
        assert!(why.contains("10.0% of the transactions in error"), "{why}");
    }
}
