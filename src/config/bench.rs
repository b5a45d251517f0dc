//! `dbtax bench`'s flags → one validated measurement: the server, the workload, the trial,
//! the rate (a level, resolved against a calibration when it is a share of capacity) and the
//! agents. Bad input fails here, before any server is reached.

use super::{server_config, workload_from};
use crate::agent::{AgentOptions, parse_list};
use crate::cli::BenchArgs;
use crate::error::usage;
use crate::experiment::spec::{OpenLoop, RateLevel, agents_time_their_trials};
use crate::load::TrialPlan;
use crate::server::ServerConfig;
use crate::workload::Workload;
use anyhow::Result;

/// One measurement, validated.
#[derive(Debug)]
pub struct Measurement {
    /// Where.
    pub server: ServerConfig,
    /// What the clients run.
    pub workload: Workload,
    /// The trial, in closed loop (a rate is set once it is known).
    pub plan: TrialPlan,
    /// Open loop: the one level asked, and how events arrive.
    pub rate: Option<(RateLevel, OpenLoop)>,
    /// The agents that make the load (none: this process).
    pub agents: AgentOptions,
}

/// `dbtax bench`'s flags, validated.
pub fn bench(args: &BenchArgs) -> Result<Measurement> {
    let server = server_config(&args.target, None)?;
    let mut workload = workload_from(&args.workload, Workload::default())?;
    if args.threads == 0 {
        return Err(usage("--threads must be at least 1"));
    }
    if args.queries == Some(0) {
        return Err(usage("--queries must be at least 1"));
    }
    if args.queries.is_none() && args.duration.is_zero() {
        return Err(usage("--duration must be longer than 0"));
    }
    let open = super::merge::open_loop(
        args.rate
            .rate
            .as_deref()
            .map(crate::experiment::spec::parse_rates)
            .transpose()?,
        args.rate.arrival.as_deref(),
        args.rate.skip_late,
        None,
    )?;
    let mut open = open;
    super::load_replay(
        &mut workload,
        args.warmup + args.duration,
        !args.agents.agents.is_empty(),
        &mut open,
    )?;
    let rate = match open {
        Some(o) => match o.levels.as_slice() {
            [one] => Some((*one, o)),
            _ => {
                return Err(usage(
                    "bench runs one rate: give --rate R or --rate 50% (a list is for `dbtax run`)",
                ));
            }
        },
        None => None,
    };
    let agents = parse_list(&args.agents.agents)?;
    if args.agents.agent_bin.is_some() && agents.is_empty() {
        return Err(usage(super::run::AGENT_BIN_ALONE));
    }
    agents_time_their_trials(&agents, args.queries)?;
    Ok(Measurement {
        server,
        workload,
        plan: TrialPlan {
            warmup: args.warmup,
            queries: args.queries,
            client_threads: args.clients.client_threads,
            ..TrialPlan::timed(args.threads, args.duration)
        },
        rate,
        agents: AgentOptions::new(
            agents,
            args.agents.agent_bin.as_deref(),
            args.agents.agent_target.as_deref(),
        )?,
    })
}
