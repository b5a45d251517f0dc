//! The experiment loop, written against `Bench` so the same code drives a real server and the
//! simulated one that validates the statistics. After every block the cells are recomputed
//! and handed to the observer (which rewrites results.json and shows progress: an
//! interruption loses nothing).

pub mod capacity;
pub mod hooks;

use crate::ServerLost;
use crate::design::Rate;
use crate::design::disturbed::{disturbance, others_of, with_set_aside};
use crate::design::order::{self, Block, Orders};
use crate::design::stop::{all, shortfall, still_needed};
use crate::design::warnings::Warning;
use crate::design::{Design, MAX_BLOCKS, Point, RateLevel, StopRule};
use crate::results::{Calibration, Cell, DisturbedBlock, Trial};
use crate::rng::Rng;

use crate::intervals::verdict;
use crate::stats::summary::{CellTrials, summarize};
use anyhow::Result;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Where a trial runs: client threads, and in rate mode the schedule's rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoadPoint {
    /// Client threads.
    pub threads: u32,
    /// Open loop at this rate; None: closed loop.
    pub rate: Option<Rate>,
}

/// A progress sample, passed to the caller's display.
#[derive(Debug, Clone)]
pub struct TrialProgress {
    /// True while measuring, false while settling.
    pub measuring: bool,
    /// Time in the current phase.
    pub elapsed: Duration,
    /// Planned length of the current phase (zero in queries mode).
    pub planned: Duration,
    /// Events per second over the last sample interval.
    pub events_per_s: f64,
    /// Fraction of the query quota done (queries mode).
    pub quota_done: Option<f64>,
    /// Rate mode: the asked rate, events/s.
    pub asked_per_s: Option<f64>,
    /// Rate mode: the largest current schedule lag over the workers, ms.
    pub lag_ms: Option<f64>,
}

/// Something trials can be run against.
pub trait Bench {
    /// Put the server into variant `variant`'s state.
    fn apply(&mut self, variant: usize, observer: &mut dyn Observer) -> Result<()>;
    /// Run one trial of the current variant under `load`.
    fn trial(
        &mut self,
        variant: usize,
        load: &LoadPoint,
        observer: &mut dyn Observer,
    ) -> Result<Trial>;
    /// Rate mode's calibration: a closed-loop trial of the current variant at `threads`,
    /// whose events per second are the capacity a rate level's share is taken of.
    fn calibrate(&mut self, threads: u32, observer: &mut dyn Observer) -> Result<Trial>;
    /// The time the run has taken so far on this bench's own clock (the simulated server's,
    /// whose trials take no time); None: the wall clock.
    fn elapsed(&self) -> Option<Duration> {
        None
    }
    /// A reading of the server's host came late and cost the trial under way: switch the
    /// features off (the baseline's settings: an unwatched log must not keep growing) and
    /// wait until the probe answers again; Err once it has been silent past its bound (the
    /// run stops).
    fn after_late_reading(&mut self, _observer: &mut dyn Observer) -> Result<()> {
        Ok(())
    }
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
    /// Rate mode: the capacity measured at each thread count before the first trial.
    pub calibration: &'a [Calibration],
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
    /// A capacity search's block finished (`--slo`): each variant's capacity at each
    /// objective so far, its intervals Holm-adjusted as at the end.
    fn capacities(&mut self, _so_far: &[crate::results::Capacity]) -> Result<()> {
        Ok(())
    }
    /// Whether `block_done` wants the cells after every block (results.json, the display);
    /// otherwise they are computed only when the stop rule needs them.
    fn wants_blocks(&self) -> bool {
        true
    }
}

/// An observer that ignores everything (the simulations).
pub struct Silent;
impl Observer for Silent {
    fn wants_blocks(&self) -> bool {
        false
    }
}

/// What the loop ended with.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Final cells.
    pub cells: Vec<Cell>,
    /// Carry-over, interactions, transients, the Holm family's size.
    pub analysis: crate::results::Analysis,
    /// Things the reader should know (e.g. cells short of the precision goal).
    pub warnings: Vec<Warning>,
    /// Rate mode: the capacity measured at each thread count.
    pub calibration: Vec<Calibration>,
    /// `--slo`: each variant's capacity at each objective.
    pub capacity: Vec<crate::results::Capacity>,
}

/// Rate mode: measure the baseline's closed-loop capacity at every thread count, when a
/// rate level is a share of it.
fn calibrate(
    exp: &Design,
    bench: &mut dyn Bench,
    observer: &mut dyn Observer,
) -> Result<Vec<Calibration>> {
    if !exp
        .open_loop
        .as_ref()
        .is_some_and(|o| o.needs_calibration())
    {
        return Ok(vec![]);
    }
    observer.status(&format!(
        "calibration: the capacity of '{}' in closed loop at each thread count (not counted)",
        exp.variants[0].name
    ));
    bench
        .apply(0, observer)
        .map_err(|e| explain(e, "before", "the calibration"))?;
    let mut out = vec![];
    for &threads in &exp.threads {
        (hooks::get().check_interrupt)()?;
        let t = bench.calibrate(threads, observer).map_err(|e| {
            explain(
                e,
                "during",
                &format!("the calibration at {threads} threads"),
            )
        })?;
        observer.status(&format!(
            "  {threads} threads: {:.0} events/s ({:.0} queries/s)",
            t.tps, t.qps
        ));
        out.push(Calibration::of(threads, &t));
    }
    Ok(out)
}

/// The asked rate of a point: its level, and the events per second it comes to.
fn asked(exp: &Design, point: &Point, calibration: &[Calibration]) -> Option<(String, f64)> {
    let level = exp.open_loop.as_ref()?.levels[point.rate?];
    let per_second = match level {
        RateLevel::PerSecond(r) => r,
        RateLevel::Capacity(f) => {
            f * calibration
                .iter()
                .find(|c| c.threads == point.threads)
                .map(|c| c.capacity_tps)
                .unwrap_or(0.0)
        }
    };
    Some((level.label(), per_second.max(1.0)))
}

/// Run an experiment to its stop rule. On error (or interrupt) the error is returned; the
/// observer has already seen every completed block.
pub fn run(exp: &Design, bench: &mut dyn Bench, observer: &mut dyn Observer) -> Result<Outcome> {
    let calibration = calibrate(exp, bench, observer)?;
    let mut run = Loop::new(exp, calibration);
    if exp.warmup_round {
        run.warmup_round(bench, observer)?;
        run.orders.start_counting();
    }
    for r in 0u32.. {
        let need = run.needed(r, bench);
        if need.is_empty() {
            break;
        }
        run.round(r, &need, bench, observer)?;
    }
    Ok(run.finish())
}

/// The loop's state: the cells and what the stop rules, the disturbance rule and the
/// carry-over columns need to remember from one block to the next.
struct Loop<'e> {
    exp: &'e Design,
    rng: Rng,
    calibration: Vec<Calibration>,
    /// Every load point (a thread count, or a thread count and a rate), and in rate mode its
    /// level's label and events per second.
    points: Vec<Point>,
    rates: Vec<Option<(String, f64)>>,
    /// Blocks are keyed by point (index).
    keys: Vec<u32>,
    orders: Orders,
    /// The kept trials of every (point, variant).
    cells: Vec<CellTrials>,
    summary: crate::stats::summary::Summary,
    warnings: Vec<Warning>,
    started: Instant,
    /// Trials run so far (warm-up too), and planned (grows in precision mode).
    index: usize,
    planned: usize,
    /// The variants of the last two trials (the carry-over columns).
    previous: Option<usize>,
    before_previous: Option<usize>,
    /// Other processes' CPU in every trial so far (warm-up too): the run's typical level,
    /// above which a trial is disturbed.
    seen: Vec<f64>,
    /// Disturbed blocks: their trials (parallel to `cells`), and their records.
    set_aside: Vec<Vec<Trial>>,
    disturbed: Vec<DisturbedBlock>,
    /// Blocks that lost a trial to a late reading of the server's host (their trials are
    /// dropped: a block short of a variant pairs nothing).
    late: Vec<DisturbedBlock>,
    /// Each point's blocks that count, and its blocks set aside.
    counted: Vec<u32>,
    set_aside_at: Vec<u32>,
    /// Precision mode: each cell's half-width after its first-stage blocks.
    stage: BTreeMap<(u32, usize), f64>,
}

impl<'e> Loop<'e> {
    fn new(exp: &'e Design, calibration: Vec<Calibration>) -> Loop<'e> {
        let mut rng = Rng::new(exp.seed);
        let points = exp.points();
        let rates: Vec<Option<(String, f64)>> =
            points.iter().map(|p| asked(exp, p, &calibration)).collect();
        let cells: Vec<CellTrials> = points
            .iter()
            .enumerate()
            .flat_map(|(point, p)| {
                let rate = rates[point].clone();
                exp.variants
                    .iter()
                    .enumerate()
                    .map(move |(i, v)| CellTrials {
                        variant: v.name.clone(),
                        baseline: v.baseline,
                        variant_index: i,
                        threads: p.threads,
                        point,
                        rate: rate.clone(),
                        trials: vec![],
                        effects: v.effects.clone(),
                        levels: v.levels.clone(),
                    })
            })
            .collect();
        let keys: Vec<u32> = (0..points.len() as u32).collect();
        let orders = Orders::new(exp.variants.len(), &keys, exp.one_each_blocks, &mut rng);
        let warmup_trials = if exp.warmup_round {
            points.len() * orders.block_len()
        } else {
            0
        };
        Loop {
            exp,
            rng,
            calibration,
            summary: summarize(&cells),
            set_aside: vec![vec![]; cells.len()],
            counted: vec![0; keys.len()],
            set_aside_at: vec![0; keys.len()],
            planned: warmup_trials + exp.planned_trials(),
            points,
            rates,
            keys,
            orders,
            cells,
            warnings: vec![],
            started: Instant::now(),
            index: 0,
            previous: None,
            before_previous: None,
            seen: vec![],
            disturbed: vec![],
            late: vec![],
            stage: BTreeMap::new(),
        }
    }

    /// Where point `point`'s trials run.
    fn load(&self, point: usize) -> LoadPoint {
        LoadPoint {
            threads: self.points[point].threads,
            rate: self.rates[point].as_ref().map(|(_, per_second)| {
                let o = self
                    .exp
                    .open_loop
                    .as_ref()
                    .expect("a rate level is rate mode");
                Rate {
                    per_second: *per_second,
                    arrival: o.arrival,
                    skip_late: o.skip_late,
                }
            }),
        }
    }

    /// A block at every point, not counted.
    fn warmup_round(&mut self, bench: &mut dyn Bench, observer: &mut dyn Observer) -> Result<()> {
        observer.status("warm-up round: a block at every thread count, not counted");
        for Block { point, order } in self.orders.round(&self.keys, &mut self.rng) {
            for v in order {
                let at = Step {
                    index: self.index,
                    planned: self.planned,
                    load: self.load(point as usize),
                    label: "warm-up trial",
                };
                let t = match one_trial(self.exp, bench, observer, v, &at) {
                    Ok(t) => t,
                    // Not counted anyway: the warm-up goes on once the probe answers.
                    Err(e) => match (hooks::get().trial_lost)(&e) {
                        Some(words) => {
                            observer.status(&format!(
                                "a warm-up trial was lost: {words}; the features are switched \
                                 off until the probe answers"
                            ));
                            bench.after_late_reading(observer)?;
                            self.index += 1;
                            continue;
                        }
                        None => return Err(e),
                    },
                };
                self.seen.extend(others_of(&t).map(|(p, _)| p));
                self.index += 1;
                self.before_previous = self.previous;
                self.previous = Some(v);
            }
        }
        Ok(())
    }

    /// Round `r`'s blocks by the stop rule: each point that needs one, and the variants it
    /// runs (all, or in precision mode those still too wide and their baselines). Empty: stop.
    fn needed(&mut self, r: u32, bench: &dyn Bench) -> Vec<(u32, Vec<usize>)> {
        let exp = self.exp;
        let nv = exp.variants.len();
        match &exp.stop {
            // A disturbed block is run again, while the rounds run are fewer than twice the
            // repeats planned (a two-variant block is two repeats, and its four trials are
            // more often touched by a disturbance: it gets the same rounds).
            StopRule::Repeats(n) if r >= (2 * n).min(MAX_BLOCKS) => vec![],
            StopRule::Repeats(n) => self
                .keys
                .iter()
                .filter(|&&k| self.counted[k as usize] < *n)
                .map(|&k| (k, all(nv)))
                .collect(),
            StopRule::Precision {
                points,
                budget,
                focus,
            } => {
                let need = still_needed(
                    exp,
                    &self.summary.cells,
                    (*points, *focus),
                    &self.counted,
                    &mut self.stage,
                );
                let trials: usize = need.iter().map(|(_, vs)| vs.len()).sum();
                let elapsed = bench.elapsed().unwrap_or_else(|| self.started.elapsed());
                // What a trial has taken so far (settles end early), else the estimate.
                let per_trial = match self.index {
                    0 => order::trial_estimate(exp.trial, exp.warmup),
                    done => elapsed / done as u32,
                };
                let out_of_time = elapsed + per_trial * trials as u32 > *budget;
                // Out of time, a load point still short of its minimum runs it once (a point
                // that has it stops), but a block set aside is not run again: re-runs come
                // out of the budget like every trial.
                let done: Vec<u32> = need
                    .iter()
                    .map(|(k, _)| *k)
                    .filter(|&k| {
                        let k = k as usize;
                        self.counted[k] + self.set_aside_at[k]
                            >= exp.planned_blocks_at(self.points[k].threads)
                    })
                    .collect();
                if !done.is_empty() && (out_of_time || r >= MAX_BLOCKS) {
                    let done_threads: Vec<u32> = done
                        .iter()
                        .map(|&k| self.points[k as usize].threads)
                        .collect();
                    self.warnings
                        .push(shortfall(&self.summary.cells, &done_threads, *points, r));
                    need.into_iter()
                        .filter(|(k, _)| !done.contains(k))
                        .collect()
                } else {
                    need
                }
            }
        }
    }

    /// Run round `r`: a block at each point that `need`s one, in random order.
    fn round(
        &mut self,
        r: u32,
        need: &[(u32, Vec<usize>)],
        bench: &mut dyn Bench,
        observer: &mut dyn Observer,
    ) -> Result<()> {
        let round_keys: Vec<u32> = need.iter().map(|(k, _)| *k).collect();
        self.planned = self
            .planned
            .max(self.index + need.iter().map(|(_, vs)| vs.len()).sum::<usize>());
        for Block { point, mut order } in self.orders.round(&round_keys, &mut self.rng) {
            let keep = &need.iter().find(|(k, _)| *k == point).expect("asked for").1;
            order.retain(|v| keep.contains(v));
            self.block(r, point as usize, order, bench, observer)?;
        }
        if !observer.wants_blocks() {
            // The stop rule reads the cells once a round.
            self.summary = summarize(&self.cells);
        }
        Ok(())
    }

    /// One block of round `r` at `point`: its trials in `order`, then kept, set aside as
    /// disturbed, or dropped for a late reading.
    fn block(
        &mut self,
        r: u32,
        point: usize,
        order: Vec<usize>,
        bench: &mut dyn Bench,
        observer: &mut dyn Observer,
    ) -> Result<()> {
        let exp = self.exp;
        let mut ran = vec![];
        let mut lost = None;
        // What the block counts for: each variant's trials in it (two in a two-variant
        // block, `order::extra_period`).
        let repeats = {
            let mut distinct = order.clone();
            distinct.sort_unstable();
            distinct.dedup();
            (order.len() / distinct.len().max(1)) as u32
        };
        for (position, v) in order.into_iter().enumerate() {
            let at = Step {
                index: self.index,
                planned: self.planned,
                load: self.load(point),
                label: "trial",
            };
            let mut trial = match one_trial(exp, bench, observer, v, &at) {
                Ok(t) => t,
                Err(e) => match (hooks::get().trial_lost)(&e) {
                    Some(words) => {
                        lost = Some(words);
                        break;
                    }
                    None => return Err(e),
                },
            };
            self.seen.extend(others_of(&trial).map(|(p, _)| p));
            trial.block = r;
            trial.position = position as u32;
            trial.after = self.previous.map(|p| exp.variants[p].name.clone());
            trial.after2 = self.before_previous.map(|p| exp.variants[p].name.clone());
            self.before_previous = self.previous;
            self.previous = Some(v);
            self.index += 1;
            let cell = self
                .cells
                .iter()
                .position(|c| c.point == point && c.variant_index == v)
                .expect("a cell per (point, variant)");
            self.cells[cell].trials.push(trial);
            ran.push(cell);
        }
        let threads = self.points[point].threads;
        let rate = self.rates[point].as_ref().map(|(level, _)| level.clone());
        let typical = crate::design::disturbed::typical(&self.seen);
        if let Some(why) = lost {
            for &cell in &ran {
                self.cells[cell].trials.pop().expect("this block's trial");
            }
            self.set_aside_at[point] += repeats;
            self.orders.set_aside(point as u32);
            observer.status(&format!(
                "block {} at {threads} threads set aside: {why}; the features are switched off \
                 until it answers, and the block is run again while the run allows",
                r + 1,
            ));
            self.late.push(DisturbedBlock {
                block: r,
                threads,
                rate,
                worst_pct: 0.0,
                typical_pct: typical,
                host: "server".into(),
                late_reading: Some(why),
            });
            bench.after_late_reading(observer)?;
        } else {
            match disturbance(exp, &self.cells, &ran, typical) {
                Some((worst_pct, host)) => {
                    // The whole block, never single trials: which variants ran in a
                    // disturbed moment must not decide which are kept.
                    for &cell in &ran {
                        let t = self.cells[cell].trials.pop().expect("this block's trial");
                        self.set_aside[cell].push(t);
                    }
                    self.set_aside_at[point] += repeats;
                    self.orders.set_aside(point as u32);
                    self.disturbed.push(DisturbedBlock {
                        block: r,
                        threads,
                        rate,
                        worst_pct,
                        typical_pct: typical,
                        host: host.into(),
                        late_reading: None,
                    });
                    observer.status(&format!(
                        "block {} at {threads} threads set aside: other processes used \
                         {worst_pct:.0}% of a core on the {host}'s host; it is run again while \
                         the run allows",
                        r + 1,
                    ));
                }
                None => self.counted[point] += repeats,
            }
        }
        if !observer.wants_blocks() {
            return Ok(());
        }
        self.summary = self.summary_now();
        observer.block_done(&BlockDone {
            trials_done: self.index,
            trials_planned: self.planned,
            elapsed: self.started.elapsed(),
            threads,
            cells: &self.summary.cells,
            calibration: &self.calibration,
        })
    }

    /// The cells from the kept trials, with the set-aside blocks recorded and each
    /// overhead's verdict.
    fn summary_now(&self) -> crate::stats::summary::Summary {
        let mut summary = with_set_aside(
            summarize(&self.cells),
            &self.set_aside,
            &[&self.disturbed[..], &self.late[..]].concat(),
            self.exp,
        );
        summary.analysis.negligible_pct = self.exp.negligible;
        verdict::assign(
            &mut summary.cells,
            self.exp.negligible.unwrap_or(verdict::NEGLIGIBLE_PCT),
        );
        summary
    }

    /// Each point's blocks the stop rule asked for.
    fn blocks_asked(&self, k: usize) -> u32 {
        match self.exp.stop {
            StopRule::Repeats(n) => n,
            StopRule::Precision { .. } => self.exp.planned_blocks_at(self.points[k].threads),
        }
    }

    /// The outcome: the cells, and the warnings a reader needs (late readings, disturbed
    /// blocks, a machine busy throughout, the summary's own).
    fn finish(mut self) -> Outcome {
        let exp = self.exp;
        // Re-runs over and points still short, with most blocks set aside: the machine was
        // busy throughout, not now and then. The run keeps every block (a disturbance that is
        // always there hits every variant alike), gives its figures and says how busy it was.
        let short_points = (0..self.keys.len()).any(|k| self.counted[k] < self.blocks_asked(k));
        // (`counted` is in repeats: a two-variant block is two.)
        let kept_blocks =
            (self.counted.iter().sum::<u32>() / exp.repeats_per_block().max(1)) as usize;
        let mut busy: Option<Vec<DisturbedBlock>> = None;
        if short_points && self.disturbed.len() > kept_blocks {
            for (cell, trials) in self.set_aside.iter_mut().enumerate() {
                self.cells[cell].trials.append(trials);
                self.cells[cell].trials.sort_by_key(|t| t.block);
            }
            busy = Some(std::mem::take(&mut self.disturbed));
        }
        let summary = self.summary_now();
        let mut warnings = std::mem::take(&mut self.warnings);
        if let Some(w) = crate::design::warnings::late_readings(&self.late) {
            warnings.push(w);
        }
        if let (false, Some(limit)) = (self.disturbed.is_empty(), exp.max_disturbance) {
            let mut hosts: Vec<String> = self.disturbed.iter().map(|d| d.host.clone()).collect();
            hosts.sort();
            hosts.dedup();
            let short = match exp.stop {
                StopRule::Repeats(n) => self
                    .keys
                    .iter()
                    .filter(|&&k| self.counted[k as usize] < n)
                    .map(|&k| self.points[k as usize].threads)
                    .collect(),
                StopRule::Precision { .. } => vec![],
            };
            warnings.push(Warning::Disturbed {
                blocks: self.disturbed.len(),
                worst_pct: self
                    .disturbed
                    .iter()
                    .map(|d| d.worst_pct)
                    .fold(0.0, f64::max),
                limit,
                typical: self
                    .disturbed
                    .iter()
                    .map(|d| d.typical_pct)
                    .fold(0.0, f64::max),
                hosts,
                short,
            });
        }
        if let Some(kept) = &busy {
            let mut levels: Vec<f64> = self
                .seen
                .iter()
                .copied()
                .filter(|x| x.is_finite())
                .collect();
            levels.sort_by(|a, b| a.total_cmp(b));
            let at = |q: f64| {
                levels
                    .get(((levels.len() as f64 - 1.0) * q).round() as usize)
                    .copied()
                    .unwrap_or(0.0)
            };
            let mut hosts: Vec<String> = kept.iter().map(|d| d.host.clone()).collect();
            hosts.sort();
            hosts.dedup();
            warnings.push(Warning::BusyThroughout {
                blocks: kept.len(),
                median_pct: at(0.5),
                max_pct: at(1.0),
                hosts,
            });
        }
        warnings.extend(crate::design::warnings::from_summary(&summary));
        Outcome {
            cells: summary.cells,
            analysis: summary.analysis,
            warnings,
            calibration: self.calibration,
            capacity: vec![],
        }
    }
}

/// Where a trial stands in the run, for the observer and for error messages.
pub(super) struct Step {
    pub(super) index: usize,
    pub(super) planned: usize,
    pub(super) load: LoadPoint,
    pub(super) label: &'static str,
}

/// Switch to variant `v` and run one trial, saying which trial failed if one does.
pub(crate) fn one_trial(
    exp: &Design,
    bench: &mut dyn Bench,
    observer: &mut dyn Observer,
    v: usize,
    at: &Step,
) -> Result<Trial> {
    (hooks::get().check_interrupt)()?;
    (hooks::get().test_point)(at.index);
    let name = &exp.variants[v].name;
    observer.trial_starting(at.index, at.planned, name, at.load.threads);
    let which = || {
        let rate = at
            .load
            .rate
            .map(|r| format!(", {:.0}/s", r.per_second))
            .unwrap_or_default();
        format!(
            "{} {} ({name}, {} threads{rate})",
            at.label,
            at.index + 1,
            at.load.threads
        )
    };
    bench
        .apply(v, observer)
        .map_err(|e| explain(e, "before", &which()))?;
    let started_at = (hooks::get().now)();
    let mut trial = bench
        .trial(v, &at.load, observer)
        .map_err(|e| explain(e, "during", &which()))?;
    trial.started_at = started_at;
    Ok(trial)
}

/// Name the trial a failure happened at; a lost server is said first, in those words.
pub(crate) fn explain(e: anyhow::Error, when: &str, trial: &str) -> anyhow::Error {
    if (hooks::get().interrupted)(&e) {
        return e;
    }
    match e.chain().find_map(|c| c.downcast_ref::<ServerLost>()) {
        Some(lost) => ServerLost(format!("the server went away {when} {trial}: {lost}")).into(),
        None => e.context(trial.to_string()),
    }
}
