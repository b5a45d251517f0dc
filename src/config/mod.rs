//! Flags, experiment files and presets → validated, flag-free values: an `Experiment` (what to
//! measure: each way in makes a `Layer`, [`merge`] lays them over the defaults), `RunOptions`
//! (how to run it) and a `ServerConfig` (where). Every check that can fail on bad input
//! without asking a server happens here or in the one validation after the merge
//! (`Experiment::validate`), and fails with a usage error (exit 2). Nothing below this module
//! sees a clap type.

pub mod bench;
pub mod file;
pub mod merge;
pub mod presets;
pub mod run;

use crate::cli::{TargetArgs, WorkloadArgs};
use crate::error::usage;
use crate::server::{ManagedConfig, ServerConfig, TargetSpec, validate_identifier};
use crate::workload::{Workload, WorkloadKind, split_sql};
use anyhow::Result;

/// The server to use. The flag wins over `file_target` (an experiment file's), which wins
/// over managed:mariadb.
pub fn server_config(args: &TargetArgs, file_target: Option<&str>) -> Result<ServerConfig> {
    let text = args
        .target
        .as_deref()
        .or(file_target)
        .unwrap_or("managed:mariadb");
    let spec = TargetSpec::parse(text)?;
    for o in &args.server_opts {
        if !o
            .trim_start_matches("--")
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic())
        {
            return Err(usage(format!(
                "bad --server-opt '{o}': write NAME=VALUE or NAME"
            )));
        }
    }
    if !spec.is_managed()
        && (args.server_bin.is_some() || !args.server_opts.is_empty() || args.port.is_some())
    {
        return Err(usage(
            "--server-bin, --server-opt and --port apply to managed targets only",
        ));
    }
    if let Some(s) = &args.schema {
        validate_identifier("--schema", s)?;
    }
    let cpus = match (&args.cpus, args.no_pin) {
        (_, true) => crate::host::cpus::Choice::Off,
        (Some(c), false) => {
            crate::host::cpus::parse_choice(c).map_err(|e| usage(format!("{e:#}")))?
        }
        (None, false) => crate::host::cpus::Choice::Auto,
    };
    Ok(ServerConfig {
        spec,
        schema: args.schema.clone(),
        managed: ManagedConfig {
            server_bin: args.server_bin.clone(),
            server_opts: args.server_opts.clone(),
            port: args.port,
            cpus: None,
        },
        cpus,
    })
}

/// Apply workload flags over a base workload (from a file, or the default). Not validated
/// here: `load_replay`, which both commands call next, checks it before reading its log.
pub fn workload_from(args: &WorkloadArgs, mut base: Workload) -> Result<Workload> {
    if let Some(k) = args.workload {
        base.kind = k;
    }
    if let Some(t) = args.tables {
        base.tables = t;
    }
    if let Some(s) = args.table_size {
        base.table_size = s;
    }
    if let Some(s) = args.scale {
        base.scale = s;
    }
    if let Some(m) = args.protocol {
        base.protocol = m;
    }
    let mut queries = vec![];
    if let Some(q) = &args.query {
        queries.extend(split_sql(q));
    }
    if let Some(f) = &args.query_file {
        let text = std::fs::read_to_string(f)
            .map_err(|e| usage(format!("cannot read --query-file {}: {e}", f.display())))?;
        queries.extend(split_sql(&text));
    }
    if !queries.is_empty() {
        if args.workload.is_some_and(|k| k != WorkloadKind::Query) {
            return Err(usage("--query and --query-file go with --workload query"));
        }
        base.kind = WorkloadKind::Query;
        base.queries = queries;
    }
    if let Some(s) = &args.setup {
        base.setup = split_sql(s);
    }
    replay_from(args, &mut base)?;
    Ok(base)
}

/// The replay flags over a workload: `--log` makes it a replay; the others need one.
fn replay_from(args: &WorkloadArgs, base: &mut Workload) -> Result<()> {
    use dbtax_logs::replay_spec::{ReplayOptions, ReplaySpec};
    if let Some(log) = &args.log {
        if args.workload.is_some_and(|k| k != WorkloadKind::Replay) {
            return Err(usage("--log goes with --workload replay"));
        }
        base.kind = WorkloadKind::Replay;
        base.replay = Some(ReplaySpec::of(log));
    }
    let options = ReplayOptions {
        log_format: args.log_format.as_deref(),
        line_prefix: args.log_line_prefix.as_deref(),
        sessions: args.sessions,
        from: args.from.as_deref(),
        to: args.to.as_deref(),
        pace: args.pace.as_deref(),
        writes: args.replay_writes,
        i_understand_writes: args.i_understand_writes,
        max_statements: args.max_statements,
        functions: &args.replay_functions,
        user: args.replay_user.as_deref(),
    };
    match base.replay.as_mut() {
        Some(spec) => spec.apply(&options),
        None if options.any() => Err(usage(
            "--log-format, --log-line-prefix, --sessions, --from, --to, --pace, --replay-writes, \
             --replay-user, --replay-functions and --max-statements go with a replay: give \
             --log FILE",
        )),
        None => Ok(()),
    }
}

/// Check the workload, then read a replay's slice before anything changes (a log that
/// cannot be read is bad input);
/// a recorded pace runs as rate mode at the slice's recorded rate. `longest`: the longest a
/// trial's load runs (warm-up and window); `agents`: whether agents make the load.
pub fn load_replay(
    workload: &mut Workload,
    longest: std::time::Duration,
    agents: bool,
    open: &mut Option<crate::experiment::spec::OpenLoop>,
) -> Result<()> {
    use dbtax_logs::replay_spec::Pace;
    // A workload that contradicts itself is said as such, before its log is read.
    workload.validate()?;
    let Some(spec) = workload.replay.clone() else {
        return Ok(());
    };
    if agents {
        return Err(usage(
            "a replay runs its clients on this machine: --agents and --workload replay do not \
             go together",
        ));
    }
    let speed = match spec.pace {
        Pace::Recorded(x) => Some(x),
        Pace::Asap => None,
    };
    if speed.is_some() && open.is_some() {
        return Err(usage(
            "--pace recorded sets the rate (each statement at its recorded time): leave out \
             --rate, or use --pace asap with it",
        ));
    }
    // Margin: the warm-up may settle a little past its length.
    let span = speed.map(|x| (longest + std::time::Duration::from_secs(2)).mul_f64(x));
    workload.load_replay(span)?;
    if let (Some(x), Some(slice)) = (speed, &workload.slice.0) {
        if slice.stats.recorded_rate <= 0.0 {
            return Err(usage(
                "--pace recorded needs statements at more than one recorded time: this slice \
                 has them all at one instant (use --pace asap)",
            ));
        }
        *open = Some(crate::experiment::spec::OpenLoop {
            levels: vec![crate::experiment::spec::RateLevel::PerSecond(
                slice.stats.recorded_rate * x,
            )],
            arrival: crate::load::Arrival::Uniform,
            skip_late: None,
        });
    }
    Ok(())
}
