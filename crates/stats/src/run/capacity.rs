//! `--slo p99=5ms`: each variant's capacity at a latency objective, the highest rate at
//! which that quantile of the latency (from each event's intended start) stays within it.
//!
//! 1. Calibration: each variant's closed-loop throughput at the thread count (the upper end
//!    of its search). Not counted.
//! 2. Search: bisection between 0 and that throughput, every variant at its own candidate
//!    rate in one block, in a random order, so that drift hits all alike. Not counted.
//! 3. Measured blocks: each variant at three fixed rates around its search's answer (±6%), all
//!    of them in one block in a random order. The capacity is where the line through the mean
//!    reciprocal quantiles meets the objective (`stats::capacity`), with a t interval over
//!    blocks; a block disturbed by other processes, or with a stalled trial (its quantile far
//!    above its variant's other blocks at that rate), is set aside and run again; a bracket
//!    the capacity turns out to lie well outside is moved (its blocks become search steps).

use crate::design::disturbed::{others_of, typical, worst};
use crate::design::{Arrival, Rate};
use crate::design::{Design, StopRule};
use crate::results::{Capacity, CapacityStep, Slo, Trial};
use crate::rng::Rng;
use crate::run::{Bench, LoadPoint, Observer, Step, explain, one_trial};
use crate::stats::capacity::{Blocks, Bracket, Width, cost, crossing, interval};
use anyhow::Result;

/// Bisection steps before the measured blocks: the bracket is then 1/64 of the closed-loop
/// throughput wide.
pub const SEARCH_STEPS: u32 = 6;
/// The measured rates: the search's answer × (1 ∓ this).
const BRACKET: f64 = 0.06;
/// Measured blocks when the stop rule does not say (`--repeats` does).
pub const DEFAULT_MEASURED: u32 = 8;
/// Times a variant's bracket may be moved.
const MOVES: u32 = 4;

/// What the statistics suite may change to show what a plausible bug would do; dbtax runs
/// the default.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// How the interval's half-width is taken.
    pub width: Width,
    /// A search that climbs in steps of 5% of the closed-loop throughput and reports the
    /// last rate before the first one over the objective (its interval moved there).
    pub first_over: bool,
    /// Keep disturbed blocks instead of setting them aside.
    pub keep_disturbed: bool,
    /// Keep blocks with a stalled trial instead of setting them aside.
    pub keep_stalls: bool,
}

/// The measured blocks the stop rule asks for.
pub fn measured_blocks(exp: &Design) -> u32 {
    match exp.stop {
        StopRule::Repeats(n) => n.max(2),
        StopRule::Precision { .. } => DEFAULT_MEASURED,
    }
}

/// The thread count the search runs at: the headline's, else the highest.
pub fn threads(exp: &Design) -> u32 {
    exp.headline_threads
        .unwrap_or_else(|| exp.threads.iter().copied().max().unwrap_or(1))
}

/// Trials the search will run (for the plan and the progress bar): calibration, search and
/// measured blocks for every objective, before any block is run again.
pub fn planned_trials(exp: &Design) -> usize {
    let v = exp.variants.len();
    v + exp.slo.len() * v * (SEARCH_STEPS as usize + 3 * measured_blocks(exp) as usize)
}

/// One variant's search at one objective.
struct Track {
    variant: usize,
    closed_loop: f64,
    lo: f64,
    hi: f64,
    bracket: [f64; 3],
    blocks: Blocks,
    moves: u32,
    never_met: Option<f64>,
    steps: Vec<CapacityStep>,
    /// Blocks set aside for a stall in this variant's trials, and stalls kept (no reruns left).
    stalled: u32,
    kept_stalls: Vec<u32>,
}

impl Track {
    /// Its bracket's rates and the measured blocks `keep` takes, to read a crossing from.
    fn measured(&self, keep: impl Fn(u32) -> bool) -> Bracket {
        Bracket {
            rates: self.bracket.to_vec(),
            blocks: self
                .blocks
                .iter()
                .filter(|(b, _)| keep(*b))
                .cloned()
                .collect(),
        }
    }
}

/// The loop's shared state.
struct Search<'a> {
    exp: &'a Design,
    opts: Options,
    rng: Rng,
    threads: u32,
    index: usize,
    planned: usize,
    block: u32,
    seen: Vec<f64>,
}

impl Search<'_> {
    fn load(&self, rate: f64) -> LoadPoint {
        let (arrival, skip_late) = match &self.exp.open_loop {
            Some(o) => (o.arrival, o.skip_late),
            None => (Arrival::default(), None),
        };
        LoadPoint {
            threads: self.threads,
            rate: Some(Rate {
                per_second: rate.max(1.0),
                arrival,
                skip_late,
            }),
        }
    }

    /// Variant `v` at `rate`: the runner's own trial (its interrupt check, progress, error
    /// words and start time).
    fn trial(
        &mut self,
        bench: &mut dyn Bench,
        observer: &mut dyn Observer,
        v: usize,
        rate: f64,
    ) -> Result<Trial> {
        let at = Step {
            index: self.index,
            planned: self.planned,
            load: self.load(rate),
            label: "capacity trial",
        };
        let t = one_trial(self.exp, bench, observer, v, &at)?;
        self.index += 1;
        self.seen.extend(others_of(&t).map(|(p, _)| p));
        Ok(t)
    }

    /// The most CPU other processes used in one of a block's trials, when over the run's
    /// typical level by more than `--max-disturbance` (as the runner's rule).
    fn disturbed<'t>(&self, trials: impl Iterator<Item = &'t Trial>) -> Option<f64> {
        let limit = self
            .exp
            .max_disturbance
            .filter(|_| !self.opts.keep_disturbed)?;
        worst(trials, typical(&self.seen), limit).map(|(p, _)| p)
    }

    fn shuffled<T>(&mut self, mut items: Vec<T>) -> Vec<T> {
        self.rng.shuffle(&mut items);
        items
    }
}

fn step(block: u32, phase: &str, rate: f64, t: &Trial) -> CapacityStep {
    CapacityStep {
        block,
        phase: phase.into(),
        rate,
        latency_ms: t.latency_ms.clone(),
        held: t.rate.clone(),
    }
}

/// The capacity search, for every objective; `observer.capacities` sees the capacities after
/// every block (results.json is rewritten: an interruption loses nothing).
pub fn search(
    exp: &Design,
    bench: &mut dyn Bench,
    observer: &mut dyn Observer,
) -> Result<Vec<Capacity>> {
    search_with(exp, bench, observer, Options::default())
}

/// `search`, with the statistics suite's options.
pub fn search_with(
    exp: &Design,
    bench: &mut dyn Bench,
    observer: &mut dyn Observer,
    opts: Options,
) -> Result<Vec<Capacity>> {
    let mut s = Search {
        exp,
        opts,
        rng: Rng::new(exp.seed ^ 0x5107),
        threads: threads(exp),
        index: 0,
        planned: planned_trials(exp),
        block: 0,
        seen: vec![],
    };
    let n = exp.variants.len();
    let started = std::time::Instant::now();
    let elapsed = |bench: &dyn Bench| bench.elapsed().unwrap_or_else(|| started.elapsed());
    let budget = match exp.stop {
        StopRule::Precision { budget, .. } => Some(budget),
        StopRule::Repeats(_) => None,
    };
    observer.status(&format!(
        "calibration: each variant's closed-loop throughput at {} threads (not counted)",
        s.threads
    ));
    let mut closed = vec![0.0; n];
    let mut calibration_steps = vec![None; n];
    for v in s.shuffled((0..n).collect()) {
        (crate::run::hooks::get().check_interrupt)()?;
        let which = format!("the calibration of '{}'", exp.variants[v].name);
        bench
            .apply(v, observer)
            .map_err(|e| explain(e, "before", &which))?;
        let t = bench
            .calibrate(s.threads, observer)
            .map_err(|e| explain(e, "during", &which))?;
        s.index += 1;
        closed[v] = t.tps.max(1.0);
        calibration_steps[v] = Some(step(0, "calibration", t.tps, &t));
        observer.status(&format!(
            "  {}: {:.0} events/s",
            exp.variants[v].name, closed[v]
        ));
    }
    let mut done: Vec<Capacity> = vec![];
    for slo in &exp.slo {
        let mut tracks: Vec<Track> = (0..n)
            .map(|v| Track {
                variant: v,
                closed_loop: closed[v],
                lo: 0.0,
                hi: closed[v],
                bracket: [0.0; 3],
                blocks: vec![],
                moves: 0,
                never_met: None,
                steps: calibration_steps[v].iter().cloned().collect(),
                stalled: 0,
                kept_stalls: vec![],
            })
            .collect();
        observer.status(&format!(
            "search for {}: {SEARCH_STEPS} blocks of bisection (not counted)",
            slo.label()
        ));
        bisect(&mut s, bench, observer, slo, &mut tracks)?;
        let want = measured_blocks(exp);
        let mut extra = 0;
        let mut measured = 0;
        loop {
            let live: Vec<usize> = (0..n).filter(|&v| tracks[v].never_met.is_none()).collect();
            let short = live.iter().any(|&v| tracks[v].blocks.len() < want as usize);
            // `--budget` (with --precision): no new block once it is spent, when every
            // variant has the blocks an interval needs.
            let spent = budget.is_some_and(|b| elapsed(bench) >= b)
                && live
                    .iter()
                    .all(|&v| tracks[v].blocks.len() >= crate::stats::capacity::MIN_BLOCKS);
            if spent {
                observer
                    .status("the time budget is spent: the capacities stand on the blocks so far");
                break;
            }
            // A moved bracket starts its blocks again; the others run on beside it (more
            // blocks for them), up to three times the blocks asked.
            if !short || measured >= 3 * want {
                break;
            }
            let mut order: Vec<(usize, usize)> = live
                .iter()
                .flat_map(|&v| [(v, 0), (v, 1), (v, 2)])
                .collect();
            order = s.shuffled(order);
            let block = s.block;
            s.block += 1;
            let mut got: Vec<(usize, usize, f64, Trial)> = vec![];
            for (v, k) in order {
                let rate = tracks[v].bracket[k];
                let t = s.trial(bench, observer, v, rate)?;
                got.push((v, k, slo.quantile.of(&t.latency_ms), t));
            }
            let disturbed = s.disturbed(got.iter().map(|g| &g.3));
            if let Some(p) = disturbed
                && extra < 2 * want
            {
                extra += 1;
                observer.status(&format!(
                    "capacity block {} set aside: other processes used {p:.0}% of a core; \
                     it runs again",
                    block + 1
                ));
                for (v, k, _, t) in &got {
                    let rate = tracks[*v].bracket[*k];
                    tracks[*v].steps.push(step(block, "set aside", rate, t));
                }
                continue;
            }
            measured += 1;
            for &v in &live {
                let mut q = vec![0.0; 3];
                for (_, k, value, t) in got.iter().filter(|g| g.0 == v) {
                    q[*k] = *value;
                    let rate = tracks[v].bracket[*k];
                    tracks[v].steps.push(step(block, "measured", rate, t));
                }
                tracks[v].blocks.push((block, q));
            }
            // A block set aside for a stall does not count towards the cap: its rerun is
            // budgeted by `extra`, as a disturbed block's.
            if !s.opts.keep_stalls {
                measured -=
                    set_aside_stalls(&s, &mut tracks, (&mut extra, 2 * want), slo, observer);
            }
            for v in live {
                maybe_move(&mut tracks[v], slo);
            }
            let now = capacities(&s, slo, &tracks);
            let mut all = done.clone();
            all.extend(now);
            holm(&mut all);
            observer.capacities(&all)?;
        }
        done.extend(capacities(&s, slo, &tracks));
    }
    holm(&mut done);
    Ok(done)
}

/// A stall the disturbance rule cannot see (the server slowed with no other process's CPU to
/// show for it: a checkpoint, a flush, the hypervisor): a trial whose quantile stands far
/// above its variant's other blocks at the same rate (`stats::capacity::stalls`). Its block
/// is set aside and runs again, as a disturbed one, while reruns are left (`extra` of
/// `most`); after that it is kept and the variant's words say so. The capacity is the
/// unstalled server's. Kept, stalls read it low: on the simulator, with 10% of trials at half
/// speed, the feature's interval covered 83.5% of runs (95.2% with them set aside).
fn set_aside_stalls(
    s: &Search<'_>,
    tracks: &mut [Track],
    (extra, most): (&mut u32, u32),
    slo: &Slo,
    observer: &mut dyn Observer,
) -> u32 {
    let cells: Vec<(usize, &Blocks)> = tracks
        .iter()
        .filter(|t| t.never_met.is_none())
        .map(|t| (t.variant, &t.blocks))
        .collect();
    let mut found = crate::stats::capacity::stalls(&cells);
    let mut aside = 0;
    found.sort_by(|a, b| b.times.total_cmp(&a.times));
    // A stall kept once is not counted again at the next block.
    let mut done: Vec<u32> = tracks
        .iter()
        .flat_map(|t| t.kept_stalls.iter().copied())
        .collect();
    for st in found {
        if done.contains(&st.block) {
            continue;
        }
        done.push(st.block);
        let tr = tracks.iter_mut().find(|t| t.variant == st.variant);
        let rate = tr.as_ref().map_or(0.0, |t| t.bracket[st.rate]);
        if *extra >= most {
            if let Some(t) = tr {
                t.kept_stalls.push(st.block);
            }
            continue;
        }
        *extra += 1;
        aside += 1;
        if let Some(t) = tr {
            t.stalled += 1;
        }
        observer.status(&format!(
            "capacity block {} set aside: {}'s {} at {rate:.0}/s was {:.1}× its other \
             blocks', with no other process's CPU to show for it (a stall); it runs again",
            st.block + 1,
            s.exp.variants[st.variant].name,
            slo.quantile.label(),
            st.times
        ));
        for t in tracks.iter_mut() {
            t.blocks.retain(|(b, _)| *b != st.block);
            for x in t.steps.iter_mut() {
                if x.block == st.block && x.phase == "measured" {
                    x.phase = "set aside".into();
                }
            }
        }
    }
    aside
}

/// The bisection (or, with `first_over`, the climb in 5% steps).
fn bisect(
    s: &mut Search<'_>,
    bench: &mut dyn Bench,
    observer: &mut dyn Observer,
    slo: &Slo,
    tracks: &mut [Track],
) -> Result<()> {
    let n = tracks.len();
    let steps = if s.opts.first_over { 20 } else { SEARCH_STEPS };
    let (mut k, mut again) = (0, 0);
    while k < steps {
        let live: Vec<usize> = (0..n)
            .filter(|&v| !s.opts.first_over || tracks[v].hi >= tracks[v].closed_loop)
            .collect();
        if live.is_empty() {
            break;
        }
        let block = s.block;
        s.block += 1;
        let mut got = vec![];
        for v in s.shuffled(live) {
            let tr = &tracks[v];
            let rate = if s.opts.first_over {
                tr.closed_loop * 0.05 * f64::from(k + 1)
            } else {
                (tr.lo + tr.hi) / 2.0
            };
            let t = s.trial(bench, observer, v, rate)?;
            got.push((v, rate, t));
        }
        // A disturbed step would steer the bisection wrong: it runs again.
        if let Some(p) = s.disturbed(got.iter().map(|g| &g.2))
            && again < steps
        {
            again += 1;
            observer.status(&format!(
                "search step set aside: other processes used {p:.0}% of a core; it runs again"
            ));
            for (v, rate, t) in &got {
                tracks[*v].steps.push(step(block, "set aside", *rate, t));
            }
            continue;
        }
        for (v, rate, t) in got {
            // Latency counts from each event's intended start: a server that fell behind
            // shows it here (the rate's own "saturated" mark misfires on few events).
            let q = slo.quantile.of(&t.latency_ms);
            let tr = &mut tracks[v];
            tr.steps.push(step(block, "search", rate, &t));
            if q <= slo.ms {
                tr.lo = rate;
            } else {
                tr.hi = rate;
            }
        }
        k += 1;
    }
    for tr in tracks.iter_mut() {
        if tr.lo <= 0.0 {
            let lowest = tr
                .steps
                .iter()
                .filter(|x| x.phase == "search")
                .map(|x| x.rate)
                .fold(f64::INFINITY, f64::min);
            tr.never_met = Some(lowest);
            continue;
        }
        let centre = if s.opts.first_over {
            tr.lo
        } else {
            (tr.lo + tr.hi) / 2.0
        };
        tr.bracket = around(centre);
    }
    Ok(())
}

/// The measured rates around a search's answer.
fn around(centre: f64) -> [f64; 3] {
    [centre * (1.0 - BRACKET), centre, centre * (1.0 + BRACKET)]
}

/// After three blocks (so that a stalled trial is found and set aside first: with two, one
/// stall moved brackets wrongly), a capacity outside its bracket
/// where the medians agree (the lowest rate's quantile over the objective, or the highest
/// one's within it), or a latency that did not rise across the bracket while every rate was
/// within the objective (or every one over it): a noisy trial steered the search wrong. Move
/// the bracket (towards the capacity, two bracket widths at most; or half as far again up, or
/// down by a third); the blocks so far become search steps, and the variant's blocks start again. One spike in a trial moves
/// nothing: a p99 at 20,000/s on a shared machine ranged from 2 to 450 ms at one rate.
fn maybe_move(tr: &mut Track, slo: &Slo) {
    if tr.blocks.len() < crate::stats::capacity::STALL_BLOCKS || tr.moves >= MOVES {
        return;
    }
    let [a, _, b] = tr.bracket;
    let w = b - a;
    let median = |k: usize| {
        let v: Vec<f64> = tr.blocks.iter().map(|(_, q)| q[k]).collect();
        crate::intervals::sample::median(&v).unwrap_or(f64::NAN)
    };
    let (low_over, high_within) = (median(0) > slo.ms, median(2) <= slo.ms);
    // A bracket whose top runs ten times past the objective (past saturation: the queue
    // grew through the trial) bends the curve read through it, and a crossing read beyond
    // its ends is off: move whenever the crossing is outside it. Otherwise half a bracket
    // outside, so that a drifting machine does not move brackets back and forth.
    let margin = if median(2) > 10.0 * slo.ms || median(0) < slo.ms / 10.0 {
        0.0
    } else {
        w / 2.0
    };
    let target = match crossing(&tr.measured(|_| true), slo.ms) {
        Some(c) if c.rate < a - margin && low_over => c.rate,
        Some(c) if c.rate > b + margin && high_within => c.rate,
        Some(_) => return,
        None if high_within => b * 1.5,
        None if low_over => a * 2.0 / 3.0,
        None => return,
    };
    // At most two bracket widths at a time: an extrapolated crossing can be far off.
    let centre = target
        .clamp(a - 2.0 * w, b + 2.0 * w)
        .clamp(0.02 * tr.closed_loop, 1.2 * tr.closed_loop);
    tr.bracket = around(centre);
    tr.moves += 1;
    let moved: Vec<u32> = tr.blocks.drain(..).map(|(b, _)| b).collect();
    for st in tr.steps.iter_mut() {
        if st.phase == "measured" && moved.contains(&st.block) {
            st.phase = "search".into();
        }
    }
}

/// Each variant's capacity at `slo` from the blocks so far, and each feature's cost.
fn capacities(s: &Search<'_>, slo: &Slo, tracks: &[Track]) -> Vec<Capacity> {
    tracks
        .iter()
        .map(|tr| {
            let fit = &crossing(&tr.measured(|_| true), slo.ms);
            let base = s.exp.variants[tr.variant].baseline;
            let mut c = Capacity {
                variant: s.exp.variants[tr.variant].name.clone(),
                slo: slo.label(),
                objective: Some(*slo),
                threads: s.threads,
                closed_loop: tr.closed_loop,
                bracket: tr
                    .never_met
                    .is_none()
                    .then_some([tr.bracket[0], tr.bracket[2]]),
                blocks: tr.blocks.len() as u32,
                steps: tr.steps.clone(),
                ..Default::default()
            };
            if let Some(lowest) = tr.never_met {
                c.note = Some(format!("never met {}, even at {lowest:.0}/s", slo.label()));
                return c;
            }
            let Some(f) = fit else {
                c.note = Some(if tr.blocks.is_empty() {
                    "no measured block yet".into()
                } else {
                    format!(
                        "its {} did not rise from {:.0}/s to {:.0}/s: no capacity to read there",
                        slo.quantile.label(),
                        tr.bracket[0],
                        tr.bracket[2]
                    )
                });
                return c;
            };
            let shift = if s.opts.first_over {
                tr.lo - f.rate
            } else {
                0.0
            };
            c.rate = Some(f.rate + shift);
            c.ci95 = interval(f, s.opts.width).map(|[a, b]| [a + shift, b + shift]);
            if c.ci95.is_none() {
                c.note = Some(format!(
                    "{} measured block(s): an interval needs {}",
                    tr.blocks.len(),
                    crate::stats::capacity::MIN_BLOCKS
                ));
            }
            if let Some(words) = stall_words(s, slo, tr, &tracks[base]) {
                c.note = Some(match c.note.take() {
                    Some(n) => format!("{n}; {words}"),
                    None => words,
                });
            }
            if base != tr.variant
                && let Some(k) = shared_cost(tr, &tracks[base], slo, s.opts.width)
            {
                c.cost_pct = Some(k.pct);
                c.cost_ci95_pct = Some(k.ci95);
                c.cost_p = Some(k.p);
            }
            c
        })
        .collect()
}

/// A feature's cost against its baseline from the blocks both measured, both crossings read
/// over those blocks only: after a moved bracket one variant has blocks the other has not,
/// and under drift a ratio of capacities read over different stretches of the run is off by
/// the drift between them (the cost under drift covered 90% that way, 95% this way).
fn shared_cost(
    tr: &Track,
    base: &Track,
    slo: &Slo,
    width: Width,
) -> Option<crate::stats::capacity::Cost> {
    let has = |t: &Track, b: u32| t.blocks.iter().any(|(o, _)| *o == b);
    let f = crossing(&tr.measured(|b| has(base, b)), slo.ms)?;
    let fb = crossing(&base.measured(|b| has(tr, b)), slo.ms)?;
    cost(&f, &fb, width)
}

/// What the stalls in a variant's trials did to its capacity, in words.
fn stall_words(s: &Search<'_>, slo: &Slo, tr: &Track, base: &Track) -> Option<String> {
    let q = slo.quantile.label();
    let mut words = vec![];
    if tr.stalled > 0 {
        words.push(format!(
            "{} block(s) set aside for a stall in its trials (a {q} far above its other blocks' \
             at the same rate, with no other process's CPU to explain it): this is the \
             unstalled server's capacity",
            tr.stalled
        ));
    }
    if !tr.kept_stalls.is_empty() {
        words.push(format!(
            "{} stalled trial(s) kept (no reruns left): the capacity may read low",
            tr.kept_stalls.len()
        ));
    }
    let count = |t: &Track| t.stalled + t.kept_stalls.len() as u32;
    let (mine, theirs) = (count(tr), count(base));
    if tr.variant != base.variant && mine >= 2 && theirs == 0 {
        words.push(format!(
            "its trials stalled {mine} times and {}'s none: the stalls may be the feature's \
             own, a cost this capacity leaves out",
            s.exp.variants[base.variant].name
        ));
    }
    (!words.is_empty()).then(|| words.join("; "))
}

/// Holm's adjustment over every cost reported: `significant` after it.
fn holm(all: &mut [Capacity]) {
    let idx: Vec<usize> = (0..all.len())
        .filter(|&i| all[i].cost_p.is_some())
        .collect();
    let p: Vec<f64> = idx.iter().map(|&i| all[i].cost_p.unwrap_or(1.0)).collect();
    let keep = crate::intervals::holm::holm(&p, 0.05);
    for (k, &i) in idx.iter().enumerate() {
        all[i].significant = Some(keep[k]);
    }
}
