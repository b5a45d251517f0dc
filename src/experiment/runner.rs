//! The experiment loop, written against `Bench` so the same code drives a real server and the
//! simulated one that validates the statistics. After every block the cells are recomputed
//! and handed to the observer (which rewrites results.json and shows progress: an
//! interruption loses nothing).

use super::order::{self, Block, Orders};
use super::spec::{Experiment, MAX_BLOCKS, MIN_BLOCKS, StopRule};
use super::warnings::Warning;
use crate::load::TrialProgress;
use crate::results::{Cell, Trial};
use crate::rng::Rng;
use crate::server::ServerLost;
use crate::stats::overhead::half_width;
use crate::stats::summary::{CellTrials, summarize};
use anyhow::Result;
use std::time::{Duration, Instant};

/// Something trials can be run against.
pub trait Bench {
    /// Put the server into variant `variant`'s state.
    fn apply(&mut self, variant: usize, observer: &mut dyn Observer) -> Result<()>;
    /// Run one trial of the current variant at `threads`.
    fn trial(&mut self, variant: usize, threads: u32, observer: &mut dyn Observer)
    -> Result<Trial>;
}

/// A block has finished.
#[derive(Debug)]
pub struct BlockDone<'a> {
    /// Trials run so far.
    pub trials_done: usize,
    /// Trials planned (grows in precision mode).
    pub trials_planned: usize,
    /// Since the first trial started.
    pub elapsed: Duration,
    /// The block's thread count.
    pub threads: u32,
    /// Every cell, up to date.
    pub cells: &'a [Cell],
}

/// What the runner reports as it goes. Every method has a do-nothing default.
pub trait Observer {
    /// A trial is about to start (`index` counts from 0; `planned` may grow in precision mode).
    fn trial_starting(&mut self, _index: usize, _planned: usize, _variant: &str, _threads: u32) {}
    /// A sample of the running trial (a few per second).
    fn trial_progress(&mut self, _progress: &TrialProgress) {}
    /// Something slow is happening between trials (a restart).
    fn status(&mut self, _message: &str) {}
    /// A block finished.
    fn block_done(&mut self, _block: &BlockDone<'_>) -> Result<()> {
        Ok(())
    }
}

/// An observer that ignores everything (the simulations).
pub struct Silent;
impl Observer for Silent {}

/// What the loop ended with.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Final cells.
    pub cells: Vec<Cell>,
    /// The carry-over estimate the overheads were corrected by.
    pub carry_over_pct: Option<crate::results::Estimate>,
    /// The intervals Holm's adjustment was made over.
    pub intervals: u32,
    /// Things the reader should know (e.g. cells short of the precision goal).
    pub warnings: Vec<Warning>,
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
    let per_trial = order::trial_estimate(exp.trial, exp.warmup);
    let mut orders = Orders::new(nv, &exp.threads, &mut rng);
    let warmup_trials = if exp.warmup_round {
        exp.threads.len() * nv
    } else {
        0
    };
    let mut planned = warmup_trials + exp.threads.len() * nv * exp.planned_blocks() as usize;
    let mut index = 0usize;
    let mut previous: Option<usize> = None;
    if exp.warmup_round {
        observer.status("warm-up round: every variant once at every thread count, not counted");
        for Block { threads, order } in orders.round(&exp.threads, &mut rng) {
            for v in order {
                let at = Step {
                    index,
                    planned,
                    threads,
                    label: "warm-up trial",
                };
                one_trial(exp, bench, observer, v, &at)?;
                index += 1;
                previous = Some(v);
            }
        }
    }
    let mut summary = summarize(&cells);
    let mut warnings = vec![];
    for r in 0u32.. {
        let need: Vec<u32> = match &exp.stop {
            StopRule::Repeats(n) if r >= *n => vec![],
            StopRule::Repeats(_) => exp.threads.clone(),
            StopRule::Precision { points, budget } => {
                let imprecise = imprecise_threads(&summary.cells, &exp.threads, *points, r);
                let out_of_time =
                    started.elapsed() + per_trial * (nv * imprecise.len()) as u32 > *budget;
                if !imprecise.is_empty() && (out_of_time || r >= MAX_BLOCKS) {
                    warnings.push(shortfall(&summary.cells, &imprecise, *points, r));
                    vec![]
                } else {
                    imprecise
                }
            }
        };
        if need.is_empty() {
            break;
        }
        if r >= exp.planned_blocks() {
            planned = planned.max(index + need.len() * nv);
        }
        for Block { threads, order } in orders.round(&need, &mut rng) {
            for (position, v) in order.into_iter().enumerate() {
                let at = Step {
                    index,
                    planned,
                    threads,
                    label: "trial",
                };
                let mut trial = one_trial(exp, bench, observer, v, &at)?;
                trial.block = r;
                trial.position = position as u32;
                trial.after = previous.map(|p| exp.variants[p].name.clone());
                previous = Some(v);
                index += 1;
                let cell = cells
                    .iter_mut()
                    .find(|c| c.threads == threads && c.variant_index == v)
                    .expect("a cell per (threads, variant)");
                cell.trials.push(trial);
            }
            summary = summarize(&cells);
            observer.block_done(&BlockDone {
                trials_done: index,
                trials_planned: planned,
                elapsed: started.elapsed(),
                threads,
                cells: &summary.cells,
            })?;
        }
    }
    warnings.extend(super::warnings::from_summary(&summary));
    Ok(Outcome {
        cells: summary.cells,
        carry_over_pct: summary.carry_over_pct,
        intervals: summary.intervals,
        warnings,
    })
}

/// Where a trial stands in the run, for the observer and for error messages.
struct Step {
    index: usize,
    planned: usize,
    threads: u32,
    label: &'static str,
}

/// Switch to variant `v` and run one trial, saying which trial failed if one does.
fn one_trial(
    exp: &Experiment,
    bench: &mut dyn Bench,
    observer: &mut dyn Observer,
    v: usize,
    at: &Step,
) -> Result<Trial> {
    crate::interrupt::check()?;
    let name = &exp.variants[v].name;
    observer.trial_starting(at.index, at.planned, name, at.threads);
    let which = || {
        format!(
            "{} {} ({name}, {} threads)",
            at.label,
            at.index + 1,
            at.threads
        )
    };
    bench
        .apply(v, observer)
        .map_err(|e| explain(e, "before", &which()))?;
    let started_at = crate::host::now_rfc3339_ms();
    let mut trial = bench
        .trial(v, at.threads, observer)
        .map_err(|e| explain(e, "during", &which()))?;
    trial.started_at = started_at;
    Ok(trial)
}

/// Name the trial a failure happened at; a lost server is said first, in those words.
fn explain(e: anyhow::Error, when: &str, trial: &str) -> anyhow::Error {
    if crate::error::exit_code(&e) == 130 {
        return e;
    }
    match e.chain().find_map(|c| c.downcast_ref::<ServerLost>()) {
        Some(lost) => ServerLost(format!("the server went away {when} {trial}: {lost}")).into(),
        None => e.context(trial.to_string()),
    }
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

fn shortfall(cells: &[Cell], threads: &[u32], points: f64, rounds: u32) -> Warning {
    let wide = cells
        .iter()
        .filter(|c| threads.contains(&c.threads))
        .filter_map(|c| {
            let h = half_width(c.overhead.as_ref()?);
            (h > points).then(|| (c.variant.clone(), c.threads, h))
        })
        .collect();
    Warning::PrecisionShortfall {
        rounds,
        points,
        wide,
    }
}
