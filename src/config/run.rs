//! `dbtax run`'s flags over its experiment (a file, a preset, or defaults) → one validated
//! `Experiment`, plus the options of the run itself.

use super::merge::{default_name, merge, new_seed};
use super::presets::{self, Size};
use super::workload_from;
use crate::agent::AgentOptions;
use crate::cli::RunArgs;
use crate::error::usage;
use crate::experiment::spec::RunOptions;
use crate::experiment::spec::{Experiment, Layer, variants_for_features};
use anyhow::Result;

/// A replay's default client count (one per session) stops here.
const MAX_REPLAY_CLIENTS: u32 = 256;

/// `--agent-bin` names what runs on other hosts: with neither, it would be ignored.
pub const AGENT_BIN_ALONE: &str = "--agent-bin names the dbtax that runs on the agents' hosts \
     (--agents) or on the database's host (--server-host): give one of them, or leave \
     --agent-bin out";

/// The run options of `dbtax run` for `exp`: where results go, how to restart the user's
/// server, how to start the experiment's agents (checked: bad input is exit 2).
pub fn run_options(args: &RunArgs, exp: &Experiment) -> Result<RunOptions> {
    if args.agents.agent_bin.is_some() && exp.agents.is_empty() && exp.server_host.is_none() {
        return Err(usage(AGENT_BIN_ALONE));
    }
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

/// The layer `dbtax run`'s flags make: what they say of the experiment, each setting
/// optional (the workload's own flags go over the merged workload: `workload_from`, shared
/// with `dbtax bench`).
fn flags(args: &RunArgs) -> Result<Layer> {
    Ok(Layer {
        name: args.name.clone(),
        threads: args.threads.clone(),
        trial: args.trial,
        warmup: args.warmup,
        queries_per_trial: args.queries_per_trial.map(Some),
        max_log_bytes: args.max_log_bytes.map(Some),
        production_cores: args.production_cores.map(Some),
        slo: slos(&args.slo)?,
        unguarded_logs: args.unguarded_logs.then_some(true),
        max_disturbance: args.max_disturbance.map(|l| l.0),
        seed: args.seed,
        headline_threads: args.headline_threads.map(Some),
        negligible: args.negligible.map(Some),
        warmup_round: args.no_warmup_round.then_some(false),
        probe_silence: args.probe_silence,
        repeats: args.repeats,
        precision: args.precision,
        budget: args.budget,
        rate: args
            .open
            .rate
            .as_deref()
            .map(crate::experiment::spec::parse_rates)
            .transpose()?,
        arrival: args.open.arrival.clone(),
        skip_late: args.open.skip_late,
        agents: (!args.agents.agents.is_empty()).then(|| args.agents.agents.clone()),
        server_host: args.server_host.clone(),
        variants: (!args.features.is_empty()).then(|| variants_for_features(&args.features)),
        ..Layer::default()
    })
}

/// `--slo` as given (each may be a list), None when not given.
fn slos(given: &[String]) -> Result<Option<Vec<crate::results::Slo>>> {
    if given.is_empty() {
        return Ok(None);
    }
    let mut out = vec![];
    for g in given {
        for one in g.split(',') {
            out.push(
                crate::results::Slo::parse(one)
                    .map_err(|e| crate::error::usage(format!("{e:#}")))?,
            );
        }
    }
    Ok(Some(out))
}

/// The experiment of `dbtax run`: the file or preset (if any), then the flags over it, in
/// one merge; then what needs the merged whole (a replay's slice read, the name and seed);
/// validated once.
pub fn experiment(args: &RunArgs) -> Result<Experiment> {
    let base = match (&args.file, &args.preset) {
        (Some(p), _) => super::file::from_file(p)?,
        (None, Some(name)) => {
            let size = match (args.quick, args.full) {
                (true, _) => Size::Quick,
                (_, true) => Size::Full,
                _ => Size::Normal,
            };
            presets::layer(name, size)?
        }
        (None, None) => Layer::default(),
    };
    // A replay's clients: one per recorded session unless a flag or a file counts them.
    let threads_given = args.threads.is_some() || args.file.is_some();
    let mut exp = merge(vec![base, flags(args)?])?;
    exp.workload = workload_from(&args.workload, exp.workload)?;
    if exp.open_loop.is_some() && args.compare_target.is_some() {
        return Err(usage(
            "--compare-target runs closed loop: give --rate to each run and compare the \
             results with `dbtax compare`",
        ));
    }
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
    if let Some(slice) = &exp.workload.slice.0
        && !threads_given
    {
        exp.threads = vec![slice.sessions.clamp(1, MAX_REPLAY_CLIENTS)];
    }
    if exp.name.is_empty() {
        exp.name = default_name(&exp.variants);
    }
    // `--seed 0` is a seed; a file's 0 or none at all draws one.
    if exp.seed == 0 && args.seed.is_none() {
        exp.seed = new_seed();
    }
    exp.validate()?;
    Ok(exp)
}
