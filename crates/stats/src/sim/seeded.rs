//! Seeded scenarios on the simulated server, as the test suites run them: designs of `n`
//! plain variants, the demo's design, and `RUNS` independent runs of a scenario over their
//! own seeds, half of them on a second thread. Shared by this crate's coverage suite and
//! dbtax's suite of the words said about simulated runs.

use super::SimulatedServer;
use crate::design::{Design, Focus, StopRule, VariantSpec};
use crate::run::{self, Outcome, Silent};
use std::time::Duration;

/// Runs per scenario: 400 give a binomial sd of 1.1 points at 95%.
pub const RUNS: u64 = 400;
/// The full demo's time budget, s.
pub const DEMO_BUDGET: u64 = 270;

/// One simulated experiment: the loop's outcome and the simulator (its truth).
pub struct Run {
    /// What the loop returned.
    pub out: Outcome,
    /// The simulated server, with its truth.
    pub sim: SimulatedServer,
}

/// `n` variants with no feature: v0 (the baseline), v1, …
pub fn variants(n: usize) -> Vec<VariantSpec> {
    (0..n)
        .map(|i| VariantSpec {
            name: format!("v{i}"),
            ..Default::default()
        })
        .collect()
}

/// A design named "sim" of these variants at these thread counts.
pub fn design(variants: Vec<VariantSpec>, threads: Vec<u32>, stop: StopRule, seed: u64) -> Design {
    let mut d = Design::defaults();
    d.name = "sim".into();
    d.threads = threads;
    d.stop = stop;
    d.seed = seed;
    d.variants = variants;
    d
}

/// The demo's design with `n` variants and a precision goal of ±`points` at 16 threads, 4
/// blocks at the others, and a time budget (the simulated server's trials take 1.55 s of its
/// clock each).
pub fn demo_like(n: usize, points: f64, budget_s: u64, seed: u64) -> Design {
    let mut d = design(
        variants(n),
        vec![1, 4, 16, 64],
        StopRule::Precision {
            points,
            budget: Duration::from_secs(budget_s),
            focus: Some(Focus {
                threads: 16,
                others: 4,
            }),
        },
        seed,
    );
    d.headline_threads = Some(16);
    d
}

/// `RUNS` seeded experiments of a scenario, on the seeds `base .. base + RUNS` (every
/// scenario has its own base): `truth` is each variant's overhead, `setup` dresses the
/// simulator.
pub fn simulate(
    base: u64,
    truth: &[f64],
    design: impl Fn(u64) -> Design + Sync,
    setup: impl Fn(&mut SimulatedServer) + Sync,
) -> Vec<Run> {
    let one = |seed: u64| {
        let d = design(seed);
        let mut sim = SimulatedServer::new(seed, truth.to_vec(), 0.06, 0.04);
        setup(&mut sim);
        let out = run::run(&d, &mut sim, &mut Silent).expect("a simulated run");
        Run { out, sim }
    };
    over_seeds(base, one)
}

/// `one` on the seeds `base .. base + RUNS`, in order, half of them on a second thread.
pub fn over_seeds<T: Send>(base: u64, one: impl Fn(u64) -> T + Sync) -> Vec<T> {
    let half = base + RUNS / 2;
    std::thread::scope(|s| {
        let first = s.spawn(|| (base..half).map(&one).collect::<Vec<_>>());
        let second: Vec<T> = (half..base + RUNS).map(&one).collect();
        let mut all = first.join().expect("the second thread's runs");
        all.extend(second);
        all
    })
}

/// Two factors of two levels each (audit a0/a1, durability d0/d1), for `design::product`.
pub fn two_by_two() -> Vec<(String, Vec<VariantSpec>)> {
    let level = |name: &str| VariantSpec {
        name: name.into(),
        ..Default::default()
    };
    vec![
        ("audit".to_string(), vec![level("a0"), level("a1")]),
        ("durability".to_string(), vec![level("d0"), level("d1")]),
    ]
}
