//! `dbtax run`'s flags over its experiment (a file, a preset, or defaults) → one validated
//! `Experiment`, plus the options of the run itself.

use super::presets::{self, Size};
use super::rules::{default_name, new_seed, open_loop, stop_rule};
use super::workload_from;
use crate::agent::AgentOptions;
use crate::cli::RunArgs;
use crate::error::usage;
use crate::experiment::spec::RunOptions;
use crate::experiment::spec::{Experiment, RateLevel, variants_for_features};
use anyhow::Result;

/// A replay's default client count (one per session) stops here.
const MAX_REPLAY_CLIENTS: u32 = 256;

/// The run options of `dbtax run` for `exp`: where results go, how to restart the user's
/// server, how to start the experiment's agents (checked: bad input is exit 2).
pub fn run_options(args: &RunArgs, exp: &Experiment) -> Result<RunOptions> {
    Ok(RunOptions {
        out: args.out.clone(),
        restart_cmd: args.restart_cmd.clone(),
        client_threads: args.clients.client_threads,
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
