//! Production's own traffic, simulated with a known truth, for `live`'s estimates: a rate
//! that ramps over the run, bursts of a heavy statement shape, a mix that shifts between two
//! shapes, CPU per statement that depends on the rate, and a feature that adds a known CPU
//! per statement, log bytes and latency. The feature also slows the heavy shape's clients (an
//! application's closed loop sends fewer of them while the server is slower), so the on
//! windows' mix differs from the off windows' by the feature itself: an estimate that ignores
//! the mix reads that as a smaller cost.

use crate::live::{Slot, Window, schedule};
use crate::rng::Rng;

/// The traffic and the feature's truth.
#[derive(Debug, Clone)]
pub struct Traffic {
    /// Statements per second at the run's start.
    pub rate: f64,
    /// The rate's factor from the start to the end of the run (a ramp).
    pub ramp: f64,
    /// The chance that a window holds a burst of the heavy shape.
    pub burst: f64,
    /// A burst's extra heavy statements, as a share of the window's rate.
    pub burst_size: f64,
    /// The heavy shape's share at the start and at the end of the run.
    pub heavy_share: (f64, f64),
    /// Server CPU per statement of the light and the heavy shape, µs, at the starting rate.
    pub cost_us: (f64, f64),
    /// How much CPU per statement grows with the rate: ×(1 + this × (rate/start − 1)).
    pub rate_elasticity: f64,
    /// The light shape's own window-to-window variation (relative sd).
    pub light_noise: f64,
    /// The window's CPU reading's relative noise (sd).
    pub cpu_noise: f64,
    /// Truth: server CPU the feature adds per statement, µs.
    pub feature_cpu_us: f64,
    /// Truth: log bytes per statement with the feature on.
    pub feature_log_bytes: f64,
    /// Truth: latency the feature adds per statement, µs.
    pub feature_latency_us: f64,
    /// The share of the heavy shape's statements its clients do not send while the
    /// feature is on (their closed loop is slower).
    pub heavy_slowed: f64,
    /// Each shape's latency, µs.
    pub latency_us: (f64, f64),
}

impl Default for Traffic {
    fn default() -> Self {
        Traffic {
            rate: 2_000.0,
            ramp: 2.0,
            burst: 0.15,
            burst_size: 0.3,
            heavy_share: (0.2, 0.6),
            cost_us: (20.0, 60.0),
            rate_elasticity: 0.25,
            light_noise: 0.08,
            cpu_noise: 0.02,
            feature_cpu_us: 4.0,
            feature_log_bytes: 120.0,
            feature_latency_us: 15.0,
            heavy_slowed: 0.2,
            latency_us: (200.0, 900.0),
        }
    }
}

/// A whole live run of one feature on this traffic: `blocks` blocks of 20 s windows at the
/// default cap (half the time on): the schedule and what each window measured.
pub fn run(seed: u64, traffic: &Traffic, blocks: usize) -> (Vec<Slot>, Vec<Window>) {
    let slots = schedule(seed, 1, blocks, 0.5);
    let mut rng = Rng::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5107);
    let n = slots.len();
    let windows = slots
        .iter()
        .enumerate()
        .map(|(i, s)| window(traffic, &mut rng, i, n, s.feature.is_some()))
        .collect();
    (slots, windows)
}

/// Window `i` of `n`, 20 s long.
fn window(t: &Traffic, rng: &mut Rng, i: usize, n: usize, on: bool) -> Window {
    let seconds = 20.0;
    let progress = i as f64 / n.max(1) as f64;
    let rate = t.rate * (1.0 + (t.ramp - 1.0) * progress);
    let share = t.heavy_share.0 + (t.heavy_share.1 - t.heavy_share.0) * progress;
    let share = (share + 0.03 * rng.normal()).clamp(0.01, 0.99);
    // The light shape is the application's front traffic: it moves from window to window
    // on its own (8%), the heavy shape is its batch and report clients.
    let mut light = rate * (1.0 - share) * seconds * (1.0 + t.light_noise * rng.normal()).max(0.1);
    let mut heavy = rate * share * seconds;
    if rng.unit() < t.burst {
        heavy += t.burst_size * rate * seconds;
    }
    if on {
        heavy *= 1.0 - t.heavy_slowed;
    }
    light = light.round();
    heavy = heavy.round();
    let statements = light + heavy;
    let busy = statements / seconds / t.rate;
    let m = 1.0 + t.rate_elasticity * (busy - 1.0);
    let feature = if on { t.feature_cpu_us } else { 0.0 };
    let cpu_us = (light * t.cost_us.0 + heavy * t.cost_us.1) * m + statements * feature;
    let cpu_s = cpu_us / 1e6 * (1.0 + t.cpu_noise * rng.normal());
    let log_bytes = if on {
        statements * t.feature_log_bytes * (1.0 + 0.01 * rng.normal())
    } else {
        0.0
    };
    let lat = |base: f64, count: f64, rng: &mut Rng| {
        let per = base * m + if on { t.feature_latency_us } else { 0.0 };
        count * per * (1.0 + 0.02 * rng.normal())
    };
    let shape_time_us = vec![
        lat(t.latency_us.0, light, rng),
        lat(t.latency_us.1, heavy, rng),
    ];
    Window {
        slot: i,
        seconds,
        statements,
        cpu_s,
        log_bytes,
        shapes: vec![light, heavy],
        shape_time_us,
        ..Default::default()
    }
}
