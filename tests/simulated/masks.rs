//! No pattern of set-aside blocks makes any figure panic. Simulated runs of several designs
//! (2 to 6 variants, 1 to 4 thread counts, a 2×2 factorial) are summarized again under
//! thousands of random exclusion masks (whole blocks set aside, a whole cell, a whole
//! variant, every block of a thread count, everything), and every view is rendered from each:
//! the words, the table, the CSV, the HTML, the warnings. A cell left without pairs must say
//! "too few blocks", never give an interval. Then whole runs whose machine is busy in most
//! trials go through the runner itself, the set-aside path included.

use super::*;
use dbtax::results::{DisturbedBlock, Trial};
use dbtax::rng::Rng;
use dbtax::stats::summary::{CellTrials, summarize};
/// Fewer paired blocks than this give "too few blocks", never an interval.
use dbtax_stats::intervals::overhead::MIN_BLOCKS as MIN_PAIRS;
use dbtax_stats::run::Outcome;

/// The designs: (variants, thread counts), and a 2×2 factorial at two thread counts.
fn designs() -> Vec<(Vec<VariantSpec>, Vec<u32>)> {
    let mut out = vec![
        (variants(2), vec![8]),
        (variants(2), vec![1, 4, 16, 64]),
        (variants(3), vec![2, 8]),
        (variants(4), vec![4]),
        (variants(6), vec![1, 8, 32]),
    ];
    out.push((product(&two_by_two()), vec![4, 16]));
    out
}

/// The runner's cells of `exp`, each with the trials `keep` lets through from `out`.
fn cells_of(exp: &Design, out: &Outcome, keep: &dyn Fn(usize, &Trial) -> bool) -> Vec<CellTrials> {
    exp.threads
        .iter()
        .enumerate()
        .flat_map(|(point, &threads)| {
            exp.variants
                .iter()
                .enumerate()
                .map(move |(i, v)| (point, threads, i, v))
        })
        .enumerate()
        .map(|(n, (point, threads, i, v))| {
            let cell = out
                .cells
                .iter()
                .find(|c| c.variant == v.name && c.threads == threads)
                .expect("a cell per (variant, threads)");
            CellTrials {
                variant: v.name.clone(),
                baseline: v.baseline,
                variant_index: i,
                threads,
                point,
                rate: None,
                trials: cell.trials.iter().filter(|t| keep(n, t)).cloned().collect(),
                effects: v.effects.clone(),
                levels: v.levels.clone(),
            }
        })
        .collect()
}

/// Every view of `r`, rendered (each must return, whatever the cells hold).
fn render_all(r: &Results) -> usize {
    let mut n = 0;
    n += dbtax::report::table(r).len();
    n += dbtax::report::csv::render(r).len();
    n += dbtax::report::html(r).len();
    n += dbtax::report::headlines(r).concat().len();
    n += serde_json::to_string(r).expect("serializes").len();
    n
}

#[test]
fn no_pattern_of_set_aside_blocks_makes_a_figure_panic() {
    let mut rng = Rng::new(77_000_000);
    let mut masks = 0;
    let mut empty_cells = 0;
    for (d, (vs, threads)) in designs().into_iter().enumerate() {
        for seed in 0..3u64 {
            let seed = 77_000_000 + 100 * d as u64 + seed;
            let exp = experiment(vs.clone(), threads.clone(), StopRule::Repeats(5), seed);
            let truth: Vec<f64> = (0..vs.len()).map(|i| 0.03 * i as f64).collect();
            let mut sim = SimulatedServer::new(seed, truth, 0.06, 0.04);
            sim.carry_from_every_feature(0.3);
            let out = runner::run(&exp, &mut sim, &mut Silent).unwrap();
            let ncells = exp.threads.len() * exp.variants.len();
            for m in 0..120 {
                // Kinds of mask: random blocks, a cell, a variant, a thread count, all.
                let p = rng.unit();
                let lost_cell = rng.range(0, ncells as u64 - 1) as usize;
                let lost_variant = rng.range(0, exp.variants.len() as u64 - 1) as usize;
                let lost_point = rng.range(0, exp.threads.len() as u64 - 1) as usize;
                let blocks: Vec<bool> = (0..12).map(|_| rng.unit() < p).collect();
                let kind = m % 5;
                let nv = exp.variants.len();
                let keep = |n: usize, t: &Trial| match kind {
                    0 => !blocks[t.block as usize % 12],
                    1 => n != lost_cell && !blocks[t.block as usize % 12],
                    2 => n % nv != lost_variant,
                    3 => n / nv != lost_point,
                    _ => false,
                };
                let cells = cells_of(&exp, &out, &keep);
                let mut summary = summarize(&cells);
                let warnings = dbtax_stats::design::warnings::from_summary(&summary);
                // The masked trials as the runner records them: set aside, blocks listed.
                let all = cells_of(&exp, &out, &|_, _| true);
                for (cell, whole) in summary.cells.iter_mut().zip(&all) {
                    cell.disturbed_trials = whole
                        .trials
                        .iter()
                        .filter(|t| !cells.iter().any(|c| c.trials.contains(t)))
                        .cloned()
                        .collect();
                }
                summary.analysis.disturbed_blocks = (0..5)
                    .filter(|b| blocks[*b as usize])
                    .map(|b| DisturbedBlock {
                        block: b,
                        threads: exp.threads[0],
                        worst_pct: 80.0,
                        typical_pct: 5.0,
                        host: "server".into(),
                        ..Default::default()
                    })
                    .collect();
                let masked = Outcome {
                    cells: summary.cells,
                    analysis: summary.analysis,
                    warnings,
                    calibration: vec![],
                    capacity: vec![],
                };
                for (c, ct) in masked.cells.iter().zip(&cells) {
                    let pairs = ct.trials.len();
                    if let (Some(o), true) = (&c.overhead, pairs < MIN_PAIRS) {
                        panic!(
                            "{} at {} threads: an interval from {pairs} kept blocks: {o:?}",
                            c.variant, c.threads
                        );
                    }
                    empty_cells += usize::from(pairs == 0);
                }
                assert!(render_all(&results(&exp, &masked)) > 0);
                masks += 1;
            }
        }
    }
    eprintln!("{masks} masks over 6 designs, {empty_cells} cells left with no kept block");
    assert!(masks >= 2000 && empty_cells > 0);
}

/// The runner's own set-aside path: a machine busy in most trials (a disturbance starting
/// in 60% of them, each lasting 3 trials on average), every design. Every run ends, a cell
/// with fewer than the minimum of kept blocks has no interval, and runs whose blocks were
/// mostly disturbed say the machine was busy throughout.
#[test]
fn a_run_whose_blocks_are_mostly_set_aside_ends_with_words_not_a_panic() {
    let mut runs = 0;
    let mut short = 0;
    let mut busy = 0;
    for (d, (vs, threads)) in designs().into_iter().enumerate() {
        for seed in 0..10u64 {
            let seed = 78_000_000 + 100 * d as u64 + seed;
            let mut exp = experiment(vs.clone(), threads.clone(), StopRule::Repeats(4), seed);
            exp.max_disturbance = Some(10.0);
            let mut sim = SimulatedServer::new(seed, vec![0.0; vs.len()], 0.06, 0.04);
            sim.disturbance = Some((0.6, 0.5));
            let out = runner::run(&exp, &mut sim, &mut Silent).unwrap();
            for c in &out.cells {
                let kept = c.trials.len();
                assert!(c.overhead.is_none() || kept >= MIN_PAIRS);
                short += usize::from(kept < MIN_PAIRS);
            }
            // A machine this busy is said to be busy throughout, its blocks kept.
            busy += usize::from(out.warnings.iter().any(|w| {
                matches!(
                    w,
                    dbtax_stats::design::warnings::Warning::BusyThroughout { .. }
                )
            }));
            assert!(render_all(&results(&exp, &out)) > 0);
            runs += 1;
        }
    }
    eprintln!(
        "{runs} busy runs: {busy} said busy throughout, {short} cells short of {MIN_PAIRS} \
         kept blocks"
    );
    assert!(
        busy > 0,
        "no run was said busy throughout: the scenario tests nothing"
    );
}
