//! The method, validated against a known truth: the simulated server injects a known overhead
//! plus per-trial noise and a drifting machine. Over many seeded experiments the 95% interval
//! must contain the truth about 95% of the time, and an A/A experiment must be "significant"
//! only about 5% of the time.

use dbtax::experiment::runner::{self, Silent as Quiet};
use dbtax::experiment::sim::SimulatedServer;
use dbtax::experiment::spec::{Experiment, StopRule, variants_for_features};
use dbtax::results::Cell;
use dbtax::workload::Workload;
use std::time::Duration;

fn experiment(variants: usize, stop: StopRule, seed: u64) -> Experiment {
    let mut v = variants_for_features(&["general-log".to_string(), "slow-log".to_string()]);
    v.truncate(variants);
    Experiment {
        name: "sim".into(),
        target: None,
        workload: Workload::default(),
        threads: vec![8],
        trial: Duration::from_secs(3),
        warmup: Duration::from_secs(1),
        stop,
        variants: v,
        max_log_bytes: None,
        seed,
        queries_per_trial: None,
        managed_server_opts: vec![],
    }
}

/// Run `n` seeded experiments; return each variant-1 cell.
fn simulate(n: u64, truth: &[f64], blocks: u32, noise: f64, drift: f64) -> Vec<Cell> {
    (0..n)
        .map(|seed| {
            let exp = experiment(truth.len(), StopRule::Repeats(blocks), seed);
            let mut sim = SimulatedServer::new(seed, truth.to_vec(), noise, drift);
            let out = runner::run(&exp, &mut sim, &mut Quiet).unwrap();
            out.cells
                .into_iter()
                .find(|c| c.variant == exp.variants[1].name)
                .unwrap()
        })
        .collect()
}

#[test]
fn ci_contains_the_true_overhead_about_95_percent_of_the_time() {
    let truth = 12.0;
    let cells = simulate(400, &[0.0, truth / 100.0], 8, 0.06, 0.04);
    let covered = cells
        .iter()
        .filter(|c| {
            let o = c.overhead.as_ref().unwrap();
            o.ci95_pct[0] <= truth && truth <= o.ci95_pct[1]
        })
        .count();
    let rate = covered as f64 / cells.len() as f64;
    eprintln!(
        "coverage of the true overhead: {covered}/{} = {rate:.3}",
        cells.len()
    );
    assert!(
        (0.90..=0.98).contains(&rate),
        "coverage {rate:.3} outside 90–98%"
    );
    // And the estimate is centred on the truth, not just wide.
    let mean: f64 = cells
        .iter()
        .map(|c| c.overhead.as_ref().unwrap().pct)
        .sum::<f64>()
        / cells.len() as f64;
    assert!(
        (mean - truth).abs() < 1.0,
        "mean estimate {mean:.2} vs truth {truth}"
    );
}

#[test]
fn a_a_experiments_are_significant_at_most_8_percent_of_the_time() {
    let cells = simulate(400, &[0.0, 0.0], 8, 0.06, 0.04);
    let significant = cells
        .iter()
        .filter(|c| c.overhead.as_ref().unwrap().significant)
        .count();
    let rate = significant as f64 / cells.len() as f64;
    eprintln!("A/A significant: {significant}/{} = {rate:.3}", cells.len());
    assert!(rate <= 0.08, "A/A false positive rate {rate:.3} above 8%");
    assert!(
        rate >= 0.01,
        "A/A false positive rate {rate:.3}: the interval is too wide to be a 95% interval"
    );
}

#[test]
fn a_real_overhead_is_detected_when_it_is_well_above_the_noise() {
    let cells = simulate(100, &[0.0, 0.15], 8, 0.04, 0.02);
    let detected = cells
        .iter()
        .filter(|c| c.overhead.as_ref().unwrap().significant)
        .count();
    assert!(
        detected >= 95,
        "a 15% overhead with 4% noise was detected in {detected} of 100"
    );
}

#[test]
fn precision_mode_adds_blocks_until_the_interval_is_narrow_enough() {
    let exp = experiment(
        2,
        StopRule::Precision {
            points: 2.0,
            budget: Duration::from_secs(60),
        },
        7,
    );
    let mut sim = SimulatedServer::new(7, vec![0.0, 0.10], 0.05, 0.02);
    let out = runner::run(&exp, &mut sim, &mut Quiet).unwrap();
    let cell = out
        .cells
        .iter()
        .find(|c| c.variant == "general-log")
        .unwrap();
    let o = cell.overhead.as_ref().unwrap();
    assert!((o.ci95_pct[1] - o.ci95_pct[0]) / 2.0 <= 2.0, "{o:?}");
    assert!(
        o.blocks > 3,
        "noise of 5% needs more than the minimum of 3 blocks: {o:?}"
    );
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
}

#[test]
fn server_cpu_gives_a_second_estimate_of_the_cost() {
    let cells = simulate(1, &[0.0, 0.20], 6, 0.05, 0.02);
    let d = cells[0].server_cpu_delta_us.as_ref().unwrap();
    // The simulator charges 20 µs / (1 − overhead): 5 µs more per query at 20%.
    assert!(d.ci95[0] < 5.0 && 5.0 < d.ci95[1], "{d:?}");
}
