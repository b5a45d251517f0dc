//! `--dry-run`: the Plan as text — blocks, order, estimated time, the exact statements each
//! variant would run and those that would restore the server. Pure: it reads only the Plan.

use crate::experiment::prepare::plan::Plan;
use crate::experiment::spec::{Experiment, StopRule};
use crate::load::CALIBRATION;
use anyhow::Result;
use dbtax_stats::design::order::trial_estimate;

/// The trials of a run at fixed loads, as the dry run counts them.
#[derive(Clone, Copy)]
struct Counts {
    /// Blocks planned per thread count (at least, under a precision rule).
    blocks: usize,
    /// What a block counts as: "repeats" (a two-variant block of four trials counts as two)
    /// or "blocks".
    unit: &'static str,
    /// Repeats per block.
    per: usize,
    /// The warm-up round's trials (0: none).
    warmups: usize,
    /// Every trial, the warm-up's included.
    trials: usize,
    /// Rate mode's closed-loop calibrations, one per thread count (0: none).
    calibrations: usize,
}

impl Counts {
    fn of(exp: &Experiment) -> Counts {
        // A two-variant block is four trials, each variant twice (`order::extra_period`), and
        // counts as two repeats.
        let per = exp.repeats_per_block() as usize;
        let round = exp.points().len() * exp.variants.len() * per;
        let warmups = if exp.warmup_round { round } else { 0 };
        Counts {
            blocks: exp.planned_blocks() as usize,
            unit: if per == 2 { "repeats" } else { "blocks" },
            per,
            warmups,
            trials: exp.planned_trials() + warmups,
            calibrations: match &exp.open_loop {
                Some(o) if o.needs_calibration() => exp.threads.len(),
                _ => 0,
            },
        }
    }
}

/// The dry-run text for `exp` planned on the server `label` (`version`).
pub fn render(exp: &Experiment, label: &str, version: &str, plan: &Plan) -> Result<String> {
    let counts = Counts::of(exp);
    let mut s = format!("Experiment '{}' on {label} ({version})\n", exp.name);
    s += &format!("  workload   {}\n", serde_json::to_string(&exp.workload)?);
    if let Some(slice) = &exp.workload.slice.0 {
        s += &dbtax_logs::slice::describe(slice);
    }
    s += &format!("  threads    {:?}\n", exp.threads);
    if let Some(o) = &exp.open_loop {
        let levels: Vec<String> = o.levels.iter().map(|l| l.label()).collect();
        s += &format!(
            "  rate       {} (open loop, {} arrivals; latency from each event's intended start{})\n",
            levels.join(", "),
            o.arrival.name(),
            o.skip_late
                .map(|d| format!(
                    "; events later than {} ms skipped and counted",
                    d.as_millis()
                ))
                .unwrap_or_default()
        );
        if counts.calibrations > 0 {
            s += &format!(
                "  calibrate  first, the capacity of '{}' in closed loop at each thread count ({} s each, not counted); a share such as 50% is of it\n",
                exp.variants[0].name,
                exp.trial.max(CALIBRATION).as_secs_f64()
            );
        }
    }
    if exp.slo.is_empty() {
        s += &schedule(exp, &counts);
    } else {
        s += &capacity(exp);
    }
    for n in &plan.notes {
        s += &format!("  note       {n}\n");
    }
    if let Some(why) = &plan.refused {
        s += &format!("  refused    a run as planned would stop here, before any change: {why}\n");
    }
    if !plan.statements.install.is_empty() {
        s += "Before the first trial (journaled first):\n";
        for sql in &plan.statements.install {
            s += &format!("  {sql}   (only if not loaded)\n");
        }
    }
    for (i, (v, sqls)) in plan
        .variants
        .iter()
        .zip(&plan.statements.per_variant)
        .enumerate()
    {
        let baseline = if i == 0 { " (baseline)" } else { "" };
        s += &format!("Variant {}{baseline}:\n", v.name);
        if !v.server_opts.is_empty() {
            s += &format!("  (restart with --{})\n", v.server_opts.join(" --"));
        }
        if sqls.is_empty() && v.server_opts.is_empty() {
            s += "  (the server's current settings)\n";
        }
        for sql in sqls {
            s += &format!("  {sql}\n");
        }
        if i == 0 && !plan.switches.switched_plugins.is_empty() {
            let names: Vec<&str> = plan
                .switches
                .switched_plugins
                .iter()
                .map(|p| p.soname)
                .collect();
            s += &format!(
                "  (without the {} plugin: it is loaded only in the variants that use it, \
                 installed and uninstalled at each switch, journaled)\n",
                names.join(", ")
            );
        }
    }
    s += "At the end, on error and on Ctrl-C (restore what was changed):\n";
    let uninstalls = plan.switches.plugins.len() + plan.switches.switched_plugins.len();
    let n = plan.statements.restore.len();
    for (i, sql) in plan.statements.restore.iter().enumerate() {
        let note = if i >= n - uninstalls {
            "   (only if dbtax installed it)"
        } else {
            ""
        };
        s += &format!("  {sql}{note}\n");
    }
    s += "Nothing was changed (--dry-run).\n";
    Ok(s)
}

/// The trials, warm-up, order and headline lines of a run at fixed loads.
fn schedule(exp: &Experiment, counts: &Counts) -> String {
    let Counts {
        blocks,
        unit,
        per,
        warmups,
        trials,
        calibrations,
    } = *counts;
    // Each trial with its settle as the order plans it, and each calibration.
    let secs = trial_estimate(exp.trial, exp.warmup).as_secs_f64() * trials as f64
        + calibrations as f64
            * trial_estimate(exp.trial.max(CALIBRATION), exp.warmup).as_secs_f64();
    let mut out = String::new();
    out += &format!(
        "  trials     {:.1} s measured after {:.1} s settle; {} → {trials} trials, about {:.0} s\n",
        exp.trial.as_secs_f64(),
        exp.warmup.as_secs_f64(),
        match &exp.stop {
            StopRule::Repeats(n) if exp.open_loop.is_some() =>
                format!("{n} {unit} per thread count and rate"),
            StopRule::Repeats(n) => format!("{n} {unit} per thread count"),
            StopRule::Precision {
                points,
                budget,
                focus: None,
            } => format!(
                "at least {blocks} {unit} per thread count, more until ±{points} points or {} s",
                budget.as_secs()
            ),
            StopRule::Precision {
                points,
                budget,
                focus: Some(f),
            } => format!(
                "{} {unit} at other thread counts; at {} threads at least {blocks} {unit}, \
                 more (of the variants still wider) until ±{points} points or {} s",
                f.others,
                f.threads,
                budget.as_secs()
            ),
        },
        secs
    );
    if exp.warmup_round {
        out += &format!(
            "  warm-up    a block at every thread count first ({warmups} trials, not counted)\n"
        );
    }
    out += &if per == 2 {
        format!(
            "  order      blocks of four trials, two of each, in orders drawn to keep the feature balanced against the two trials before, thread counts shuffled per round (seed {})\n",
            exp.seed
        )
    } else {
        format!(
            "  order      blocks of every variant, orders from a Williams design, thread counts shuffled per round (seed {})\n",
            exp.seed
        )
    };
    out += &format!(
        "  headline   at {} threads (fixed before the run)\n",
        exp.headline_threads()
    );
    out
}

/// The lines of a `--slo` run: what it searches for, how, and about how long.
fn capacity(exp: &Experiment) -> String {
    use dbtax_stats::run::capacity as c;
    let design = exp.design();
    let trials = c::planned_trials(&design);
    let secs = trial_estimate(exp.trial, exp.warmup).as_secs_f64() * trials as f64;
    let slos: Vec<String> = exp.slo.iter().map(|s| s.label()).collect();
    format!(
        "  capacity   at {} (latency from each event's intended start), at {} threads\n  \
         search     each variant's closed-loop throughput first; then {} blocks of bisection \
         (every variant at its own rate in one block, not counted); then {} measured blocks of \
         every variant at three rates around its answer (±6%), in a random order (seed {})\n  \
         trials     {:.1} s measured after {:.1} s settle → about {trials} trials, {:.0} s\n",
        slos.join(", "),
        c::threads(&design),
        c::SEARCH_STEPS,
        c::measured_blocks(&design),
        exp.seed,
        exp.trial.as_secs_f64(),
        exp.warmup.as_secs_f64(),
        secs
    )
}
