//! `dbtax run`'s flags over its experiment (a file, a preset, or defaults) → one validated
//! `Experiment`, plus the options of the run itself.

use super::presets::{self, Size};
use super::workload_from;
use crate::agent::AgentOptions;
use crate::cli::RunArgs;
use crate::error::usage;
use crate::experiment::execute::RunOptions;
use crate::experiment::spec::{
    Experiment, OpenLoop, RateLevel, StopRule, VariantSpec, variants_for_features,
};
use crate::load::Arrival;
use anyhow::Result;
use std::time::Duration;

/// A replay's default client count (one per session) stops here.
const MAX_REPLAY_CLIENTS: u32 = 256;

/// The run options of `dbtax run` for `exp`: where results go, how to restart the user's
/// server, how to start the experiment's agents (checked: bad input is exit 2).
pub fn run_options(args: &RunArgs, exp: &Experiment) -> Result<RunOptions> {
    Ok(RunOptions {
        out: args.out.clone(),
        restart_cmd: args.restart_cmd.clone(),
        agents: AgentOptions::new(
            exp.agents.clone(),
            // --agent-bin also names the probe's binary (--server-host).
            args.agents
                .agent_bin
                .as_deref()
                .filter(|_| !exp.agents.is_empty() || exp.server_host.is_none()),
            args.agents.agent_target.as_deref(),
        )?,
    })
}

/// The experiment of `dbtax run`: the file or preset (if any), then flags over it, validated.
pub fn experiment(args: &RunArgs) -> Result<Experiment> {
    let mut exp = match (&args.file, &args.preset) {
        (Some(p), _) => super::file::from_file(p)?,
        (None, Some(name)) => {
            let size = match (args.quick, args.full) {
                (true, _) => Size::Quick,
                (_, true) => Size::Full,
                _ => Size::Normal,
            };
            presets::build(name, size)?
        }
        (None, None) => Experiment::defaults(),
    };
    exp.workload = workload_from(&args.workload, exp.workload.clone())?;
    if let Some(t) = &args.threads {
        exp.threads = t.clone();
    }
    if let Some(t) = args.trial {
        exp.trial = t;
    }
    if let Some(n) = args.queries_per_trial {
        // (Experiment::validate refuses 0.)
        exp.queries_per_trial = Some(n);
    }
    if let Some(w) = args.warmup {
        exp.warmup = w;
    }
    if args.repeats.is_some() || args.precision.is_some() || args.budget.is_some() {
        exp.stop = stop_rule(args.repeats, args.precision, args.budget, &exp.stop)?;
    }
    exp.unguarded_logs |= args.unguarded_logs;
    if let Some(l) = args.max_disturbance {
        exp.max_disturbance = l.0;
    }
    if let Some(m) = args.max_log_bytes {
        exp.max_log_bytes = Some(m);
    }
    if args.headline_threads.is_some() {
        exp.headline_threads = args.headline_threads;
    }
    if args.no_warmup_round {
        exp.warmup_round = false;
    }
    if !args.features.is_empty() {
        exp.variants = variants_for_features(&args.features);
    }
    let levels = args
        .open
        .rate
        .as_deref()
        .map(RateLevel::parse_list)
        .transpose()?;
    exp.open_loop = open_loop(
        levels,
        args.open.arrival.as_deref(),
        args.open.skip_late,
        exp.open_loop.take(),
    )?;
    if exp.open_loop.is_some() && args.compare_target.is_some() {
        return Err(usage(
            "--compare-target runs closed loop: give --rate to each run and compare the \
             results with `dbtax compare`",
        ));
    }
    if !args.agents.agents.is_empty() {
        exp.agents = crate::agent::parse_list(&args.agents.agents)?;
    }
    if let Some(h) = &args.server_host {
        exp.server_host = Some((crate::agent::server_host(h)?, Default::default()));
    }
    exp.probe_silence = args.probe_silence;
    if let Some((_, bin)) = exp.server_host.as_mut() {
        *bin = crate::agent::AgentBin::parse(args.agents.agent_bin.as_deref());
    }
    if !exp.agents.is_empty() && args.compare_target.is_some() {
        return Err(usage(
            "--compare-target runs without agents: run each target with --agents and compare \
             the results with `dbtax compare`",
        ));
    }
    super::load_replay(
        &mut exp.workload,
        exp.warmup + exp.trial,
        !exp.agents.is_empty(),
        &mut exp.open_loop,
    )?;
    // A replay without a thread count asked: one client per recorded session.
    if let Some(slice) = &exp.workload.slice.0
        && args.threads.is_none()
        && args.file.is_none()
    {
        exp.threads = vec![slice.sessions.clamp(1, MAX_REPLAY_CLIENTS)];
    }
    if let Some(n) = &args.name {
        exp.name = n.clone();
    }
    if exp.name.is_empty() {
        exp.name = default_name(&exp.variants);
    }
    if let Some(s) = args.seed {
        exp.seed = s;
    } else if exp.seed == 0 {
        exp.seed = new_seed();
    }
    exp.validate()?;
    Ok(exp)
}

/// Rate mode from `rate` / `arrival` / `skip_late` over the current setting (a file's).
/// Arrival or skip-late without a rate is an error, not silently ignored.
pub fn open_loop(
    levels: Option<Vec<RateLevel>>,
    arrival: Option<&str>,
    skip_late: Option<Duration>,
    current: Option<OpenLoop>,
) -> Result<Option<OpenLoop>> {
    let mut o = match (levels, current) {
        (Some(levels), c) => OpenLoop {
            levels,
            ..c.unwrap_or(OpenLoop {
                levels: vec![],
                arrival: Arrival::default(),
                skip_late: None,
            })
        },
        (None, Some(c)) => c,
        (None, None) => {
            if arrival.is_some() || skip_late.is_some() {
                return Err(usage(
                    "--arrival and --skip-late go with --rate (open loop): give --rate R or \
                     --rate 50%",
                ));
            }
            return Ok(None);
        }
    };
    if let Some(a) = arrival {
        o.arrival = Arrival::parse(a)?;
    }
    if skip_late.is_some() {
        o.skip_late = skip_late;
    }
    Ok(Some(o))
}

/// More blocks per thread count than this are refused (`--repeats`).
pub const MAX_REPEATS: u32 = 1000;
/// The longest precision budget (`--budget`).
const MAX_BUDGET: Duration = Duration::from_secs(7 * 24 * 3600);

/// A seed for the trial order, from the clock (recorded, so a run can be replayed).
pub fn new_seed() -> u64 {
    crate::rng::Rng::from_time(0).next_u64() % 1_000_000
}

/// The stop rule from `repeats` / `precision` / `budget`, over the current one.
pub fn stop_rule(
    repeats: Option<u32>,
    precision: Option<f64>,
    budget: Option<Duration>,
    current: &StopRule,
) -> Result<StopRule> {
    match (repeats, precision) {
        (None, None) if budget.is_none() => Ok(current.clone()),
        (Some(_), Some(_)) => Err(usage("give repeats or precision, not both")),
        (Some(n), None) => {
            if n < 2 {
                return Err(usage(
                    "--repeats must be at least 2: one block gives no interval (and fewer than \
                     3 give none that the words will quote)",
                ));
            }
            if n > MAX_REPEATS {
                return Err(usage(format!(
                    "--repeats {n} is more blocks than any run needs (at most {MAX_REPEATS}): \
                     for a precision goal, give --precision P --budget TIME"
                )));
            }
            if budget.is_some() {
                return Err(usage("--budget goes with --precision"));
            }
            Ok(StopRule::Repeats(n))
        }
        (None, p) => {
            let prior_budget = match current {
                StopRule::Precision { budget, .. } => Some(*budget),
                _ => None,
            };
            let points = match (p, current) {
                (Some(p), _) => p,
                (None, StopRule::Precision { points, .. }) => *points,
                (None, StopRule::Repeats(_)) => {
                    return Err(usage("--budget goes with --precision"));
                }
            };
            if !(points.is_finite() && points > 0.0 && points <= 100.0) {
                return Err(usage(
                    "--precision must be a number of percentage points above 0 (and at most 100)",
                ));
            }
            let budget = budget.or(prior_budget).unwrap_or(Duration::from_secs(600));
            if budget < Duration::from_secs(1) || budget > MAX_BUDGET {
                return Err(usage(format!(
                    "--budget must be between 1 s and {} h",
                    MAX_BUDGET.as_secs() / 3600
                )));
            }
            Ok(StopRule::Precision {
                points,
                budget,
                focus: None,
            })
        }
    }
}

/// `general-log-slow-log-vs-off`; past the 64 characters a name may have, the first
/// variant and how many more (`general-log-and-5-more-vs-off`).
fn default_name(variants: &[VariantSpec]) -> String {
    let names: Vec<&str> = variants.iter().skip(1).map(|v| v.name.as_str()).collect();
    let Some(first) = names.first() else {
        return "experiment".into();
    };
    let base = &variants[0].name;
    let all = format!("{}-vs-{base}", names.join("-"));
    if all.len() <= 64 {
        return all;
    }
    let short = format!("{first}-and-{}-more-vs-{base}", names.len() - 1);
    if short.len() <= 64 {
        short
    } else {
        format!("{}-variants", names.len() + 1)
    }
}
