//! The scenarios an independent audit of the runner found failing, each run through the whole
//! runner on the simulated server: a carry-over that only one variant leaves, one lasting two
//! trials, the robust wording outside Holm's family, t(2) noise, stalls in any variant, a
//! step change of the machine, a variant with three times the noise, and interactions of two
//! factors. The demo's rule is the one under test where the audit used it: precision ±3 at
//! 16 threads, 4 blocks at 1, 4 and 64.

use super::*;
use dbtax_stats::design::warnings::Warning;
use dbtax_stats::intervals::robust::{hodges_lehmann_test, trimmed_mean};
use dbtax_stats::sim::seeded::demo_like;

/// No time limit: the goal decides.
const DAY: u64 = 24 * 3600;

/// 400 runs of four variants (5%, 12%, 20%) under the demo's rule at ±3, no time limit.
fn demo_runs(base: u64, setup: impl Fn(&mut SimulatedServer) + Sync) -> Vec<Run> {
    simulate(
        base,
        &[0.0, 0.05, 0.12, 0.20],
        |s| demo_like(4, 3.0, DAY, s),
        setup,
    )
}

/// How many runs have a warning `is` picks.
fn warned(runs: &[Run], is: impl Fn(&Warning) -> bool) -> usize {
    runs.iter()
        .filter(|r| r.out.warnings.iter().any(&is))
        .count()
}

/// Coverage of each non-baseline variant at 16 threads, checked against the window.
fn check_each(what: &str, runs: &[Run], n: usize) {
    for v in 1..n {
        let k = runs
            .iter()
            .filter(|r| covers(cell(r, &format!("v{v}"), 16), r.sim.truth_pct(v)))
            .count();
        rate_within(&format!("{what}, v{v}"), k, runs.len(), COVERAGE);
    }
}

#[test]
fn a_carry_over_only_one_variant_leaves_under_the_demos_precision_rule() {
    // v2 slows the next trial by 8%, the others leave nothing: one pooled carry-over term
    // was biased by a third of that for every variant (302/266/322 of 400 in the audit).
    let runs = demo_runs(20_000_000, |sim| {
        sim.carry_after = vec![0.0, 0.0, 0.08, 0.0]
    });
    check_each("coverage, carry-over from v2 only, precision ±3", &runs, 4);
    let found: Vec<f64> = runs
        .iter()
        .filter_map(|r| {
            r.out
                .analysis
                .carry_over
                .iter()
                .find(|c| c.lag == 1 && c.after == "v2")
                .map(|c| c.pct)
        })
        .collect();
    let mean = found.iter().sum::<f64>() / found.len() as f64;
    eprintln!(
        "  carry-over after v2: mean {mean:.2}% (truth 8%) over {} runs",
        found.len()
    );
    assert!((mean - 8.0).abs() < 1.0, "{mean}");
    let named = warned(
        &runs,
        |w| matches!(w, Warning::CarryOver { after, lag: 1, .. } if after == "v2"),
    );
    rate_within("  the warning names v2", named, runs.len(), (0.9, 1.0));
}

#[test]
fn a_carry_over_lasting_two_trials_under_the_demos_precision_rule() {
    // Every feature slows the next trial by 5% and the one after by 4%.
    let runs = demo_runs(21_000_000, |sim| {
        sim.carry_from_every_feature(0.05);
        sim.carry_lag2 = vec![0.0, 0.04, 0.04, 0.04];
    });
    check_each(
        "coverage, carry-over over two trials, precision ±3",
        &runs,
        4,
    );
    let lag2: Vec<f64> = runs
        .iter()
        .filter_map(|r| r.out.analysis.carry_over.iter().find(|c| c.lag == 2))
        .map(|c| c.pct)
        .collect();
    let mean = lag2.iter().sum::<f64>() / lag2.len() as f64;
    eprintln!(
        "  lag-2 term: mean {mean:.2}% (truth 4%) in {}/{} runs",
        lag2.len(),
        runs.len()
    );
    // Corrected for only when it shows: found in most runs, a little over the truth when
    // found (those are the runs where it happened to look large).
    assert!(lag2.len() * 10 >= runs.len() * 8 && (mean - 4.0).abs() < 1.0);
}

#[test]
fn two_variants_estimate_a_second_trial_and_name_a_transient() {
    // With two variants the blocks repeat each (two of each): the lag-2 term is estimated in
    // every run (with blocks of one each it was the same column as the cost and lag 1, and
    // the results said so), and a transient the warm-up left is named.
    let runs = simulate(
        22_000_000,
        &[0.0, 0.12],
        |s| experiment(variants(2), vec![8], StopRule::Repeats(12), s),
        |sim| sim.transient = vec![0.0, 0.10],
    );
    let estimated = runs
        .iter()
        .filter(|r| r.out.analysis.carry_over.iter().any(|c| c.lag == 2))
        .count();
    assert_eq!(estimated, runs.len(), "every run has a lag-2 term");
    let named = warned(
        &runs,
        |w| matches!(w, Warning::Transient { after, .. } if after == "v1"),
    );
    rate_within(
        "a 10% first-half transient after v1: the warning names v1",
        named,
        runs.len(),
        (0.9, 1.0),
    );
    // No transient: the warning is rare (its own interval, 95%).
    let quiet = simulate(
        22_500_000,
        &[0.0, 0.12],
        |s| experiment(variants(2), vec![8], StopRule::Repeats(12), s),
        |_| {},
    );
    let false_alarms = warned(&quiet, |w| matches!(w, Warning::Transient { .. }));
    rate_within(
        "  no transient: a warning anyway",
        false_alarms,
        quiet.len(),
        (0.0, 0.05),
    );
}

#[test]
fn t2_noise_stalls_anywhere_a_step_and_uneven_noise_keep_coverage() {
    let exp = |s| experiment(variants(3), vec![8], StopRule::Repeats(10), s);
    let truth = [0.0, 0.05, 0.12];
    type Setup = fn(&mut SimulatedServer);
    let scenarios: [(&str, u64, Setup); 4] = [
        ("t(2) noise", 25_000_000, |sim| sim.tail_df = Some(2)),
        ("5% stalls in any variant", 25_500_000, |sim| {
            sim.stall = Some((0.05, 0.5));
            sim.stall_any = true;
        }),
        ("a 30% step half-way", 26_000_000, |sim| {
            sim.step = Some((18, 0.7))
        }),
        ("v1 with 3× the noise", 26_500_000, |sim| {
            sim.noise_of = vec![1.0, 3.0, 1.0]
        }),
    ];
    for (what, base, setup) in scenarios {
        let runs = simulate(base, &truth, exp, setup);
        for v in 1..3 {
            let k = coverage_of(&runs, v, |r| r.sim.truth_pct(v));
            rate_within(&format!("coverage, {what}, v{v}"), k, runs.len(), COVERAGE);
        }
    }
}

#[test]
fn the_robust_companion_is_chosen_by_simulation() {
    // The same paired log ratios, three intervals: the mean's (t), the 20% trimmed mean's
    // (Yuen) and Hodges–Lehmann's (signed rank). The trimmed mean is reported: it covers,
    // and it is the narrower of the two robust ones where robustness matters.
    type Setup = fn(&mut SimulatedServer);
    let scenarios: [(&str, u64, Setup); 3] = [
        ("normal noise", 27_000_000, |_| {}),
        ("t(2) noise", 27_500_000, |sim| sim.tail_df = Some(2)),
        ("5% stalls in any variant", 28_000_000, |sim| {
            sim.stall = Some((0.05, 0.5));
            sim.stall_any = true;
        }),
    ];
    for (what, base, setup) in scenarios {
        // A/A: the truth of every location is 0, whatever the noise's shape.
        let runs = simulate(
            base,
            &[0.0, 0.0],
            |s| experiment(variants(2), vec![8], StopRule::Repeats(12), s),
            setup,
        );
        let (mut cover, mut width) = ([0usize; 3], [0.0f64; 3]);
        for r in &runs {
            let logs = raw_logs(r);
            let (m, h) = mean_ci_with(&logs, t975).unwrap();
            let tm = trimmed_mean(&logs, Default::default()).unwrap();
            let hl = hodges_lehmann_test(&logs).unwrap();
            for (i, (lo, hi)) in [(m - h, m + h), (tm.lo, tm.hi), (hl.lo, hl.hi)]
                .into_iter()
                .enumerate()
            {
                cover[i] += usize::from(lo <= 0.0 && 0.0 <= hi);
                width[i] += 100.0 * (hi - lo) / 2.0 / runs.len() as f64;
            }
        }
        eprintln!(
            "{what}: mean ±{:.1} ({}/{}), trimmed mean ±{:.1} ({}), Hodges–Lehmann ±{:.1} ({})",
            width[0],
            cover[0],
            runs.len(),
            width[1],
            cover[1],
            width[2],
            cover[2]
        );
        rate_within(
            &format!("  trimmed mean covers, {what}"),
            cover[1],
            runs.len(),
            COVERAGE,
        );
        if what != "normal noise" {
            assert!(
                width[1] < width[2],
                "{what}: the trimmed mean is the narrower"
            );
            assert!(width[1] < width[0], "{what}: narrower than the mean's");
        }
    }
}

#[test]
fn an_interaction_is_covered_and_none_is_rarely_claimed() {
    let factors = two_by_two();
    // a0/d0, a0/d1, a1/d0, a1/d1: the audit costs 10% at d0 and 20% at d1 (the durability
    // level costs 5%): +10 points of interaction.
    let with = [0.0, 0.05, 0.10, 1.0 - 0.80 * 0.95];
    // And with none: costs multiply, the log-ratios add, the points differ by nothing.
    let without = [0.0, 0.05, 0.10, 1.0 - 0.90 * 0.95];
    let points = |truth: &[f64]| {
        let r = |v: usize, a: usize| (1.0 - truth[v]) / (1.0 - truth[a]);
        // The audit's cost at d1 (a1/d1 against a0/d1) minus at d0 (a1/d0 against a0/d0).
        100.0 * (r(2, 0) - r(3, 1))
    };
    for (what, truth, base) in [
        ("an interaction of +10 points", with, 29_000_000),
        ("no interaction", without, 29_500_000),
    ] {
        let t = points(&truth);
        let runs = simulate(
            base,
            &truth,
            |s| experiment(product(&factors), vec![8], StopRule::Repeats(10), s),
            |_| {},
        );
        let found: Vec<_> = runs
            .iter()
            .map(|r| r.out.analysis.interactions.first().cloned().expect("one"))
            .collect();
        assert!(found.iter().all(|i| i.factors == ["audit", "durability"]
            && i.levels == ["a1", "d1"]
            && i.against == "d0"));
        let k = found
            .iter()
            .filter(|i| i.ci95_pct[0] <= t && t <= i.ci95_pct[1])
            .count();
        rate_within(
            &format!("coverage, {what} ({t:+.1} points)"),
            k,
            runs.len(),
            COVERAGE,
        );
        let sig = found.iter().filter(|i| i.significant).count();
        if t.abs() < 1e-9 {
            rate_within("  claimed anyway", sig, runs.len(), (0.0, 0.05));
        } else {
            eprintln!("  found significant in {sig}/{}", runs.len());
        }
    }
}
