//! The experiment loop, written against `Bench` so the same code drives a real server and the
//! simulated one that validates the statistics. After every block the cells are recomputed
//! and handed to the observer (which rewrites results.json: an interruption loses nothing).

use super::plan::{self, Block};
use super::spec::{Experiment, MAX_BLOCKS, MIN_BLOCKS, StopRule};
use crate::results::{Cell, Trial};
use crate::rng::Rng;
use crate::stats::overhead::half_width;
use crate::stats::summary::{CellTrials, summarize};
use anyhow::Result;
use std::time::Instant;

/// Something trials can be run against.
pub trait Bench {
    /// Put the server into variant `variant`'s state.
    fn apply(&mut self, variant: usize) -> Result<()>;
    /// Run one trial of the current variant at `threads`.
    fn trial(&mut self, variant: usize, threads: u32) -> Result<Trial>;
}

/// What the runner reports as it goes.
pub trait Observer {
    /// A trial is about to start (`index` counts from 0; `planned` may grow in precision mode).
    fn trial_starting(&mut self, index: usize, planned: usize, variant: &str, threads: u32);
    /// A block finished; `cells` are the up-to-date summaries.
    fn block_done(&mut self, cells: &[Cell]) -> Result<()>;
}

/// What the loop ended with.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Final cells.
    pub cells: Vec<Cell>,
    /// Messages for results.json `warnings` (e.g. cells short of the precision goal).
    pub warnings: Vec<String>,
}

/// Run an experiment to its stop rule. On error (or interrupt) the error is returned; the
/// observer has already seen every completed block.
pub fn run(
    exp: &Experiment,
    bench: &mut dyn Bench,
    observer: &mut dyn Observer,
) -> Result<Outcome> {
    let mut rng = Rng::new(exp.seed);
    let nv = exp.variants.len();
    let mut cells: Vec<CellTrials> = exp
        .threads
        .iter()
        .flat_map(|&t| {
            exp.variants
                .iter()
                .enumerate()
                .map(move |(i, v)| CellTrials {
                    variant: v.name.clone(),
                    baseline: v.baseline,
                    variant_index: i,
                    threads: t,
                    trials: vec![],
                    effects: v.effects.clone(),
                })
        })
        .collect();
    let started = Instant::now();
    let per_trial = plan::trial_estimate(exp.trial, exp.warmup);
    let mut planned = exp.threads.len() * nv * exp.planned_blocks() as usize;
    let mut index = 0usize;
    let mut summaries = summarize(&cells);
    let mut warnings = vec![];
    for r in 0.. {
        let need: Vec<u32> = match &exp.stop {
            StopRule::Repeats(n) if r >= *n => vec![],
            StopRule::Repeats(_) => exp.threads.clone(),
            StopRule::Precision { points, budget } => {
                let imprecise = imprecise_threads(&summaries, &exp.threads, *points, r);
                let out_of_time =
                    started.elapsed() + per_trial * (nv * imprecise.len()) as u32 > *budget;
                if !imprecise.is_empty() && (out_of_time || r >= MAX_BLOCKS) {
                    warnings.push(shortfall(&summaries, &imprecise, *points, r));
                    vec![]
                } else {
                    imprecise
                }
            }
        };
        if need.is_empty() {
            break;
        }
        if r as usize >= exp.planned_blocks() as usize {
            planned = planned.max(index + need.len() * nv);
        }
        for Block { threads, order } in plan::round(&need, nv, &mut rng) {
            for v in order {
                crate::interrupt::check()?;
                observer.trial_starting(index, planned, &exp.variants[v].name, threads);
                bench.apply(v)?;
                let trial = bench.trial(v, threads)?;
                index += 1;
                let cell = cells
                    .iter_mut()
                    .find(|c| c.threads == threads && c.variant_index == v)
                    .expect("a cell per (threads, variant)");
                cell.trials.push(trial);
            }
            summaries = summarize(&cells);
            observer.block_done(&summaries)?;
        }
    }
    Ok(Outcome {
        cells: summaries,
        warnings,
    })
}

/// Thread counts with a non-baseline cell wider than `points` (every thread count until the
/// minimum number of blocks has run).
fn imprecise_threads(cells: &[Cell], threads: &[u32], points: f64, round: u32) -> Vec<u32> {
    threads
        .iter()
        .copied()
        .filter(|&t| {
            round < MIN_BLOCKS
                || cells
                    .iter()
                    .filter(|c| c.threads == t)
                    .any(|c| c.overhead.as_ref().is_some_and(|o| half_width(o) > points))
        })
        .collect()
}

fn shortfall(cells: &[Cell], threads: &[u32], points: f64, rounds: u32) -> String {
    let wide: Vec<String> = cells
        .iter()
        .filter(|c| threads.contains(&c.threads))
        .filter_map(|c| {
            let o = c.overhead.as_ref()?;
            (half_width(o) > points).then(|| {
                format!(
                    "{} at {} threads (±{:.1})",
                    c.variant,
                    c.threads,
                    half_width(o)
                )
            })
        })
        .collect();
    format!(
        "the time budget ran out after {rounds} blocks before every interval reached ±{points} points: {}",
        wide.join(", ")
    )
}
