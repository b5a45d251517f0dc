//! The method, validated against a known truth on the simulated server, in scenarios that can
//! fail: heavy-tailed noise, stalls only the feature's trials suffer, a carry-over into the
//! next trial, an effect that drifts across the run, several variants, two factors, precision
//! mode. Every scenario runs on its own seeds (an A/A run never reuses a coverage run's
//! draws), prints its rate, and asserts it within a stated window. 400 runs give a binomial
//! sd of 1.1 points at 95%, so the windows [92%, 98%] are about ±2.7 sd.
//!
//! `cargo test -p dbtax-stats --test coverage -- --nocapture` prints every figure
//! docs/method.md quotes. `audit` holds the scenarios an independent audit found the method
//! failing in (carry-over by preceding variant or over two trials under the precision rule,
//! the robust wording outside Holm, t(2) noise, stalls in any variant, a step change,
//! interactions); `carryover_over_two_trials` the blocks that tell a carry-over lasting two
//! trials from a feature's cost. What is said of simulated runs in words is dbtax's own
//! suite (tests/simulated.rs).

mod audit;
mod capacity;
mod carryover_over_two_trials;
mod disturbance;
mod late;
mod production;

use dbtax_stats::design::{Design, Focus, MIN_BLOCKS, StopRule, product};
use dbtax_stats::intervals::overhead::{half_width, mean_ci_with, pct};
use dbtax_stats::intervals::sample::t975;
use dbtax_stats::results::Cell;
use dbtax_stats::run::{self as runner, Silent};
use dbtax_stats::sim::SimulatedServer;
use dbtax_stats::sim::seeded::{
    Run, design as experiment, over_seeds, simulate, two_by_two, variants,
};
use std::time::Duration;

/// The window a 95% interval's coverage must fall in over `RUNS` runs.
const COVERAGE: (f64, f64) = (0.92, 0.98);

fn cell<'a>(r: &'a Run, variant: &str, threads: u32) -> &'a Cell {
    r.out
        .cells
        .iter()
        .find(|c| c.variant == variant && c.threads == threads)
        .unwrap()
}

/// v1's paired log ratios against v0 at 8 threads, as measured (no correction).
fn raw_logs(r: &Run) -> Vec<f64> {
    let (b, v) = (cell(r, "v0", 8), cell(r, "v1", 8));
    b.trials
        .iter()
        .zip(&v.trials)
        .map(|(b, v)| (v.qps / b.qps).ln())
        .collect()
}

fn covers(c: &Cell, truth: f64) -> bool {
    let o = c.overhead.as_ref().unwrap();
    o.ci95_pct[0] <= truth && truth <= o.ci95_pct[1]
}

/// Print and check a rate.
fn rate_within(what: &str, k: usize, n: usize, (lo, hi): (f64, f64)) -> f64 {
    let rate = k as f64 / n as f64;
    eprintln!(
        "{what}: {k}/{n} = {:.1}% (window {:.0}–{:.0}%)",
        100.0 * rate,
        100.0 * lo,
        100.0 * hi
    );
    assert!(
        (lo..=hi).contains(&rate),
        "{what}: {:.1}% outside {:.0}–{:.0}%",
        100.0 * rate,
        100.0 * lo,
        100.0 * hi
    );
    rate
}

/// v1's mean 95% half-width at 8 threads over the runs, points.
fn mean_half_width(runs: &[Run]) -> f64 {
    runs.iter()
        .map(|r| half_width(cell(r, "v1", 8).overhead.as_ref().unwrap()))
        .sum::<f64>()
        / runs.len() as f64
}

/// Coverage of variant `v`'s true overhead over the runs, at one thread count.
fn coverage_of(runs: &[Run], v: usize, truth: impl Fn(&Run) -> f64) -> usize {
    runs.iter()
        .filter(|r| covers(cell(r, &format!("v{v}"), 8), truth(r)))
        .count()
}

#[test]
fn normal_noise_and_drift() {
    let runs = simulate(
        1_000_000,
        &[0.0, 0.12],
        |s| experiment(variants(2), vec![8], StopRule::Repeats(8), s),
        |_| {},
    );
    let k = coverage_of(&runs, 1, |r| r.sim.truth_pct(1));
    rate_within(
        "coverage, 12% overhead, 6% noise, drift",
        k,
        runs.len(),
        COVERAGE,
    );
    let mean: f64 = runs
        .iter()
        .map(|r| cell(r, "v1", 8).overhead.as_ref().unwrap().pct)
        .sum::<f64>()
        / runs.len() as f64;
    eprintln!("mean estimate {mean:.2}% (truth 12%)");
    assert!((mean - 12.0).abs() < 1.0, "centred on the truth: {mean:.2}");
}

#[test]
fn heavy_tailed_noise() {
    let runs = simulate(
        2_000_000,
        &[0.0, 0.12],
        |s| experiment(variants(2), vec![8], StopRule::Repeats(8), s),
        |sim| sim.tail_df = Some(3),
    );
    let k = coverage_of(&runs, 1, |r| r.sim.truth_pct(1));
    rate_within("coverage, Student-t(3) noise", k, runs.len(), COVERAGE);
}

#[test]
fn a_carry_over_into_the_next_trial_does_not_bias_two_variants() {
    // The example: a 5% slowdown of the trial after a feature trial turned a true 12%
    // into 9.6% with random orders. Williams orders (each block the reverse of the last)
    // cancel it; the correction would remove what is left.
    let runs = simulate(
        2_500_000,
        &[0.0, 0.12],
        |s| experiment(variants(2), vec![8], StopRule::Repeats(8), s),
        |sim| sim.carry_from_every_feature(0.05),
    );
    let k = coverage_of(&runs, 1, |r| r.sim.truth_pct(1));
    rate_within(
        "coverage, 2 variants, 5% carry-over",
        k,
        runs.len(),
        COVERAGE,
    );
    let mean: f64 = runs
        .iter()
        .map(|r| cell(r, "v1", 8).overhead.as_ref().unwrap().pct)
        .sum::<f64>()
        / runs.len() as f64;
    eprintln!("  mean estimate {mean:.2}% (truth 12%)");
    assert!((mean - 12.0).abs() < 1.0, "{mean}");
}

#[test]
fn several_variants_with_a_carry_over_into_the_next_trial() {
    let truth = [0.0, 0.05, 0.12, 0.20];
    let runs = simulate(
        3_000_000,
        &truth,
        |s| experiment(variants(4), vec![8], StopRule::Repeats(8), s),
        |sim| sim.carry_from_every_feature(0.05),
    );
    for (v, overhead) in truth.iter().enumerate().skip(1) {
        let k = coverage_of(&runs, v, |r| r.sim.truth_pct(v));
        rate_within(
            &format!(
                "coverage, 4 variants, 5% carry-over, v{v} ({}%)",
                overhead * 100.0
            ),
            k,
            runs.len(),
            COVERAGE,
        );
    }
    let est: Vec<f64> = runs
        .iter()
        .flat_map(|r| &r.out.analysis.carry_over)
        .filter(|c| c.lag == 1)
        .map(|c| c.pct)
        .collect();
    let mean = est.iter().sum::<f64>() / est.len() as f64;
    eprintln!(
        "carry-over estimate: mean {mean:.2}% over {} runs (truth 5%)",
        est.len()
    );
    assert!((mean - 5.0).abs() < 1.0, "{mean}");
    // The same experiment without the correction: the carry-over biases the estimate.
    let uncorrected = runs
        .iter()
        .filter(|r| {
            let (m, h) = mean_ci_with(&raw_logs(r), t975).unwrap();
            let t = r.sim.truth_pct(1);
            pct(m + h) <= t && t <= pct(m - h)
        })
        .count();
    eprintln!(
        "  (without the carry-over correction v1 would be covered {}/{})",
        uncorrected,
        runs.len()
    );
    // And without a carry-over, the correction costs nothing.
    let clean = simulate(
        3_500_000,
        &truth,
        |s| experiment(variants(4), vec![8], StopRule::Repeats(8), s),
        |_| {},
    );
    for v in 1..4 {
        let k = coverage_of(&clean, v, |r| r.sim.truth_pct(v));
        rate_within(
            &format!("coverage, 4 variants, no carry-over, v{v}"),
            k,
            clean.len(),
            COVERAGE,
        );
    }
}

#[test]
fn an_effect_that_drifts_across_the_run() {
    let runs = simulate(
        4_000_000,
        &[0.0, 0.12],
        |s| experiment(variants(2), vec![8], StopRule::Repeats(8), s),
        |sim| sim.effect_ar = Some((0.7, 0.03)),
    );
    let k = coverage_of(&runs, 1, |r| r.sim.realized_pct(1));
    rate_within(
        "coverage of the run's own average effect, AR(1) drifting effect",
        k,
        runs.len(),
        COVERAGE,
    );
    let long_run = coverage_of(&runs, 1, |r| r.sim.truth_pct(1));
    eprintln!(
        "  (of the long-run mean: {long_run}/{}: a run cannot know where a slowly wandering \
         effect will average out after it ends)",
        runs.len()
    );
}

/// Two factors of two levels: audit a0/a1 × durability d0/d1.
#[test]
fn two_factors_each_within_the_levels_of_the_other() {
    let factors = two_by_two();
    // a0/d0, a0/d1, a1/d0, a1/d1: audit costs 10%, durability 5%, independently.
    let truth = [0.0, 0.05, 0.10, 1.0 - 0.90 * 0.95];
    let runs = simulate(
        5_000_000,
        &truth,
        |s| experiment(product(&factors), vec![8], StopRule::Repeats(8), s),
        |_| {},
    );
    let effect = |r: &Run, variant: &str, factor: &str| {
        let c = cell(r, variant, 8);
        c.effects
            .iter()
            .find(|e| e.factor == factor)
            .and_then(|e| e.overhead.clone())
            .unwrap()
    };
    for (variant, factor, v, against) in [
        ("a1/d1", "audit", 3, 1),
        ("a1/d1", "durability", 3, 2),
        ("a1/d0", "audit", 2, 0),
    ] {
        let k = runs
            .iter()
            .filter(|r| {
                let o = effect(r, variant, factor);
                let t = r.sim.truth_against(v, against);
                o.ci95_pct[0] <= t && t <= o.ci95_pct[1]
            })
            .count();
        rate_within(
            &format!("coverage, {factor} within {variant}"),
            k,
            runs.len(),
            COVERAGE,
        );
    }
}

#[test]
fn precision_mode_keeps_its_coverage() {
    for (points, base) in [(3.0, 6_000_000), (5.0, 6_500_000)] {
        let runs = simulate(
            base,
            &[0.0, 0.12],
            |s| {
                experiment(
                    variants(2),
                    vec![8],
                    StopRule::Precision {
                        points,
                        budget: Duration::from_secs(3600 * 24),
                        focus: None,
                    },
                    s,
                )
            },
            |_| {},
        );
        let k = coverage_of(&runs, 1, |r| r.sim.truth_pct(1));
        let blocks: f64 = runs
            .iter()
            .map(|r| cell(r, "v1", 8).overhead.as_ref().unwrap().blocks as f64)
            .sum::<f64>()
            / runs.len() as f64;
        rate_within(
            &format!("coverage, precision ±{points} points (mean {blocks:.1} blocks)"),
            k,
            runs.len(),
            (0.93, 0.99),
        );
        for r in &runs {
            let o = cell(r, "v1", 8).overhead.as_ref().unwrap();
            assert!((o.ci95_pct[1] - o.ci95_pct[0]) / 2.0 <= points, "{o:?}");
            assert!(o.blocks >= MIN_BLOCKS, "the first stage: {o:?}");
        }
    }
}

#[test]
fn focused_precision_drops_narrow_variants_and_keeps_its_coverage() {
    // The demo's rule: 3 blocks at 1 thread; at 8 threads a first stage of MIN_BLOCKS, then
    // only the variants still short of ±5 points (with the baseline). Two features of
    // different sizes reach the goal at different times.
    let focus = Focus {
        threads: 8,
        others: 3,
    };
    // 3 × 400 runs: the rule's coverage is near the window's edge, so it is measured closer.
    let runs: Vec<Run> = [6_800_000, 9_100_000, 12_000_000]
        .into_iter()
        .flat_map(|base| {
            simulate(
                base,
                &[0.0, 0.04, 0.12, 0.20],
                |s| {
                    experiment(
                        variants(4),
                        vec![1, 8],
                        StopRule::Precision {
                            points: 5.0,
                            budget: Duration::from_secs(3600 * 24),
                            focus: Some(focus),
                        },
                        s,
                    )
                },
                |_| {},
            )
        })
        .collect();
    for v in [1, 2, 3] {
        let k = coverage_of(&runs, v, |r| r.sim.truth_pct(v));
        rate_within(
            &format!("coverage, focused precision ±5, v{v}"),
            k,
            runs.len(),
            (0.93, 0.99),
        );
    }
    let blocks = |r: &Run, v: &str, t: u32| cell(r, v, t).overhead.as_ref().unwrap().blocks;
    let (mut uneven, mut wide, mut again) = (0, 0, 0);
    for r in &runs {
        assert_eq!(
            blocks(r, "v1", 1),
            3,
            "the other thread count: fixed blocks"
        );
        for v in ["v1", "v2", "v3"] {
            // A variant that stopped and ran again: its blocks have a gap, and its trials
            // pair with the baseline's of the same blocks, not the next ones in line.
            let ran: Vec<u32> = cell(r, v, 8).trials.iter().map(|t| t.block).collect();
            again += usize::from(ran.windows(2).any(|w| w[1] != w[0] + 1));
            let o = cell(r, v, 8).overhead.as_ref().unwrap();
            assert!(o.blocks >= MIN_BLOCKS, "{o:?}");
            // A variant that stopped still moves a little: the shared carry-over correction
            // goes on learning from the variants that run on.
            wide += usize::from(half_width(o) > 5.0);
        }
        uneven += usize::from(
            blocks(r, "v1", 8) != blocks(r, "v2", 8) || blocks(r, "v2", 8) != blocks(r, "v3", 8),
        );
    }
    eprintln!(
        "runs where one variant stopped before another: {uneven}/{}; cells ending wider \
         than ±5: {wide}; variants that stopped and ran again: {again}",
        runs.len()
    );
    assert!(wide * 100 < runs.len(), "{wide} cells wider than the goal");
    assert!(
        uneven > 0,
        "a narrow variant stops running while a wide one goes on"
    );
}

#[test]
fn a_z_quantile_instead_of_t_would_be_caught() {
    // Five blocks: t with 4 df is 2.78, z is 1.96. The same draws, two quantiles.
    let runs = simulate(
        7_000_000,
        &[0.0, 0.12],
        |s| experiment(variants(2), vec![8], StopRule::Repeats(5), s),
        |_| {},
    );
    let covered = |q: fn(usize) -> f64| {
        runs.iter()
            .filter(|r| {
                let (m, h) = mean_ci_with(&raw_logs(r), q).unwrap();
                let t = r.sim.truth_pct(1);
                pct(m + h) <= t && t <= pct(m - h)
            })
            .count()
    };
    rate_within(
        "coverage with t, 5 blocks",
        covered(t975),
        runs.len(),
        COVERAGE,
    );
    let z = covered(|_| 1.96);
    let rate = z as f64 / runs.len() as f64;
    eprintln!(
        "coverage with z, 5 blocks: {z}/{} = {:.1}%: below the window, caught",
        runs.len(),
        100.0 * rate
    );
    assert!(rate < COVERAGE.0, "a z interval would pass: {rate}");
}

#[test]
fn a_a_experiments_are_within_noise_about_95_percent_of_the_time() {
    let runs = simulate(
        8_000_000,
        &[0.0, 0.0],
        |s| experiment(variants(2), vec![8], StopRule::Repeats(8), s),
        |_| {},
    );
    // The interval's own calibration: its p-value under 5% about 5% of the time. Counted as
    // measured (after Holm's adjustment over the run's figures: the mean, its robust
    // companion, the server CPU) it is rarer still, and never more often.
    let of = |r: &Run| cell(r, "v1", 8).overhead.clone().unwrap();
    let below = runs.iter().filter(|r| of(r).p_value < 0.05).count();
    rate_within("A/A p under 5%", below, runs.len(), (0.02, 0.08));
    let significant = runs.iter().filter(|r| of(r).significant).count();
    rate_within(
        "A/A counted as measured",
        significant,
        runs.len(),
        (0.0, 0.08),
    );
}

/// Whether a headline claims a cost or a gain as measured: "costs 8.0% [4.0, 12.0]",
/// "raises throughput by …"; not "costs at most 4.8%", "negligible", "this machine cannot
/// tell", or "likely a cost … not counted as measured".
#[test]
fn feature_only_stalls_are_flagged_and_covered_once_seen() {
    // 10% of the feature's trials run at half speed. A run whose blocks saw no stall cannot
    // know of them; one that saw them must flag them and cover the truth.
    let runs = simulate(
        10_000_000,
        &[0.0, 0.12],
        |s| {
            let mut e = experiment(variants(2), vec![8], StopRule::Repeats(10), s);
            e.warmup_round = false;
            e
        },
        |sim| sim.stall = Some((0.1, 0.5)),
    );
    let seen: Vec<&Run> = runs.iter().filter(|r| r.sim.stalls[1] > 0).collect();
    let one: Vec<&Run> = seen
        .iter()
        .copied()
        .filter(|r| r.sim.stalls[1] == 1)
        .collect();
    let flagged = one
        .iter()
        .filter(|r| {
            !cell(r, "v1", 8)
                .overhead
                .as_ref()
                .unwrap()
                .outlier_blocks
                .is_empty()
        })
        .count();
    rate_within(
        "runs with one stalled block: the block is flagged as an outlier",
        flagged,
        one.len(),
        (0.9, 1.0),
    );
    let covered = seen
        .iter()
        .filter(|r| covers(cell(r, "v1", 8), r.sim.truth_pct(1)))
        .count();
    rate_within(
        "runs that saw a stall: coverage of the mean cost, stalls included",
        covered,
        seen.len(),
        (0.85, 1.0),
    );
    let all = runs
        .iter()
        .filter(|r| covers(cell(r, "v1", 8), r.sim.truth_pct(1)))
        .count();
    eprintln!(
        "  (all runs: {all}/{}; {} of them saw no stall at all)",
        runs.len(),
        runs.len() - seen.len()
    );
}

#[test]
fn a_real_overhead_is_detected_when_it_is_well_above_the_noise() {
    let runs = simulate(
        11_000_000,
        &[0.0, 0.15],
        |s| experiment(variants(2), vec![8], StopRule::Repeats(8), s),
        |sim| {
            sim.noise_sd = 0.04;
            sim.drift_sd = 0.02;
        },
    );
    let detected = runs
        .iter()
        .filter(|r| cell(r, "v1", 8).overhead.as_ref().unwrap().significant)
        .count();
    rate_within(
        "power: 15% overhead, 4% noise, 8 blocks",
        detected,
        runs.len(),
        (0.95, 1.0),
    );
}

#[test]
fn server_cpu_gives_a_second_estimate_of_the_cost() {
    // The simulator charges 20 µs / (1 − overhead): 5 µs more per query at 20%.
    let runs = simulate(
        12_000_000,
        &[0.0, 0.20],
        |s| experiment(variants(2), vec![8], StopRule::Repeats(6), s),
        |_| {},
    );
    let mut covered = 0;
    for r in &runs {
        let d = cell(r, "v1", 8)
            .server_cpu_delta_us
            .clone()
            .unwrap()
            .estimate;
        covered += usize::from(d.ci95[0] <= 5.0 && 5.0 <= d.ci95[1]);
        assert!(d.ci95[1] - d.ci95[0] < 3.0, "narrow: {d:?}");
    }
    rate_within(
        "coverage of the server-CPU delta",
        covered,
        runs.len(),
        COVERAGE,
    );
}

#[test]
fn a_run_is_replayed_from_its_seed() {
    let order = |seed: u64| -> Vec<(u32, u32, String, u32)> {
        let e = experiment(variants(3), vec![1, 8], StopRule::Repeats(4), seed);
        let mut sim = SimulatedServer::new(1, vec![0.0, 0.1, 0.2], 0.05, 0.0);
        let out = runner::run(&e, &mut sim, &mut Silent).unwrap();
        let mut trials: Vec<(u32, u32, String, u32)> = out
            .cells
            .iter()
            .flat_map(|c| {
                c.trials
                    .iter()
                    .map(|t| (t.block, c.threads, c.variant.clone(), t.position))
            })
            .collect();
        trials.sort();
        trials
    };
    assert_eq!(order(42), order(42), "the same seed, the same order");
    assert_ne!(order(42), order(43), "another seed, another order");
}

#[test]
fn added_latency_at_a_rate_covers_the_truth_and_an_unpaired_or_z_interval_would_not() {
    use dbtax_stats::design::{OpenLoop, RateLevel};
    use dbtax_stats::intervals::overhead::{mean_ci, welch_ci};
    // Three variants at two rate levels (shares of a calibrated capacity), 5 blocks: v1 adds
    // 0.05 ms to p50 (0.15 to p99), v2 nothing. The machine's drift (a random walk, 10% per
    // trial here) slows every answer alike, so the pairing within a block is what makes the
    // interval both narrow and right.
    let runs = simulate(
        13_000_000,
        &[0.0, 0.0, 0.0],
        |s| {
            let mut e = experiment(variants(3), vec![8], StopRule::Repeats(5), s);
            e.open_loop = Some(OpenLoop {
                levels: vec![RateLevel::Capacity(0.5), RateLevel::Capacity(0.8)],
                arrival: Default::default(),
                skip_late: None,
            });
            e
        },
        |sim| {
            sim.added_latency_ms = vec![0.0, 0.05, 0.0];
            sim.drift_sd = 0.1;
        },
    );
    let (mut paired, mut z, mut unpaired, mut n) = (0, 0, 0, 0);
    for r in &runs {
        assert_eq!(
            r.out.calibration.len(),
            1,
            "one calibration per thread count"
        );
        for level in ["50%", "80%"] {
            let at = |v: &str| {
                r.out
                    .cells
                    .iter()
                    .find(|c| c.variant == v && c.rate.as_ref().unwrap().level == level)
                    .unwrap()
            };
            let base = at("v0");
            assert!(base.overhead.is_none() && base.latency_delta_ms.is_none());
            for (v, truth) in [("v1", 0.05), ("v2", 0.0)] {
                let c = at(v);
                assert!(c.overhead.is_none(), "no throughput overhead at a rate");
                let d = &c.latency_delta_ms.as_ref().unwrap();
                for (e, t, pick) in [(&d.p50, truth, 0usize), (&d.p99, 3.0 * truth, 1usize)] {
                    n += 1;
                    paired += usize::from(e.ci95[0] <= t && t <= e.ci95[1]);
                    let of = |c: &Cell| -> Vec<f64> {
                        c.trials
                            .iter()
                            .map(|x| [x.latency_ms.p50, x.latency_ms.p99][pick])
                            .collect()
                    };
                    let (b, x) = (of(base), of(c));
                    let diffs: Vec<f64> = b.iter().zip(&x).map(|(b, x)| x - b).collect();
                    let (m, h) = mean_ci(&diffs).unwrap();
                    let hz = h / t975(diffs.len() - 1) * 1.96;
                    z += usize::from((m - hz..=m + hz).contains(&t));
                    let (m, h) = welch_ci(&b, &x).unwrap();
                    unpaired += usize::from((m - h..=m + h).contains(&t));
                }
            }
        }
    }
    rate_within("coverage of added latency (p50, p99)", paired, n, COVERAGE);
    // The same draws with a z quantile, or ignoring the blocks (Welch on the trials): the
    // first covers too rarely, the second far too often (its interval is mostly drift).
    let zr = z as f64 / n as f64;
    let ur = unpaired as f64 / n as f64;
    eprintln!(
        "  with z: {z}/{n} = {:.1}%; unpaired (Welch): {unpaired}/{n} = {:.1}%",
        100.0 * zr,
        100.0 * ur
    );
    assert!(zr < COVERAGE.0, "z would be caught: {zr}");
    assert!(ur > COVERAGE.1, "unpaired would be caught: {ur}");
}
